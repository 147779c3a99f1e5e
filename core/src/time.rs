//! Time as integer milliseconds. The core never reads a clock: the caller passes `now` into
//! every call, so a replay on a workstation sees exactly the times the firmware saw.
//! All arithmetic saturates: an overflow can never wrap a deadline into the past.

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since an epoch the caller chooses (trace start, boot).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimeMs(pub u64);

/// A span of time in milliseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DurationMs(pub u64);

impl TimeMs {
    /// The latest representable time; used as "never" and sorts last.
    pub const MAX: TimeMs = TimeMs(u64::MAX);

    /// `self + d`, saturating at [`TimeMs::MAX`].
    pub const fn saturating_add(self, d: DurationMs) -> TimeMs {
        TimeMs(self.0.saturating_add(d.0))
    }

    /// Time elapsed from `earlier` to `self`; zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: TimeMs) -> DurationMs {
        DurationMs(self.0.saturating_sub(earlier.0))
    }
}

impl DurationMs {
    /// Zero length.
    pub const ZERO: DurationMs = DurationMs(0);

    /// Builds a duration from whole seconds, saturating.
    pub const fn from_secs(s: u64) -> DurationMs {
        DurationMs(s.saturating_mul(1000))
    }

    /// `self + other`, saturating.
    pub const fn saturating_add(self, other: DurationMs) -> DurationMs {
        DurationMs(self.0.saturating_add(other.0))
    }

    /// `self - other`, floored at zero.
    pub const fn saturating_sub(self, other: DurationMs) -> DurationMs {
        DurationMs(self.0.saturating_sub(other.0))
    }

    /// `self * k`, saturating.
    pub const fn saturating_mul(self, k: u64) -> DurationMs {
        DurationMs(self.0.saturating_mul(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(TimeMs::MAX.saturating_add(DurationMs(5)), TimeMs::MAX);
        assert_eq!(TimeMs(3).saturating_since(TimeMs(10)), DurationMs::ZERO);
        assert_eq!(DurationMs(u64::MAX).saturating_mul(2), DurationMs(u64::MAX));
        assert_eq!(DurationMs::from_secs(u64::MAX), DurationMs(u64::MAX));
        assert_eq!(
            DurationMs(2).saturating_sub(DurationMs(9)),
            DurationMs::ZERO
        );
    }
}
