//! TIAS: two-level, information-agnostic scheduling of deadline and non-deadline jobs.
//!
//! Yang, Lin, Ni, Song, "TIAS", INSAI 2021 publishes only its abstract: level 1 gives each
//! kind of job its own priority calculation; level 2 orders the deadline jobs inside one
//! queue by a *queue urgency* indicator built on three observations; durations are never
//! known. Everything below the abstract is our design, written down here.
//!
//! # Information
//! TIAS never reads [`JobSpec::declared_length`](crate::JobSpec::declared_length). What it
//! knows of a job: GPUs `k`, deadline `D` (optional), executed time `e` and attained service
//! `a = k·e` ([`Job::attained_gpu_ms`]). What it knows of the workload: the executed time of
//! every job that already finished, learned online in [`JobOrder::on_finished`] into a
//! [`ServiceSketch`] (a log-linear histogram, `S` = a job's total executed ms).
//!
//! # Level 1: one priority calculation per kind of job
//! - **Non-deadline jobs** — Tiresias discretized 2D-LAS ([`Las`]): queue from the attained
//!   service, FIFO by queue-entry time, starvation guard (PromoteKnob).
//! - **Deadline jobs** — the same LAS queue, *unless* they are **critical**, in which case
//!   they are lifted to the head of the top queue (class 0, above every LAS queue) for as long
//!   as they stay critical. A deadline job is critical when its slack is at most `κ` times its
//!   estimated remaining time: `T − r̂ ≤ κ·r̂`, with `T = D − now` (time left) and `r̂` below.
//!   Critical is sticky (a flag in [`Job::order_queue`]) until the job finishes or turns
//!   hopeless: running lowers `r̂` as the job proves itself, which would lift it back out of
//!   critical, get it preempted and make it critical again a moment later (the boundary
//!   thrashing least-laxity schedulers are known for; we measured it on the ITP trace).
//!   A relaxed (non-critical) deadline job is ordered like LAS
//!   ([`RelaxedDeadlinePlacement::LikeLas`], default) or at the head of its own LAS queue by
//!   urgency ([`RelaxedDeadlinePlacement::HeadOfQueue`]). So deadline jobs get priority only
//!   while their urgency requires it, and no job keeps it past its deadline: non-deadline jobs
//!   are never starved for longer than the deadlines in the queue.
//!
//! # Level 2: the queue urgency indicator
//! Deadline jobs inside one queue are ordered by ascending
//! `U = (max(T − r̂, 0) + 1 ms) · w(k) / p_fit`, ties by deadline, then id. Three observations:
//! 1. **Slack** `T − r̂` (ms): the time the job can still afford to wait, given the estimated
//!    remaining run time `r̂ = Q_q(S − e | S > e)` — the conditional `q`-quantile (default the
//!    median) of the remaining service of finished jobs that ran longer than `e`. Less slack
//!    → more urgent (least-laxity, the overload-aware cousin of EDF).
//! 2. **Chance it does not need much more service than it has time for**:
//!    `p_fit = P(S ≤ e + T | S > e)` from the same sketch. A job likely to need far more
//!    service than its time left is a poor use of GPUs: dividing by `p_fit` puts the
//!    likely-to-make-it jobs first. (Information-agnostic: learned from other jobs, never the
//!    job's own length.)
//! 3. **GPUs it blocks**: `w(k) = 1 + β·⌊log₂ k⌋`. In a preemptive, count-based pass a
//!    top-ranked job always gets its GPUs, so width is not a risk to the job but a *cost* to
//!    others: saving a k-GPU deadline displaces k GPUs of other work (and k restarts). At equal
//!    slack and odds the narrower job goes first — the 2D view Tiresias takes of service.
//!    Logarithmic so width only reorders jobs whose slack is comparable.
//!
//! # Hopeless deadline jobs
//! A deadline job is **hopeless** once `now ≥ D`, or `p_fit` < `hopeless_fit` (default 5 %):
//! by everything learned so far it almost surely cannot finish in time even if it ran from now
//! on. The mark is sticky (a flag in [`Job::order_queue`]). By default
//! ([`HopelessPolicy::BestEffort`]) it becomes best-effort: ordered exactly like a
//! non-deadline job by 2D-LAS, so it stops taking GPUs from jobs that can still make it but
//! still finishes (and may still meet its deadline if the cluster is idle).
//! [`HopelessPolicy::Reject`] drops it instead (a queued one at once; a running one is
//! deprioritised, and dropped once preempted).
//!
//! # Cold start
//! Until `min_samples` jobs have finished, or when no finished job ran longer than `e`, the
//! sketch has no evidence and TIAS uses a Pareto(α = 1) prior with scale
//! `m = max(e, prior_floor)` — "a job that has run e runs about e more" (heavy-tailed DL job
//! lengths): `r̂ = m·q/(1 − q)`, `p_fit = T/(m + T)`.
//!
//! # Cost
//! `key`/`refresh`: O(log B + K) per job (two O(1) tail lookups, one O(log B) quantile
//! search over B = 252 buckets, K ≤ 8 thresholds); `on_finished`: O(B). At 4,096 waiting
//! jobs a pass spends about 4,096 × (refresh + key) ≈ tens of µs in TIAS.
//!
//! All arithmetic is integer (u64/u128 permille and milliseconds), so replays are bit-exact.

