//! A job order that copies the **Tiresias simulator's** behaviour, quirks included, so gantry
//! can reproduce its per-job results (`SymbioticLab/Tiresias` @ 959f9b0, `simulator/run_sim.py`;
//! the peer anchor in `../shared/anchors/tiresias/`, whose `FORMAT.md` lists the quirks).
//! This is a cross-check tool, not a policy to deploy: use [`Las`](super::Las) and
//! [`Srtf`](super::Srtf) for gantry's own semantics.
//!
//! What it copies, for `dlas` / `dlas-gpu` ([`CompatPolicy::Dlas`]):
//! - three queues split at **3,250 and 7,200** seconds (`dlas`) or GPU·seconds (`dlas-gpu`);
//!   the simulator's third limit, 18,000, is never read;
//! - service is the job's executed time in **whole seconds** (× GPUs for `dlas-gpu`), checked
//!   only at events, and a job drops **at most one queue per event**, to the tail;
//! - its timer: the next event is at `(limit − executed_s) // gpus + now` for `dlas-gpu` — the
//!   executed time in *seconds* and Python 2 floor division, so multi-GPU jobs are demoted
//!   late — and `limit − executed_s + now` for `dlas` ([`JobOrder::next_review`]);
//! - list order: arrivals and demoted jobs go to the tail of their queue; after every pass,
//!   each queue's pending jobs move behind its running ones, both keeping their relative
//!   order ([`JobOrder::after_pass`]).
//!
//! For `shortest` / `shortest-gpu` ([`CompatPolicy::Shortest`], ORACLE: reads the true
//! duration): one list, stably sorted by remaining time (× GPUs) at every pass, so equal
//! remaining keeps the previous list order; arrivals append to the tail.
//!
//! Both preempt for free and skip a job that does not fit (`count` placement: only the number
//! of free GPUs matters). To match the simulator the caller must also batch every event of the
//! same second into one pass ([`Scheduler::handle_deferred`](crate::Scheduler::handle_deferred)),
//! keep times in whole seconds, and run jobs at ideal speed. Not copied: the PromoteKnob
//! (`dlas-gpu-K`) and the Gittins variants.
//!
//! Fields: [`Job::order_queue`] holds the queue (bits 0–3), the job's band in the list (bits
//! 4–5: ran at the last pass, waited at the last pass, appended since) and a "seen" bit (6);
//! [`Job::order_mark`] holds a sequence number (its list position), not a time.

use super::{HeadOfLine, JobOrder, LengthMetric, OrderHooks, Preemption, PriorityKey, key_ms};
use crate::job::{Job, JobState};
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// The Tiresias simulator's queue limits in use (`queue_limit[0..2]`), in seconds or GPU·s.
pub const TIRESIAS_LIMITS_S: [u64; 2] = [3_250, 7_200];

const QUEUE_BITS: u8 = 0x0F;
const BAND_SHIFT: u8 = 4;
const BAND_BITS: u8 = 0x30;
const SEEN: u8 = 0x40;
/// Running at the end of the last pass: ahead in its queue.
const BAND_RAN: u8 = 0;
/// Pending at the end of the last pass: behind the running ones.
const BAND_WAITED: u8 = 1;
/// Appended (arrived or demoted) since the last pass: at the tail.
const BAND_APPENDED: u8 = 2;

/// Which Tiresias policy to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompatPolicy {
    /// Discretized LAS: `dlas` ([`LengthMetric::Time`]) or `dlas-gpu`
    /// ([`LengthMetric::GpuTime`]).
    Dlas(LengthMetric),
    /// ORACLE shortest remaining time: `shortest` ([`LengthMetric::Time`]) or
    /// `shortest-gpu` ([`LengthMetric::GpuTime`]).
    Shortest(LengthMetric),
}

/// The Tiresias-simulator compatibility order. Key O(1); refresh, review and after-pass O(1)
/// per job; no allocation.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct TiresiasCompat {
    policy: CompatPolicy,
    next_seq: u64,
    instant: TimeMs,
    instant_seq: u64,
}

impl TiresiasCompat {
    /// The order copying `policy`.
    pub const fn new(policy: CompatPolicy) -> Self {
        Self {
            policy,
            next_seq: 0,
            instant: TimeMs(0),
            instant_seq: 0,
        }
    }

    /// The policy copied.
    pub const fn policy(&self) -> CompatPolicy {
        self.policy
    }

    fn stamp(&mut self) -> TimeMs {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        TimeMs(seq)
    }

    /// The job's queue (0 = top).
    pub fn queue_of(job: &Job) -> u8 {
        job.order_queue & QUEUE_BITS
    }

    fn band_of(job: &Job) -> u8 {
        (job.order_queue & BAND_BITS) >> BAND_SHIFT
    }

