//! Tiresias's discretized two-dimensional least-attained-service order (2D-LAS).
//!
//! Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019, §3.
//! Attained service = GPUs × executed time ([`Job::attained_gpu_ms`]). K queues split by
//! K−1 thresholds; new jobs enter the top queue (0); a job drops to the queue its service
//! has reached once its service is **≥** a threshold (exactly at the threshold it is
//! demoted); FIFO inside a queue by queue-entry time ([`Job::order_mark`]), then id.
//! Starvation guard: a queued job in a lower queue returns to the tail of queue 0 when its
//! wait `now − queued_since` ≥ PromoteKnob × its executed time since its last promotion;
//! its queue service restarts from 0 there (Tiresias resets `executed_time` on promotion;
//! we keep `attained_gpu_ms` and move [`Job::order_base_gpu_ms`] instead).
//!
//! Differences from the Tiresias simulator (see `../shared/anchors/tiresias/FORMAT.md`):
//! a job may drop several queues in one event (Tiresias: at most one per event), and its
//! queue-entry time is the exact moment it crossed the threshold (computed from its service
//! rate, also for a job preempted since, e.g. by a GPU failure), not the event time, so the
//! result does not depend on how often the caller ticks.

use super::{JobOrder, KeyChanges, LengthMetric, OrderHooks, Preemption, PriorityKey, key_ms};
use crate::job::{Job, JobState};
use crate::time::{DurationMs, TimeMs};
use serde::{Deserialize, Serialize};

/// Most thresholds a [`LasConfig`] holds (so at most 9 queues).
pub const MAX_LAS_THRESHOLDS: usize = 8;

/// Tiresias's first 2D-LAS threshold, 3,250 GPU·s: the service a job may attain before it
/// leaves queue 0.
pub const TIRESIAS_FIRST_THRESHOLD_GPU_MS: u64 = 3_250_000;

/// Bits of [`Job::order_queue`] that hold the queue index; orders built on LAS (TIAS) may use
/// the bits above for their own flags.
pub(crate) const QUEUE_MASK: u8 = 0x0F;

/// Why a [`LasConfig`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LasConfigError {
    /// More than [`MAX_LAS_THRESHOLDS`] thresholds.
    TooManyThresholds,
    /// Thresholds must be strictly increasing and above zero.
    NotIncreasing,
}

/// 2D-LAS queues and starvation guard. Fixed capacity, `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LasConfig {
    thresholds_gpu_ms: [u64; MAX_LAS_THRESHOLDS],
    threshold_count: u8,
    /// PromoteKnob in permille (Tiresias's `dlas-gpu-K`: 500 = 0.5, 1000 = 1, …); 0 = off.
    pub promote_knob_permille: u32,
    /// Service measured as GPU·time (2D-LAS, default) or run time only (1D LAS,
    /// Tiresias's `dlas`).
    pub service: LengthMetric,
}

impl LasConfig {
    /// Queues split at `thresholds_gpu_s` GPU·seconds (strictly increasing, at most
    /// [`MAX_LAS_THRESHOLDS`]); no starvation guard; 2D service.
    pub fn from_gpu_secs(thresholds_gpu_s: &[u64]) -> Result<Self, LasConfigError> {
        if thresholds_gpu_s.len() > MAX_LAS_THRESHOLDS {
            return Err(LasConfigError::TooManyThresholds);
        }
        let mut thresholds_gpu_ms = [0u64; MAX_LAS_THRESHOLDS];
        let mut previous = 0u64;
        for (slot, &s) in thresholds_gpu_ms.iter_mut().zip(thresholds_gpu_s) {
            let ms = s.saturating_mul(1000);
            if ms <= previous {
                return Err(LasConfigError::NotIncreasing);
            }
            *slot = ms;
            previous = ms;
        }
        Ok(Self {
            thresholds_gpu_ms,
            threshold_count: thresholds_gpu_s.len() as u8,
            promote_knob_permille: 0,
            service: LengthMetric::GpuTime,
        })
    }

