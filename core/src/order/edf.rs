//! Earliest deadline first.

use super::{JobOrder, OrderHooks, Preemption, PriorityKey, key_ms};
use crate::job::Job;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// Earliest deadline first (Liu & Layland, 1973), **preemptive**: a job with an earlier
/// deadline preempts a running job with a later one (the preempted job keeps its service).
/// Jobs without a deadline come after every deadline job, by submission time; ties by id.
///
/// Preemptive because that is the form whose optimality EDF is known for (on one machine it
/// meets every deadline whenever any schedule does). It is deliberately *pure* EDF: a job
/// whose deadline already passed keeps its early deadline and keeps its priority, so under
/// overload EDF shows its known domino effect — the baseline TIAS is measured against.
/// O(1) per key.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Edf;

impl JobOrder for Edf {
    fn name(&self) -> &'static str {
        "edf"
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// The key reads only the spec and submission time; no other hook is used.
    fn hooks(&self) -> OrderHooks {
        OrderHooks::FIXED_KEY_ONLY
    }

    fn key(&self, job: &Job, _now: TimeMs) -> PriorityKey {
        match job.deadline() {
            Some(deadline) => PriorityKey {
                class: 0,
                primary: key_ms(deadline.0),
                secondary: 0,
            },
            None => PriorityKey {
                class: 1,
                primary: key_ms(job.submitted_at().0),
                secondary: 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Decision, Event};
    use crate::ids::{GpuId, JobId};
    use crate::job::JobSpec;
    use crate::placement::FirstFit;
    use crate::scheduler::Scheduler;
    use crate::topology::{LinkWeights, Topology};

    fn spec(id: u32, gpus: u16, deadline_ms: Option<u64>) -> JobSpec {
        let mut s = JobSpec::new(JobId(id), gpus);
        s.deadline = deadline_ms.map(TimeMs);
        s
    }

    #[test]
    fn edf_breaks_deadline_ties_by_id_and_puts_no_deadline_last() {
        // 2 GPUs, four 1-GPU jobs submitted at t=0 in id order 3, 2, 1, 0: jobs 1 and 2
        // share the earliest deadline → both run (job 3, no deadline, is preempted); job 0
        // (later deadline) waits until job 1 finishes.
        let topo = Topology::uniform(1, 1, 2, LinkWeights::PROXIMITY_DRL).unwrap();
        let mut s: Scheduler<Edf, FirstFit, 16, 64, 8> = Scheduler::new(topo, Edf, FirstFit);
        let mut out: heapless::Vec<Decision<8>, 16> = heapless::Vec::new();
        for sp in [
            spec(3, 1, None),
            spec(2, 1, Some(500)),
            spec(1, 1, Some(500)),
        ] {
            s.handle(TimeMs(0), Event::Submit(sp), &mut out).unwrap();
        }
        s.handle(TimeMs(0), Event::Submit(spec(0, 1, Some(900))), &mut out)
            .unwrap();
        let running = [s.gpu_owner(GpuId(0)), s.gpu_owner(GpuId(1))];
        assert!(running.contains(&Some(JobId(1))) && running.contains(&Some(JobId(2))));
        out.clear();
        s.handle(TimeMs(10), Event::Finish(JobId(1)), &mut out)
            .unwrap();
        assert!(out.contains(&Decision::Start {
            job: JobId(0),
            gpus: s.placement_of(JobId(0))
        }));
        s.check_invariants().unwrap();
        // Pure key check of the id tie-break: equal keys, the scheduler appends the id.
        let a = Job::submitted(spec(1, 1, Some(500)), TimeMs(0));
        let b = Job::submitted(spec(2, 1, Some(500)), TimeMs(0));
        assert_eq!(Edf.key(&a, TimeMs(0)), Edf.key(&b, TimeMs(0)));
    }
}