use super::las::QUEUE_MASK;
use super::{JobOrder, Las, LasConfig, OrderHooks, Preemption, PriorityKey, ServiceSketch, key_ms};
use crate::event::RejectReason;
use crate::job::{Job, JobState};
use crate::time::{DurationMs, TimeMs};

/// Flag in [`Job::order_queue`]: this deadline job was found hopeless (sticky).
const HOPELESS_FLAG: u8 = 0x80;
/// Flag in [`Job::order_queue`]: this deadline job turned critical (sticky until it finishes
/// or turns hopeless).
const CRITICAL_FLAG: u8 = 0x40;

/// What TIAS does with a deadline job that can no longer make its deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HopelessPolicy {
    /// Keep it as a best-effort job, ordered like a non-deadline job (default).
    #[default]
    BestEffort,
    /// Reject it ([`RejectReason::DeadlineUnreachable`]) once it is queued.
    Reject,
}

/// Where a deadline job that is not (yet) critical is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RelaxedDeadlinePlacement {
    /// Like any job under 2D-LAS: its queue, FIFO by queue-entry time (default).
    #[default]
    LikeLas,
    /// At the head of its own LAS queue, ordered by urgency `U`, before the queue's
    /// non-deadline jobs.
    HeadOfQueue,
}

/// Every constant of TIAS in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiasConfig {
    /// The 2D-LAS queues and starvation guard used for both kinds of job.
    pub las: LasConfig,
    /// `q` of the remaining-time estimate `r̂`, permille (500 = conditional median).
    pub remaining_quantile_permille: u16,
    /// `κ`, permille: a deadline job is critical when slack ≤ κ·r̂ (1000: when it needs at
    /// least half of its time left).
    pub critical_slack_permille: u32,
    /// Below this `p_fit` (permille) a deadline job is hopeless (50 = 5 %).
    pub hopeless_fit_permille: u16,
    /// `β`, permille: the weight of each doubling of width in `w(k)` (500: an 8-GPU job
    /// counts its slack 2.5× a 1-GPU job's).
    pub width_weight_permille: u32,
    /// Finished jobs needed before the sketch replaces the prior.
    pub min_samples: u32,
    /// Scale floor of the cold-start prior, ms.
    pub prior_floor_ms: u64,
    /// The sketch halves its counts at this many samples (0 = never forgets).
    pub sketch_halve_at: u32,
    /// What happens to hopeless deadline jobs.
    pub hopeless: HopelessPolicy,
    /// Where relaxed deadline jobs go.
    pub relaxed: RelaxedDeadlinePlacement,
}

impl Default for TiasConfig {
    fn default() -> Self {
        Self {
            las: LasConfig::default(),
            remaining_quantile_permille: 500,
            critical_slack_permille: 1000,
            hopeless_fit_permille: 50,
            width_weight_permille: 500,
            min_samples: 32,
            prior_floor_ms: 60_000,
            sketch_halve_at: 8192,
            hopeless: HopelessPolicy::BestEffort,
            relaxed: RelaxedDeadlinePlacement::LikeLas,
        }
    }
}

/// How a deadline job stands at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assessment {
    /// Time left to the deadline, ms (0 once it passed).
    pub time_left_ms: u64,
    /// Estimated remaining run time `r̂`, ms.
    pub remaining_ms: u64,
    /// `p_fit`, permille.
    pub fit_permille: u32,
    /// `T − r̂`, ms (negative: expected to miss at quantile `q`).
    pub slack_ms: i64,
}