    /// What the Tiresias simulator actually runs: thresholds [3,250, 7,200] GPU·s, 3 queues
    /// (its third limit, 18,000, is never read; see the anchor's FORMAT.md).
    pub fn tiresias() -> Self {
        Self {
            thresholds_gpu_ms: [TIRESIAS_FIRST_THRESHOLD_GPU_MS, 7_200_000, 0, 0, 0, 0, 0, 0],
            threshold_count: 2,
            promote_knob_permille: 0,
            service: LengthMetric::GpuTime,
        }
    }

    /// Tiresias's thresholds (3,250, 7,200, 18,000 GPU·s) continued ×4 to 72,000, 288,000 and
    /// 1,152,000 GPU·s: 7 queues. Under the 4-queue default every job past 18,000 GPU·s
    /// (5 GPU-hours) shares the last queue in FIFO order, so on heavy-tailed traces (Philly:
    /// jobs up to 10^4 GPU-hours) the longest jobs are served first-come-first-served; the
    /// extra queues keep ordering them by attained service. TIAS's non-deadline default.
    pub const fn tiresias_with_long_tail() -> Self {
        Self {
            thresholds_gpu_ms: [
                TIRESIAS_FIRST_THRESHOLD_GPU_MS,
                7_200_000,
                18_000_000,
                72_000_000,
                288_000_000,
                1_152_000_000,
                0,
                0,
            ],
            threshold_count: 6,
            promote_knob_permille: 0,
            service: LengthMetric::GpuTime,
        }
    }

    /// The thresholds, in GPU·ms (or ms for 1D service).
    pub fn thresholds_gpu_ms(&self) -> &[u64] {
        let n = usize::from(self.threshold_count).min(MAX_LAS_THRESHOLDS);
        &self.thresholds_gpu_ms[..n]
    }

    /// Number of queues (thresholds + 1).
    pub fn queue_count(&self) -> u8 {
        self.threshold_count + 1
    }

    /// The queue a job with `service` belongs in: how many thresholds are ≤ `service`
    /// (exactly at a threshold → the lower queue). O(K).
    pub fn queue_for(&self, service: u64) -> u8 {
        self.thresholds_gpu_ms()
            .iter()
            .take_while(|&&t| t <= service)
            .count() as u8
    }

    /// The threshold that ends `queue`, if any.
    fn limit_of(&self, queue: u8) -> Option<u64> {
        self.thresholds_gpu_ms().get(usize::from(queue)).copied()
    }
}

impl Default for LasConfig {
    /// The default: thresholds 3,250, 7,200 and 18,000 GPU·s (4 queues; the values
    /// listed in the Tiresias code, where the last one is configured but unused — use
    /// [`LasConfig::tiresias`] for the 3 queues it really runs). No starvation guard.
    fn default() -> Self {
        Self {
            thresholds_gpu_ms: [3_250_000, 7_200_000, 18_000_000, 0, 0, 0, 0, 0],
            threshold_count: 3,
            promote_knob_permille: 0,
            service: LengthMetric::GpuTime,
        }
    }
}

/// Tiresias discretized 2D-LAS: preemptive, skips queue heads that do not fit (as the
/// Tiresias `dlas*` policies). Key O(1); refresh O(K).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Las {
    /// Queues and guard.
    pub config: LasConfig,
}

impl Las {
    /// 2D-LAS with `config`.
    pub const fn new(config: LasConfig) -> Self {
        Self { config }
    }

    /// The job's service counted in its current queue cycle (since its last promotion), in
    /// the configured metric.
    pub fn queue_service(&self, job: &Job, now: TimeMs) -> u64 {
        self.config.queue_service(job, now)
    }

    /// Demotes or promotes `job`, keeping the bits of `order_queue` above the queue index.
    /// O(K).
    pub fn refresh_job(&self, job: &mut Job, now: TimeMs) {
        self.config.refresh_job(job, now)
    }

