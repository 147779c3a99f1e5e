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
use super::{JobOrder, Las, LasConfig, Preemption, PriorityKey, ServiceSketch, key_ms};
use crate::event::RejectReason;
use crate::job::{Job, JobState};
use crate::time::{DurationMs, TimeMs};

/// Flag in [`Job::order_queue`]: this deadline job was found hopeless (sticky).
const HOPELESS_FLAG: u8 = 0x80;

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
    /// A deadline job whose slack is at most κ·r̂: head of the top queue.
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
        if i128::from(a.slack_ms) <= margin {
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

    /// 2D-LAS demotion/promotion, then the sticky hopeless mark. O(log B + K).
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.las.refresh_job(job, now);
        if job.spec.deadline.is_some()
            && job.order_queue & HOPELESS_FLAG == 0
            && matches!(
                self.standing(job, now),
                Standing::BestEffort | Standing::Hopeless
            )
        {
            job.order_queue |= HOPELESS_FLAG;
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