/// What level 1 makes of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No deadline, or a hopeless one under [`HopelessPolicy::BestEffort`]: plain 2D-LAS.
    BestEffort,
    /// A deadline job that is hopeless.
    Hopeless,
    /// A deadline job with slack to spare.
    Relaxed(Assessment),
    /// A deadline job whose slack is (or once was) at most κ·r̂: head of the top queue.
    Critical(Assessment),
}

/// The TIAS job order. Preemptive; skips queue heads that do not fit.
#[derive(Clone, Debug)]
pub struct Tias {
    config: TiasConfig,
    las: Las,
    sketch: ServiceSketch,
}

impl Default for Tias {
    fn default() -> Self {
        Self::new(TiasConfig::default())
    }
}

impl Tias {
    /// TIAS with `config` and an empty sketch.
    pub fn new(config: TiasConfig) -> Self {
        Self {
            config,
            las: Las::new(config.las),
            sketch: ServiceSketch::new(config.sketch_halve_at),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TiasConfig {
        &self.config
    }

    /// What has been learned of finished jobs.
    pub fn sketch(&self) -> &ServiceSketch {
        &self.sketch
    }

    /// `r̂` and `p_fit` for a job that has run `e_ms` with `t_ms` left. O(log B).
    fn estimate(&self, e_ms: u64, t_ms: u64) -> (u64, u32) {
        let q = self.config.remaining_quantile_permille.min(1000);
        if self.sketch.samples() >= self.config.min_samples.max(1)
            && let (Some(r), Some(fit)) = (
                self.sketch.remaining_quantile(e_ms, q),
                self.sketch.fit_permille(e_ms, t_ms),
            )
        {
            return (r, fit);
        }
        // Pareto(1) prior with scale m: P(S > e + x | S > e) = m / (m + x).
        let m = u128::from(e_ms.max(self.config.prior_floor_ms).max(1));
        let q = u128::from(q);
        let r = if q >= 1000 {
            u64::MAX
        } else {
            sat_u64(m * q / (1000 - q))
        };
        let t = u128::from(t_ms);
        (r, (t * 1000 / (m + t)) as u32)
    }

    /// Slack, remaining estimate and fit of a deadline job; `None` without a deadline.
    /// O(log B).
    pub fn assess(&self, job: &Job, now: TimeMs) -> Option<Assessment> {
        let deadline = job.spec.deadline?;
        let time_left_ms = deadline.saturating_since(now).0;
        let (remaining_ms, fit_permille) = self.estimate(job.executed.0, time_left_ms);
        let slack = i128::from(time_left_ms) - i128::from(remaining_ms);
        Some(Assessment {
            time_left_ms,
            remaining_ms,
            fit_permille,
            slack_ms: i64::try_from(slack).unwrap_or(if slack < 0 { i64::MIN } else { i64::MAX }),
        })
    }

    /// Level 1: how TIAS treats this job at `now`. O(log B).
    pub fn standing(&self, job: &Job, now: TimeMs) -> Standing {
        let flagged = job.order_queue & HOPELESS_FLAG != 0;
        let assessment = if flagged { None } else { self.assess(job, now) };
        let Some(a) = assessment else {
            return match (job.spec.deadline, self.config.hopeless) {
                (Some(_), HopelessPolicy::Reject) => Standing::Hopeless,
                _ => Standing::BestEffort,
            };
        };
        let hopeless =
            a.time_left_ms == 0 || a.fit_permille < u32::from(self.config.hopeless_fit_permille);
        if hopeless {
            return match self.config.hopeless {
                HopelessPolicy::BestEffort => Standing::BestEffort,
                HopelessPolicy::Reject => Standing::Hopeless,
            };
        }
        let margin =
            i128::from(a.remaining_ms) * i128::from(self.config.critical_slack_permille) / 1000;
        if job.order_queue & CRITICAL_FLAG != 0 || i128::from(a.slack_ms) <= margin {
            Standing::Critical(a)
        } else {
            Standing::Relaxed(a)
        }
    }

    /// Level 2: the queue urgency `U` (smaller = more urgent), from slack, `p_fit` and width.
    /// O(1).
    pub fn urgency(&self, a: &Assessment, gpus: u16) -> i64 {
        let slack = u128::try_from(a.slack_ms.max(0)).unwrap_or(0) + 1;
        let doublings = u128::from(15 - gpus.max(1).leading_zeros().min(15));
        let width = 1000 + u128::from(self.config.width_weight_permille) * doublings;
        let fit = u128::from(a.fit_permille.max(1));
        i64::try_from(slack * width / fit).unwrap_or(i64::MAX)
    }

    fn deadline_key(&self, class: u32, a: &Assessment, job: &Job) -> PriorityKey {
        PriorityKey {
            class,
            primary: self.urgency(a, job.spec.gpus),
            secondary: key_ms(job.spec.deadline.map_or(u64::MAX, |d| d.0)),
        }
    }
}

fn sat_u64(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// Class of band `band` (0 = deadline jobs by `U`, 1 = FIFO) of LAS queue `queue`; class 0
/// is reserved for critical deadline jobs.
fn class_of(queue: u8, band: u32) -> u32 {
    1 + 2 * u32::from(queue & QUEUE_MASK) + band
}

impl JobOrder for Tias {
    fn name(&self) -> &'static str {
        "tias"
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// Everything but `after_pass`.
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            after_pass: false,
            ..OrderHooks::ALL
        }
    }

    /// 2D-LAS demotion/promotion, then the sticky hopeless mark. O(log B + K).
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.las.refresh_job(job, now);
        if job.spec.deadline.is_none() || job.order_queue & HOPELESS_FLAG != 0 {
            return;
        }
        match self.standing(job, now) {
            Standing::BestEffort | Standing::Hopeless => {
                job.order_queue = (job.order_queue & !CRITICAL_FLAG) | HOPELESS_FLAG;
            }
            Standing::Critical(_) => job.order_queue |= CRITICAL_FLAG,
            Standing::Relaxed(_) => {}
        }
    }