    /// The LAS key: queue, then queue-entry time.
    pub fn las_key(job: &Job) -> PriorityKey {
        PriorityKey {
            class: u32::from(job.order_queue & QUEUE_MASK),
            primary: key_ms(job.order_mark.0),
            secondary: 0,
        }
    }

    /// Next demotion of a running job or promotion of a queued one. O(1).
    pub fn review_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        self.config.review_at(job, now)
    }
}

/// The 2D-LAS rules on their own, so an order that embeds the queues in its own
/// configuration (TIAS) needs no second copy of them.
impl LasConfig {
    /// The job's service by `now` counted in its current queue cycle (since its last
    /// promotion), in the configured metric.
    pub fn queue_service(&self, job: &Job, now: TimeMs) -> u64 {
        let gpu_ms = job
            .attained_gpu_ms_at(now)
            .saturating_sub(job.order_base_gpu_ms);
        match self.service {
            LengthMetric::GpuTime => gpu_ms,
            LengthMetric::Time => div_narrow(gpu_ms, u64::from(job.gpus().max(1))),
        }
    }

    /// Service units the job gains per ms while running (GPUs, or 1 for 1D service).
    fn rate(&self, job: &Job) -> u64 {
        match self.service {
            LengthMetric::GpuTime => u64::from(job.gpus().max(1)),
            LengthMetric::Time => 1,
        }
    }

    /// Executed ms since the last promotion (Tiresias's reset `executed_time`).
    fn executed_since_base(job: &Job, now: TimeMs) -> u64 {
        let gpu_ms = job
            .attained_gpu_ms_at(now)
            .saturating_sub(job.order_base_gpu_ms);
        div_narrow(gpu_ms, u64::from(job.gpus().max(1)))
    }

    /// When a queued job becomes eligible for promotion; `None` when the guard is off, the
    /// job is in queue 0, is running, or has not run since its last promotion.
    fn promotion_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let knob = u64::from(self.promote_knob_permille);
        let queue = job.order_queue & QUEUE_MASK;
        if knob == 0 || queue == 0 || !job.state().is_queued() {
            return None;
        }
        let executed = Self::executed_since_base(job, now);
        if executed == 0 {
            return None;
        }
        let wait_ms = executed.saturating_mul(knob).div_ceil(1000);
        Some(job.queued_since().saturating_add(DurationMs(wait_ms)))
    }

    /// Demotes or promotes `job`, keeping the bits of `order_queue` above the queue index.
    /// O(K).
    pub fn refresh_job(&self, job: &mut Job, now: TimeMs) {
        let flags = job.order_queue & !QUEUE_MASK;
        let queue = job.order_queue & QUEUE_MASK;
        if self.promotion_at(job, now).is_some_and(|at| at <= now) {
            job.order_queue = flags;
            job.order_mark = now;
            job.order_base_gpu_ms = job.attained_gpu_ms_at(now);
            return;
        }
        let service = self.queue_service(job, now);
        let target = self.queue_for(service);
        if target > queue {
            // Entered the new queue when it crossed that queue's threshold. Service grows
            // only while the job runs, `rate` units per ms, so the crossing was
            // `(service − limit) / rate` ms before it last stopped running: `now` if it
            // still runs, else when it was preempted (`queued_since`), whether or not
            // anyone looked in between.
            let limit = self.limit_of(target - 1).unwrap_or(service);
            let since = div_narrow(service - limit.min(service), self.rate(job));
            let stopped = if job.state() == JobState::Running {
                now
            } else {
                job.queued_since().min(now)
            };
            job.order_queue = flags | target;
            job.order_mark = TimeMs(stopped.0.saturating_sub(since));
        }
    }

    /// Next demotion of a running job or promotion of a queued one. O(1).
    pub fn review_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        if job.state() == JobState::Running {
            let limit = self.limit_of(job.order_queue & QUEUE_MASK)?;
            let left = limit.saturating_sub(self.queue_service(job, now));
            let wait_ms = div_ceil_narrow(left, self.rate(job));
            return Some(now.saturating_add(DurationMs(wait_ms)));
        }
        self.promotion_at(job, now)
    }
}