    fn with_band(job: &mut Job, band: u8) {
        job.order_queue = (job.order_queue & !BAND_BITS) | (band << BAND_SHIFT);
    }

    /// Executed time by `now` in whole seconds, as the simulator counts it.
    fn executed_s(job: &Job, now: TimeMs) -> u64 {
        job.executed_at(now).0 / 1000
    }

    /// Demotes a running job by one queue if its service reached its queue's limit, unless it
    /// was already demoted at this instant (one level per event). O(1).
    fn demote(&mut self, job: &mut Job, metric: LengthMetric, now: TimeMs) {
        let queue = Self::queue_of(job);
        let Some(&limit) = TIRESIAS_LIMITS_S.get(usize::from(queue)) else {
            return;
        };
        if job.state() != JobState::Running
            || (Self::band_of(job) == BAND_APPENDED && job.order_mark.0 >= self.instant_seq)
        {
            return;
        }
        let executed = Self::executed_s(job, now);
        let service = match metric {
            LengthMetric::Time => executed,
            LengthMetric::GpuTime => executed.saturating_mul(u64::from(job.gpus())),
        };
        if service >= limit {
            job.order_queue = SEEN | (BAND_APPENDED << BAND_SHIFT) | (queue + 1);
            job.order_mark = self.stamp();
        }
    }

    /// The simulator's `next_job_jump` for one running job, in seconds (may be ≤ now).
    fn jump_s(job: &Job, metric: LengthMetric, now: TimeMs) -> Option<i64> {
        let limit =
            i64::try_from(*TIRESIAS_LIMITS_S.get(usize::from(Self::queue_of(job)))?).ok()?;
        let executed = i64::try_from(Self::executed_s(job, now)).ok()?;
        let now_s = i64::try_from(now.0 / 1000).ok()?;
        let left = limit - executed;
        Some(match metric {
            LengthMetric::Time => left + now_s,
            // int(math.ceil((limit - executed)/num_gpu) + now) with Python 2 integer `/`:
            // floor division first, so the ceil does nothing.
            LengthMetric::GpuTime => left.div_euclid(i64::from(job.gpus().max(1))) + now_s,
        })
    }
}

