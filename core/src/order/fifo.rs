//! First in, first out.

use super::{HeadOfLine, JobOrder, OrderHooks, PriorityKey};
use crate::job::Job;
use crate::time::TimeMs;

/// First in, first out by submission time, ties by id; blocks at the head when the first job
/// does not fit, never preempts (Tiresias's `fifo`). O(1) per key.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo;

impl JobOrder for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn head_of_line(&self) -> HeadOfLine {
        HeadOfLine::Block
    }

    fn time_driven(&self) -> bool {
        false
    }

    /// The key reads only the spec and submission time; no other hook is used.
    fn hooks(&self) -> OrderHooks {
        OrderHooks::FIXED_KEY_ONLY
    }

    fn key(&self, job: &Job, _now: TimeMs) -> PriorityKey {
        PriorityKey {
            class: 0,
            primary: job.submitted_at.0 as i64,
            secondary: 0,
        }
    }
}