/// `n / d` (0 when `d` is 0), in the Cortex-M4's one-instruction 32-bit division when both
/// fit in 32 bits (service counts below 49.7 GPU·days, GPU counts: every job's review), and
/// in the 64-bit library division otherwise. The same quotient either way.
fn div_narrow(n: u64, d: u64) -> u64 {
    match (u32::try_from(n), u32::try_from(d)) {
        (Ok(n), Ok(d)) => u64::from(n.checked_div(d).unwrap_or(0)),
        _ => n.checked_div(d).unwrap_or(0),
    }
}

/// `⌈n / d⌉` (0 when `d` is 0), as [`div_narrow`].
pub(crate) fn div_ceil_narrow(n: u64, d: u64) -> u64 {
    match (u32::try_from(n), u32::try_from(d)) {
        (Ok(n), Ok(d)) if d > 0 => u64::from(n.div_ceil(d)),
        _ if d > 0 => n.div_ceil(d),
        _ => 0,
    }
}

impl JobOrder for Las {
    /// `"las"` (2D, GPU·time) or `"las-time"` (1D).
    fn name(&self) -> &'static str {
        match self.config.service {
            LengthMetric::GpuTime => "las",
            LengthMetric::Time => "las-time",
        }
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// Keys change only at events and at [`next_review`](JobOrder::next_review) times (a
    /// threshold crossing computed in advance), so periodic ticks change nothing.
    fn time_driven(&self) -> bool {
        false
    }

