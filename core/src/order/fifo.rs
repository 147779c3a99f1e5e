//! First in, first out.

use super::{HeadOfLine, JobOrder, OrderHooks, PriorityKey, key_ms};
use crate::job::Job;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// First in, first out by submission time, ties by id; blocks at the head when the first job
/// does not fit, never preempts (Tiresias's `fifo`). O(1) per key.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
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
            primary: key_ms(job.submitted_at().0),
            secondary: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Decision, Event};
    use crate::ids::JobId;
    use crate::job::JobSpec;
    use crate::placement::FirstFit;
    use crate::scheduler::Scheduler;
    use crate::topology::{LinkWeights, Topology};

    /// Issue 16, defect 6: FIFO's key was `submitted_at as i64`, so a job submitted at or
    /// after 2^63 ms wrapped negative and started before older jobs (fails on the main of
    /// that time). Keys now map `u64` times onto `i64` in order.
    #[test]
    fn order_holds_across_two_to_the_63_ms() {
        let t = 1u64 << 63;
        let topo = Topology::uniform(1, 1, 1, LinkWeights::PROXIMITY_DRL).unwrap();
        let mut s: Scheduler<Fifo, FirstFit, 1, 8, 1> = Scheduler::new(topo, Fifo, FirstFit);
        let mut out: heapless::Vec<Decision<1>, 8> = heapless::Vec::new();
        for (id, at) in [(0, t - 100), (1, t - 10), (2, t + 5)] {
            s.handle(
                TimeMs(at),
                Event::Submit(JobSpec::new(JobId(id), 1)),
                &mut out,
            )
            .unwrap();
        }
        out.clear();
        s.handle(TimeMs(t + 10), Event::Finish(JobId(0)), &mut out)
            .unwrap();
        assert_eq!(s.gpu_owner(crate::ids::GpuId(0)), Some(JobId(1)));
        let keys = [0, t - 1, t, t + 1, u64::MAX].map(|ms| {
            let job = Job::submitted(JobSpec::new(JobId(9), 1), TimeMs(ms));
            Fifo.key(&job, TimeMs(ms)).primary
        });
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }
}
