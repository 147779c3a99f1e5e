//! One error type for every call of the core, so a caller can use `?` across building a
//! topology, handling events, restoring a snapshot and reading frames. It sits above every
//! module whose error it wraps.

use crate::error::SchedError;

/// Any error of the core, so a caller can use `?` across its calls (building a topology,
/// handling events, restoring a snapshot, reading frames) in one function returning
/// `Result<_, gantry_core::Error>`. Each variant wraps the specific error unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// [`Scheduler::handle`](crate::Scheduler::handle) refused an event.
    Sched(SchedError),
    /// A topology could not be built.
    Topology(crate::topology::TopologyError),
    /// A snapshot was not written or not restored.
    #[cfg(feature = "snapshot")]
    Snapshot(crate::snapshot::SnapshotError),
    /// A frame could not be decoded.
    Frame(crate::wire::FrameError),
}

impl From<SchedError> for Error {
    fn from(e: SchedError) -> Self {
        Error::Sched(e)
    }
}

impl From<crate::topology::TopologyError> for Error {
    fn from(e: crate::topology::TopologyError) -> Self {
        Error::Topology(e)
    }
}

#[cfg(feature = "snapshot")]
impl From<crate::snapshot::SnapshotError> for Error {
    fn from(e: crate::snapshot::SnapshotError) -> Self {
        Error::Snapshot(e)
    }
}

impl From<crate::wire::FrameError> for Error {
    fn from(e: crate::wire::FrameError) -> Self {
        Error::Frame(e)
    }
}

/// The wrapped error's own message (transparent: it is not repeated as a `source`).
impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Sched(e) => e.fmt(f),
            Error::Topology(e) => e.fmt(f),
            #[cfg(feature = "snapshot")]
            Error::Snapshot(e) => e.fmt(f),
            Error::Frame(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for Error {}