    /// Demotion/promotion in `refresh`, at the review times: keys change only then.
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            reject: false,
            after_pass: false,
            keys: KeyChanges::AtReview,
            ..OrderHooks::ALL
        }
    }

    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.refresh_job(job, now);
    }

    fn key(&self, job: &Job, _now: TimeMs) -> PriorityKey {
        Self::las_key(job)
    }

    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        self.review_at(job, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Decision, Event, PreemptReason};
    use crate::ids::JobId;
    use crate::job::JobSpec;
    use crate::placement::FirstFit;
    use crate::scheduler::Scheduler;
    use crate::topology::{LinkWeights, Topology};

    type Sched = Scheduler<Las, FirstFit, 16, 64, 8>;
    type Out = heapless::Vec<Decision<8>, 32>;

    /// One machine with `gpus` GPUs, 2D-LAS with thresholds in GPU·s and a knob.
    fn sched(gpus: u16, thresholds_s: &[u64], knob_permille: u32) -> Sched {
        let mut config = LasConfig::from_gpu_secs(thresholds_s).unwrap();
        config.promote_knob_permille = knob_permille;
        Scheduler::new(
            Topology::uniform(1, 1, gpus, LinkWeights::PROXIMITY_DRL).unwrap(),
            Las::new(config),
            FirstFit,
        )
    }

    fn submit(s: &mut Sched, t_ms: u64, id: u32, gpus: u16, out: &mut Out) {
        s.handle(
            TimeMs(t_ms),
            Event::Submit(JobSpec::new(JobId(id), gpus)),
            out,
        )
        .unwrap();
    }

    fn queue(s: &Sched, id: u32) -> u8 {
        s.job(JobId(id)).unwrap().order_queue
    }

    fn running(s: &Sched, id: u32) -> bool {
        s.job(JobId(id)).unwrap().state() == JobState::Running
    }

    #[test]
    fn config_validation_and_defaults() {
        assert_eq!(
            LasConfig::default().thresholds_gpu_ms(),
            &[3_250_000, 7_200_000, 18_000_000]
        );
        assert_eq!(LasConfig::tiresias().queue_count(), 3);
        assert_eq!(
            LasConfig::from_gpu_secs(&[5, 5]),
            Err(LasConfigError::NotIncreasing)
        );
        assert_eq!(
            LasConfig::from_gpu_secs(&[0]),
            Err(LasConfigError::NotIncreasing)
        );
        assert_eq!(
            LasConfig::from_gpu_secs(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            Err(LasConfigError::TooManyThresholds)
        );
        // Exactly at a threshold → the lower queue (≥ rule).
        let c = LasConfig::default();
        let cases = [
            (0, 0),
            (3_249_999, 0),
            (3_250_000, 1),
            (7_200_000, 2),
            (18_000_000, 3),
            (u64::MAX, 3),
        ];
        for (service, want) in cases {
            assert_eq!(c.queue_for(service), want, "service {service}");
        }
    }

    #[test]
    fn demotion_exactly_at_threshold_lets_the_waiting_job_run() {
        // 1 GPU, threshold 10 GPU·s. Job 0 (2 GPUs would not fit; use 1) runs from t=0; job 1
        // arrives at t=1 s and waits (same queue, later entry).
        let mut out = Out::new();
        let mut s = sched(1, &[10], 0);
        submit(&mut s, 0, 0, 1, &mut out);
        submit(&mut s, 1_000, 1, 1, &mut out);
        assert!(running(&s, 0) && !running(&s, 1));
        // 1 ms before the threshold: still queue 0, keeps the GPU.
        assert_eq!(
            s.order()
                .next_review(s.job(JobId(0)).unwrap(), TimeMs(1_000)),
            Some(TimeMs(10_000))
        );
        s.handle(TimeMs(9_999), Event::Tick, &mut out).unwrap();
        assert_eq!(queue(&s, 0), 0);
        assert!(running(&s, 0));
        // Exactly 10,000 GPU·ms: demoted to queue 1, preempted, job 1 starts.
        out.clear();
        s.handle(TimeMs(10_000), Event::Tick, &mut out).unwrap();
        assert_eq!(queue(&s, 0), 1);
        assert_eq!(s.job(JobId(0)).unwrap().order_mark, TimeMs(10_000));
        assert!(out.contains(&Decision::Preempt {
            job: JobId(0),
            reason: PreemptReason::Priority
        }));
        assert!(running(&s, 1));
        // Preemption keeps attained service (and executed time).
        let j0 = s.job(JobId(0)).unwrap();
        assert_eq!(
            (j0.attained_gpu_ms_at(s.now()), j0.executed_at(s.now())),
            (10_000, DurationMs(10_000))
        );
        s.check_invariants().unwrap();
    }

    #[test]
    fn demotion_time_is_the_crossing_not_the_event() {
        // A 4-GPU job crosses 10 GPU·s at t = 2.5 s; the first event after is at t = 4 s.
        let mut out = Out::new();
        let mut s = sched(4, &[10], 0);
        submit(&mut s, 0, 0, 4, &mut out);
        s.handle(TimeMs(4_000), Event::Tick, &mut out).unwrap();
        let j = s.job(JobId(0)).unwrap();
        assert_eq!((j.order_queue, j.order_mark), (1, TimeMs(2_500)));
    }

    #[test]
    fn starvation_guard_promotes_after_knob_times_executed() {
        // 1 GPU, threshold 1 GPU·s, knob 2.0. Job 0 runs 1 s → demoted at t=1 s, preempted by
        // job 1 (arrived t=0.5 s, queue 0). Job 0 has executed 1,000 ms, so it is promoted
        // when it has waited 2,000 ms: at t = 3 s.
        let mut out = Out::new();
        let mut s = sched(1, &[1], 2000);
        submit(&mut s, 0, 0, 1, &mut out);
        submit(&mut s, 500, 1, 1, &mut out);
        s.handle(TimeMs(1_000), Event::Tick, &mut out).unwrap();
        assert!(running(&s, 1) && queue(&s, 0) == 1);
        // Job 1 is demoted too at t=2 s (1 s of service) → back of queue 1, after job 0
        // (entered queue 1 at 1 s): job 0 runs again.
        s.handle(TimeMs(2_000), Event::Tick, &mut out).unwrap();
        assert!(running(&s, 0) && queue(&s, 1) == 1);
        // Now job 1 waits from t=2 s; it executed 1,000 ms → promotion due at t=4 s.
        assert_eq!(
            s.order()
                .next_review(s.job(JobId(1)).unwrap(), TimeMs(2_000)),
            Some(TimeMs(4_000))
        );
        s.handle(TimeMs(3_999), Event::Tick, &mut out).unwrap();
        assert_eq!(queue(&s, 1), 1);
        s.handle(TimeMs(4_000), Event::Tick, &mut out).unwrap();
        let j1 = s.job(JobId(1)).unwrap();
        assert_eq!(
            (j1.order_queue, j1.order_mark, j1.order_base_gpu_ms),
            (0, TimeMs(4_000), 1_000)
        );
        assert!(running(&s, 1), "promoted job outranks queue 1");
        s.check_invariants().unwrap();
    }

    /// Issue 16, defect 4: job A (GPU 0) crosses 10 GPU·s at 10 s, job C (GPU 1) at 11 s,
    /// and GPU 0 fails at 15 s. A entered queue 1 first, so it takes C's GPU, whether or
    /// not the caller ticked in between. On the main of that time, without the tick, A's
    /// crossing was stamped 15 s (computed only for running jobs, after `GpuDown` had
    /// preempted it) and C kept running.
    #[test]
    fn queue_entry_survives_a_gpu_failure_with_or_without_a_tick() {
        for tick in [None, Some(13_000)] {
            let mut out = Out::new();
            let mut s = sched(2, &[10], 0);
            submit(&mut s, 0, 0, 1, &mut out);
            submit(&mut s, 1_000, 2, 1, &mut out);
            if let Some(t) = tick {
                s.handle(TimeMs(t), Event::Tick, &mut out).unwrap();
            }
            out.clear();
            s.handle(
                TimeMs(15_000),
                Event::GpuDown(crate::ids::GpuId(0)),
                &mut out,
            )
            .unwrap();
            let expected = [
                Decision::Preempt {
                    job: JobId(0),
                    reason: PreemptReason::GpuFailed(crate::ids::GpuId(0)),
                },
                Decision::Preempt {
                    job: JobId(2),
                    reason: PreemptReason::Priority,
                },
                Decision::Start {
                    job: JobId(0),
                    gpus: s.placement_of(JobId(0)),
                },
            ];
            assert_eq!(out.as_slice(), &expected, "tick {tick:?}");
            let a = s.job(JobId(0)).unwrap();
            assert_eq!(
                (a.order_queue, a.order_mark),
                (1, TimeMs(10_000)),
                "tick {tick:?}"
            );
            s.check_invariants().unwrap();
        }
    }

    #[test]
    fn knob_zero_never_promotes() {
        let mut out = Out::new();
        let mut s = sched(1, &[1], 0);
        submit(&mut s, 0, 0, 1, &mut out);
        submit(&mut s, 0, 1, 1, &mut out);
        s.handle(TimeMs(1_000), Event::Tick, &mut out).unwrap();
        s.handle(TimeMs(1_000_000), Event::Tick, &mut out).unwrap();
        assert_eq!(queue(&s, 0), 1);
    }

    #[test]
    fn one_dimensional_service_ignores_width() {
        let mut config = LasConfig::from_gpu_secs(&[10]).unwrap();
        config.service = LengthMetric::Time;
        let las = Las::new(config);
        let mut job = Job::submitted(JobSpec::new(JobId(0), 8), TimeMs(0));
        job.set_state(JobState::Running);
        job.set_executed(DurationMs(9_999));
        let mut j = job;
        las.refresh_job(&mut j, TimeMs(9_999));
        assert_eq!(j.order_queue, 0);
        j.set_executed(DurationMs(10_000));
        las.refresh_job(&mut j, TimeMs(10_000));
        assert_eq!(j.order_queue, 1);
        assert_eq!(las.name(), "las-time");
    }
}