impl JobOrder for TiresiasCompat {
    /// The Tiresias policy name with a `tiresias-` prefix.
    fn name(&self) -> &'static str {
        match self.policy {
            CompatPolicy::Dlas(LengthMetric::Time) => "tiresias-dlas",
            CompatPolicy::Dlas(LengthMetric::GpuTime) => "tiresias-dlas-gpu",
            CompatPolicy::Shortest(LengthMetric::Time) => "tiresias-shortest",
            CompatPolicy::Shortest(LengthMetric::GpuTime) => "tiresias-shortest-gpu",
        }
    }

    fn head_of_line(&self) -> HeadOfLine {
        HeadOfLine::Skip
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// Keys change only at events and at [`next_review`](JobOrder::next_review) times.
    fn time_driven(&self) -> bool {
        false
    }

    /// Everything but `reject`.
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            reject: false,
            ..OrderHooks::ALL
        }
    }

    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        if now != self.instant {
            self.instant = now;
            self.instant_seq = self.next_seq;
        }
        if job.order_queue & SEEN == 0 {
            // Refresh runs in submission order, so simultaneous arrivals keep file order.
            job.order_queue = SEEN | (BAND_APPENDED << BAND_SHIFT);
            job.order_mark = self.stamp();
            return;
        }
        if let CompatPolicy::Dlas(metric) = self.policy {
            self.demote(job, metric, now);
        }
    }

    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        match self.policy {
            CompatPolicy::Dlas(_) => PriorityKey {
                class: u32::from(Self::queue_of(job)),
                primary: i64::from(Self::band_of(job)),
                secondary: key_ms(job.order_mark.0),
            },
            CompatPolicy::Shortest(metric) => match job.declared_remaining_at(now) {
                Some(left) => PriorityKey {
                    class: 0,
                    primary: key_ms(match metric {
                        LengthMetric::Time => left.0,
                        LengthMetric::GpuTime => left.0.saturating_mul(u64::from(job.gpus())),
                    }),
                    secondary: key_ms(job.order_mark.0),
                },
                None => PriorityKey {
                    class: 1,
                    primary: 0,
                    secondary: key_ms(job.order_mark.0),
                },
            },
        }
    }

    /// Stamps the job's new list position: for `dlas*`, running jobs ahead of pending ones
    /// in each queue; for `shortest*`, the sorted order itself.
    fn after_pass(&mut self, job: &mut Job, _now: TimeMs) {
        let band = match self.policy {
            CompatPolicy::Dlas(_) if job.state() != JobState::Running => BAND_WAITED,
            _ => BAND_RAN,
        };
        Self::with_band(job, band);
        job.order_mark = self.stamp();
    }

    /// The simulator's demotion timer for a running job of a `dlas*` policy.
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let CompatPolicy::Dlas(metric) = self.policy else {
            return None;
        };
        if job.state() != JobState::Running {
            return None;
        }
        let jump_s = u64::try_from(Self::jump_s(job, metric, now)?).ok()?;
        Some(TimeMs(jump_s.saturating_mul(1000)))
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
    use crate::time::DurationMs;
    use crate::topology::{LinkWeights, Topology};

    type Sched = Scheduler<TiresiasCompat, FirstFit, 16, 64, 8>;
    type Out = heapless::Vec<Decision<8>, 32>;

    /// A tiny driver that batches same-second events, as the Tiresias simulator does, and
    /// returns each job's (first start, end) in seconds.
    struct Driver {
        s: Sched,
        /// (id, gpus, submit s, duration s)
        jobs: heapless::Vec<(u32, u16, u64, u64), 8>,
    }

    impl Driver {
        fn new(gpus: u16, policy: CompatPolicy, jobs: &[(u32, u16, u64, u64)]) -> Self {
            let topology = Topology::uniform(1, 1, gpus, LinkWeights::PROXIMITY_DRL).unwrap();
            Self {
                s: Scheduler::new(topology, TiresiasCompat::new(policy), FirstFit),
                jobs: heapless::Vec::from_slice(jobs).unwrap(),
            }
        }

        fn run(mut self) -> [(u64, u64); 3] {
            let mut result = [(u64::MAX, u64::MAX); 3];
            let mut out = Out::new();
            for _ in 0..100 {
                // Next instant: an arrival, a finish or the review timer.
                let now_ms = |s: &Sched| s.now().0;
                let mut next = u64::MAX;
                for &(id, _, submit, duration) in &self.jobs {
                    match self.s.job(JobId(id)) {
                        None if result[id as usize].1 == u64::MAX
                            && submit * 1000 >= now_ms(&self.s) =>
                        {
                            next = next.min(submit * 1000)
                        }
                        Some(j) if j.state() == JobState::Running => {
                            next = next.min(
                                now_ms(&self.s) + duration * 1000 - j.executed_at(self.s.now()).0,
                            )
                        }
                        _ => {}
                    }
                }
                if let Some(TimeMs(t)) = self.s.next_review() {
                    next = next.min(t);
                }
                if next == u64::MAX {
                    break;
                }
                let now = TimeMs(next);
                // Move the clock first: `executed_at(now)` then shows the finishes.
                self.s.handle_deferred(now, Event::Tick, &mut out).unwrap();
                for &(id, gpus, submit, duration) in &self.jobs {
                    match self.s.job(JobId(id)) {
                        Some(j)
                            if j.state() == JobState::Running
                                && j.executed_at(now).0 >= duration * 1000 =>
                        {
                            self.s
                                .handle_deferred(now, Event::Finish(JobId(id)), &mut out)
                                .unwrap();
                            result[id as usize].1 = next / 1000;
                        }
                        None if submit * 1000 == next && result[id as usize].1 == u64::MAX => {
                            let mut spec = JobSpec::new(JobId(id), gpus);
                            spec.declared_length = Some(DurationMs(duration * 1000));
                            self.s
                                .handle_deferred(now, Event::Submit(spec), &mut out)
                                .unwrap();
                        }
                        _ => {}
                    }
                }
                out.clear();
                self.s.handle(now, Event::Tick, &mut out).unwrap();
                for d in &out {
                    if let Decision::Start { job, .. } = d {
                        let r = &mut result[job.0 as usize];
                        r.0 = r.0.min(next / 1000);
                    }
                }
                self.s.check_invariants().unwrap();
            }
            result
        }
    }

    const TINY_A: [(u32, u16, u64, u64); 2] = [(0, 8, 0, 2000), (1, 8, 100, 300)];
    const TINY_B: [(u32, u16, u64, u64); 3] = [(0, 2, 0, 100), (1, 4, 10, 50), (2, 1, 20, 30)];
    const TINY_C: [(u32, u16, u64, u64); 2] = [(0, 1, 0, 5000), (1, 1, 1000, 5000)];

    /// The anchor's hand-made traces (results.md, "Tiny hand-made traces"): (first start,
    /// end) per job, exactly as the Tiresias simulator printed them.
    #[test]
    fn tiny_traces_match_the_tiresias_simulator() {
        use CompatPolicy::{Dlas, Shortest};
        use LengthMetric::{GpuTime, Time};
        type Case = (
            &'static str,
            u16,
            CompatPolicy,
            &'static [(u32, u16, u64, u64)],
            [(u64, u64); 3],
        );
        let none = (u64::MAX, u64::MAX);
        let cases: [Case; 12] = [
            (
                "a dlas",
                8,
                Dlas(Time),
                &TINY_A,
                [(0, 2000), (2000, 2300), none],
            ),
            // Late demotion: (3250 − 100) // 8 + 100 = 493, not 407.
            (
                "a dlas-gpu",
                8,
                Dlas(GpuTime),
                &TINY_A,
                [(0, 2300), (493, 793), none],
            ),
            (
                "a shortest",
                8,
                Shortest(Time),
                &TINY_A,
                [(0, 2300), (100, 400), none],
            ),
            (
                "a shortest-gpu",
                8,
                Shortest(GpuTime),
                &TINY_A,
                [(0, 2300), (100, 400), none],
            ),
            (
                "b dlas",
                4,
                Dlas(Time),
                &TINY_B,
                [(0, 100), (100, 150), (20, 50)],
            ),
            (
                "b dlas-gpu",
                4,
                Dlas(GpuTime),
                &TINY_B,
                [(0, 100), (100, 150), (20, 50)],
            ),
            (
                "b shortest",
                4,
                Shortest(Time),
                &TINY_B,
                [(0, 150), (10, 90), (20, 50)],
            ),
            (
                "b shortest-gpu",
                4,
                Shortest(GpuTime),
                &TINY_B,
                [(0, 100), (100, 150), (20, 50)],
            ),
            // J1 is demoted at 6,500 and queued behind J0 in Q1, so J0 resumes.
            (
                "c dlas",
                1,
                Dlas(Time),
                &TINY_C,
                [(0, 8250), (3250, 10000), none],
            ),
            (
                "c dlas-gpu",
                1,
                Dlas(GpuTime),
                &TINY_C,
                [(0, 8250), (3250, 10000), none],
            ),
            (
                "c shortest",
                1,
                Shortest(Time),
                &TINY_C,
                [(0, 5000), (5000, 10000), none],
            ),
            (
                "c shortest-gpu",
                1,
                Shortest(GpuTime),
                &TINY_C,
                [(0, 5000), (5000, 10000), none],
            ),
        ];
        for (name, gpus, policy, jobs, want) in cases {
            assert_eq!(Driver::new(gpus, policy, jobs).run(), want, "{name}");
        }
    }

    #[test]
    fn gpu_timer_floors_executed_seconds_over_gpus() {
        let order = TiresiasCompat::new(CompatPolicy::Dlas(LengthMetric::GpuTime));
        let mut job = Job::submitted(JobSpec::new(JobId(0), 8), TimeMs(0));
        job.set_state(JobState::Running);
        // At t = 0: 3250 // 8 = 406 → 406 s, when 8 × 406 = 3,248 GPU·s < 3,250: late.
        assert_eq!(order.next_review(&job, TimeMs(0)), Some(TimeMs(406_000)));
        job.set_executed(DurationMs(100_000));
        assert_eq!(
            order.next_review(&job, TimeMs(100_000)),
            Some(TimeMs(493_000))
        );
        job.set_state(JobState::Preempted);
        assert_eq!(order.next_review(&job, TimeMs(100_000)), None);
        // The last queue has no timer.
        job.set_state(JobState::Running);
        job.order_queue = SEEN | 2;
        assert_eq!(order.next_review(&job, TimeMs(100_000)), None);
    }

    #[test]
    fn one_level_per_event_and_running_before_pending() {
        let mut order = TiresiasCompat::new(CompatPolicy::Dlas(LengthMetric::Time));
        let mut job = Job::submitted(JobSpec::new(JobId(0), 1), TimeMs(0));
        order.refresh(&mut job, TimeMs(0));
        job.set_state(JobState::Running);
        order.after_pass(&mut job, TimeMs(0));
        // 10,000 s of service passes both limits; the job drops one queue per event.
        job.set_executed(DurationMs(10_000_000));
        order.refresh(&mut job, TimeMs(10_000_000));
        order.refresh(&mut job, TimeMs(10_000_000));
        assert_eq!(TiresiasCompat::queue_of(&job), 1);
        order.after_pass(&mut job, TimeMs(10_000_000));
        order.refresh(&mut job, TimeMs(10_001_000));
        assert_eq!(TiresiasCompat::queue_of(&job), 2);
        // A running job sorts ahead of a pending one stamped earlier in the same queue.
        let mut pending = Job::submitted(JobSpec::new(JobId(1), 1), TimeMs(0));
        order.refresh(&mut pending, TimeMs(10_001_000));
        pending.order_queue = (pending.order_queue & !QUEUE_BITS) | 2;
        order.after_pass(&mut pending, TimeMs(10_001_000));
        order.after_pass(&mut job, TimeMs(10_001_000));
        assert!(order.key(&job, TimeMs(0)) < order.key(&pending, TimeMs(0)));
        assert_eq!(order.name(), "tiresias-dlas");
    }
}