    /// O(log B).
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        let queue = job.order_queue;
        match self.standing(job, now) {
            Standing::Critical(a) => self.deadline_key(0, &a, job),
            Standing::Relaxed(a)
                if self.config.relaxed == RelaxedDeadlinePlacement::HeadOfQueue =>
            {
                self.deadline_key(class_of(queue, 0), &a, job)
            }
            Standing::Relaxed(_) | Standing::BestEffort | Standing::Hopeless => PriorityKey {
                class: class_of(queue, 1),
                ..Las::las_key(job)
            },
        }
    }

    fn reject(&self, job: &Job, now: TimeMs) -> Option<RejectReason> {
        (self.standing(job, now) == Standing::Hopeless).then_some(RejectReason::DeadlineUnreachable)
    }

    /// Learns the finished job's executed time. O(B).
    fn on_finished(&mut self, job: &Job, _now: TimeMs) {
        self.sketch.record(job.executed.0);
    }

    /// The LAS review, the deadline (hopeless from then), and for a queued relaxed job the
    /// moment it turns critical (`T = (1 + κ)·r̂`). O(log B).
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let las = self.las.review_at(job, now);
        let deadline_review = match self.standing(job, now) {
            Standing::Relaxed(a) if job.state != JobState::Running => {
                let lead = u128::from(a.remaining_ms)
                    * (1000 + u128::from(self.config.critical_slack_permille))
                    / 1000;
                let lead = DurationMs(sat_u64(lead));
                job.spec
                    .deadline
                    .map(|d| TimeMs(d.0.saturating_sub(lead.0)))
            }
            Standing::Relaxed(_) | Standing::Critical(_) => job.spec.deadline,
            Standing::BestEffort | Standing::Hopeless => None,
        };
        match (las, deadline_review.filter(|&t| t > now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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

    type Sched = Scheduler<Tias, FirstFit, 16, 64, 8>;
    type Out = heapless::Vec<Decision<8>, 32>;

    const S: u64 = 1000;

    fn spec(id: u32, gpus: u16, deadline_ms: Option<u64>) -> JobSpec {
        let mut s = JobSpec::new(JobId(id), gpus);
        s.deadline = deadline_ms.map(TimeMs);
        s
    }

    /// A queued job at t=0 that has executed `e_ms` (attained = gpus × e).
    fn job(id: u32, gpus: u16, deadline_ms: Option<u64>, e_ms: u64) -> Job {
        let mut j = Job::submitted(spec(id, gpus, deadline_ms), TimeMs(0));
        j.executed = DurationMs(e_ms);
        j.attained_gpu_ms = e_ms * u64::from(gpus);
        j
    }

    fn sched(gpus: u16, config: TiasConfig) -> Sched {
        Scheduler::new(
            Topology::uniform(1, 1, gpus, LinkWeights::PROXIMITY_DRL).unwrap(),
            Tias::new(config),
            FirstFit,
        )
    }

    fn running(s: &Sched, id: u32) -> bool {
        s.job(JobId(id))
            .is_some_and(|j| j.state == JobState::Running)
    }

    /// Ids sorted the way the scheduler ranks them: `(key, id)`.
    fn ranked<const N: usize>(tias: &Tias, jobs: &[Job; N], now: TimeMs) -> [u32; N] {
        let mut ids: [u32; N] = core::array::from_fn(|i| jobs[i].id().0);
        ids.sort_by_key(|&id| {
            let j = jobs.iter().find(|j| j.id().0 == id).unwrap();
            (tias.key(j, now), id)
        });
        ids
    }

    /// Each urgency observation, by hand with the cold-start prior (floor m = 60 s, q = ½ →
    /// r̂ = m, p_fit = T/(m+T)). In each pair the *higher* id must go first, so the id
    /// tie-break is not what orders them; both jobs are critical (slack ≤ r̂).
    #[test]
    fn each_urgency_observation_orders_critical_jobs() {
        let tias = Tias::default();
        // (observation, first job, second job, U of first, U of second)
        let cases: [(&str, Job, Job, i64, i64); 3] = [
            // 1. Slack: T = 100 s vs 110 s, r̂ = 60 s → slack 40 s vs 50 s;
            //    p = 625‰ vs 647‰ → U = 40,001·1000/625 = 64,001 vs 50,001·1000/647 = 77,281.
            (
                "slack",
                job(1, 1, Some(100 * S), 0),
                job(0, 1, Some(110 * S), 0),
                64_001,
                77_281,
            ),
            // 2. p_fit: equal slack 60 s. e = 0, T = 120 s → r̂ = 60 s, p = 120/180 = 666‰;
            //    e = 120 s, T = 180 s → m = r̂ = 120 s, p = 180/300 = 600‰ (more likely to need
            //    much more service) → U = 90,091 vs 100,001.
            (
                "p_fit",
                job(1, 1, Some(120 * S), 0),
                job(0, 1, Some(180 * S), 120 * S),
                90_091,
                100_001,
            ),
            // 3. Width: same slack 40 s and p = 625‰; 1 GPU vs 8 GPUs (w = 1 + ½·3 = 2.5)
            //    → U = 64,001 vs 160,004.
            (
                "width",
                job(1, 1, Some(100 * S), 0),
                job(0, 8, Some(100 * S), 0),
                64_001,
                160_004,
            ),
        ];
        for (what, first, second, u_first, u_second) in cases {
            for j in [&first, &second] {
                assert!(
                    matches!(tias.standing(j, TimeMs(0)), Standing::Critical(_)),
                    "{what}"
                );
            }
            assert_eq!(tias.key(&first, TimeMs(0)).primary, u_first, "{what}");
            assert_eq!(tias.key(&second, TimeMs(0)).primary, u_second, "{what}");
            assert_eq!(ranked(&tias, &[second, first], TimeMs(0)), [1, 0], "{what}");
        }
    }

    #[test]
    fn slack_decides_who_runs_through_the_scheduler() {
        // 1 GPU. Job 0 (T = 110 s) starts alone; job 1 (T = 100 s, less slack) preempts it.
        let mut out = Out::new();
        let mut s = sched(1, TiasConfig::default());
        s.handle(
            TimeMs(0),
            Event::Submit(spec(0, 1, Some(110 * S))),
            &mut out,
        )
        .unwrap();
        assert!(running(&s, 0));
        s.handle(
            TimeMs(0),
            Event::Submit(spec(1, 1, Some(100 * S))),
            &mut out,
        )
        .unwrap();
        assert!(running(&s, 1) && !running(&s, 0));
        s.check_invariants().unwrap();
    }

    #[test]
    fn estimates_are_learned_from_finished_jobs_never_the_declared_length() {
        let mut tias = Tias::default();
        let mut j = job(0, 1, Some(100 * S), 0);
        // Prior: r̂ = 60 s, slack 40 s ≤ 60 s → critical.
        assert!(matches!(
            tias.standing(&j, TimeMs(0)),
            Standing::Critical(_)
        ));
        // The job's own declared length changes nothing.
        let before = tias.key(&j, TimeMs(0));
        j.spec.declared_length = Some(DurationMs(1));
        assert_eq!(tias.key(&j, TimeMs(0)), before);
        // 32 finished jobs of 8,192 ms, spread (by interpolation) over their bucket
        // [8192, 10240): median r̂ = 9,216 ms, slack 90.784 s > r̂ → relaxed; p_fit = 100 %.
        for id in 0..32 {
            let done = job(100 + id, 1, None, 8_192);
            tias.on_finished(&done, TimeMs(0));
        }
        let a = tias.assess(&j, TimeMs(0)).unwrap();
        assert_eq!(
            (a.remaining_ms, a.fit_permille, a.slack_ms),
            (9_216, 1000, 90_784)
        );
        assert!(matches!(tias.standing(&j, TimeMs(0)), Standing::Relaxed(_)));
    }

    #[test]
    fn critical_is_sticky_until_finish_or_hopeless() {
        // Critical under the prior (slack 40 s ≤ r̂ 60 s); then 32 short jobs finish and the
        // same job would be relaxed — but once marked it stays critical (no boundary thrash).
        let mut tias = Tias::default();
        let mut j = job(0, 1, Some(100 * S), 0);
        tias.refresh(&mut j, TimeMs(0));
        assert_ne!(j.order_queue & CRITICAL_FLAG, 0);
        let fresh = job(1, 1, Some(100 * S), 0);
        for id in 0..32 {
            tias.on_finished(&job(100 + id, 1, None, 8_192), TimeMs(0));
        }
        assert!(matches!(
            tias.standing(&fresh, TimeMs(0)),
            Standing::Relaxed(_)
        ));
        assert!(matches!(
            tias.standing(&j, TimeMs(0)),
            Standing::Critical(_)
        ));
        assert_eq!(tias.key(&j, TimeMs(0)).class, 0);
        // At its deadline it turns hopeless and loses the mark.
        tias.refresh(&mut j, TimeMs(100 * S));
        assert_eq!(
            j.order_queue & (CRITICAL_FLAG | HOPELESS_FLAG),
            HOPELESS_FLAG
        );
    }

    #[test]
    fn hopeless_deadline_jobs_become_best_effort_or_are_rejected() {
        let tias = Tias::default();
        // (case, deadline ms, now ms, e ms): hopeless by passed deadline or by p_fit < 5 %
        // (T = 3 s: 3/63 = 47‰).
        let cases = [("passed", 50 * S, 50 * S, 0), ("p_fit 47‰", 3 * S, 0, 0)];
        for (what, deadline, now, e) in cases {
            let mut j = job(0, 1, Some(deadline), e);
            let plain = job(0, 1, None, e);
            assert_eq!(
                tias.standing(&j, TimeMs(now)),
                Standing::BestEffort,
                "{what}"
            );
            // Best-effort = ordered exactly like the same job without a deadline.
            assert_eq!(
                tias.key(&j, TimeMs(now)),
                tias.key(&plain, TimeMs(now)),
                "{what}"
            );
            assert_eq!(tias.reject(&j, TimeMs(now)), None, "{what}");
            let mut t = tias.clone();
            t.refresh(&mut j, TimeMs(now));
            assert_ne!(j.order_queue & HOPELESS_FLAG, 0, "{what}: sticky mark");
            let reject = Tias::new(TiasConfig {
                hopeless: HopelessPolicy::Reject,
                ..TiasConfig::default()
            });
            assert_eq!(
                reject.reject(&j, TimeMs(now)),
                Some(RejectReason::DeadlineUnreachable),
                "{what}"
            );
        }
        // 3.2 s: 3.2/63.2 = 50‰ → not hopeless (≥ threshold), critical.
        let j = job(0, 1, Some(3_200), 0);
        assert!(matches!(
            tias.standing(&j, TimeMs(0)),
            Standing::Critical(_)
        ));
    }

    #[test]
    fn hopeless_job_does_not_take_gpus_and_is_rejected_under_reject_policy() {
        // 1 GPU; job 0 (no deadline) runs from t=0; at t=1 s job 1 arrives with 3 s left.
        for (policy, job1_queued) in [
            (HopelessPolicy::BestEffort, true),
            (HopelessPolicy::Reject, false),
        ] {
            let mut out = Out::new();
            let mut s = sched(
                1,
                TiasConfig {
                    hopeless: policy,
                    ..TiasConfig::default()
                },
            );
            s.handle(TimeMs(0), Event::Submit(spec(0, 1, None)), &mut out)
                .unwrap();
            out.clear();
            s.handle(TimeMs(S), Event::Submit(spec(1, 1, Some(4 * S))), &mut out)
                .unwrap();
            assert!(running(&s, 0), "{policy:?}");
            assert_eq!(s.job(JobId(1)).is_some(), job1_queued, "{policy:?}");
            let rejected = out.contains(&Decision::Reject {
                job: JobId(1),
                reason: RejectReason::DeadlineUnreachable,
            });
            assert_eq!(rejected, !job1_queued, "{policy:?}");
            s.check_invariants().unwrap();
        }
    }

    #[test]
    fn critical_job_preempts_keeps_service_and_loses_priority_at_its_deadline() {
        // 1 GPU. Job 0 (no deadline) runs from 0; at 10 s job 1 (deadline 110 s, critical)
        // preempts it. Job 0 keeps its 10 GPU·s. Job 1 is still running at its deadline:
        // it becomes best-effort (queue 0, entered at 10 s), behind job 0 (entered at 0).
        let mut out = Out::new();
        let mut s = sched(1, TiasConfig::default());
        s.handle(TimeMs(0), Event::Submit(spec(0, 1, None)), &mut out)
            .unwrap();
        out.clear();
        s.handle(
            TimeMs(10 * S),
            Event::Submit(spec(1, 1, Some(110 * S))),
            &mut out,
        )
        .unwrap();
        assert!(out.contains(&Decision::Preempt {
            job: JobId(0),
            reason: PreemptReason::Priority
        }));
        let j0 = *s.job(JobId(0)).unwrap();
        assert_eq!(
            (j0.attained_gpu_ms, j0.executed, j0.preemptions),
            (10 * S, DurationMs(10 * S), 1)
        );
        assert!(running(&s, 1));
        // Tick hint: job 1's deadline (critical, running).
        assert_eq!(s.next_review(), Some(TimeMs(110 * S)));
        s.handle(TimeMs(110 * S), Event::Tick, &mut out).unwrap();
        assert!(running(&s, 0) && !running(&s, 1));
        assert_eq!(s.job(JobId(0)).unwrap().attained_gpu_ms, 10 * S);
        s.handle(TimeMs(120 * S), Event::Tick, &mut out).unwrap();
        assert_eq!(s.job(JobId(0)).unwrap().attained_gpu_ms, 20 * S);
        s.check_invariants().unwrap();
    }

    #[test]
    fn relaxed_deadline_placement_like_las_or_head_of_queue() {
        // Job 0: no deadline, entered queue 0 at t=0. Job 1: deadline 1,000 s (relaxed:
        // slack 940 s > r̂ 60 s), entered at t=0 too.
        let jobs = [job(0, 1, None, 0), job(1, 1, Some(1_000 * S), 0)];
        for (placement, want) in [
            (RelaxedDeadlinePlacement::LikeLas, [0, 1]),
            (RelaxedDeadlinePlacement::HeadOfQueue, [1, 0]),
        ] {
            let tias = Tias::new(TiasConfig {
                relaxed: placement,
                ..TiasConfig::default()
            });
            assert!(matches!(
                tias.standing(&jobs[1], TimeMs(0)),
                Standing::Relaxed(_)
            ));
            assert_eq!(ranked(&tias, &jobs, TimeMs(0)), want, "{placement:?}");
        }
        // A queued relaxed job turns critical at D − 2·r̂ = 1,000 s − 120 s.
        let tias = Tias::default();
        assert_eq!(tias.next_review(&jobs[1], TimeMs(0)), Some(TimeMs(880 * S)));
        let mut late = jobs[1];
        late.queued_since = TimeMs(0);
        assert!(matches!(
            tias.standing(&late, TimeMs(880 * S)),
            Standing::Critical(_)
        ));
        assert!(matches!(
            tias.standing(&late, TimeMs(880 * S - 1)),
            Standing::Relaxed(_)
        ));
    }
}
