//! TIAS: two-level, information-agnostic scheduling of deadline and non-deadline jobs.
//!
//! Yang, Lin, Ni, Song, "TIAS", INSAI 2021 publishes only its abstract: level 1 gives each
//! kind of job its own priority calculation; level 2 orders the deadline jobs inside one
//! queue by a *queue urgency* indicator; durations are never known. Everything below the
//! abstract is our design, measured in `docs/tias.md`.
//!
//! # Information
//! TIAS never reads [`JobSpec::declared_length`](crate::JobSpec::declared_length). It knows
//! each job's GPUs `k`, optional deadline `D`, submission time `s`, executed time `e` and
//! attained service; and, learned online from finished deadline jobs, how much of its
//! *window* `W = D − s` a deadline job needs: its window share `S / W`
//! ([`WindowShareSketch`]). A user's deadline says how long they expect the job to take;
//! how far that can be trusted is a property of the workload, so it is learned, not assumed.
//! Of the shares of the jobs some schedule could have met (`S ≤ W`), the high quantile `ρ`
//! (99th percentile) bounds the run time of a deadline job that can still be met,
//! `S ≤ ρ·W`, and the low quantile `ρ₀` (10th) is what it needs at the very least.
//!
//! # Level 1: one priority calculation per kind of job
//! - **Non-deadline jobs**: Tiresias's discretized 2D-LAS, with its queues continued to long
//!   jobs ([`LasConfig::tiresias_with_long_tail`]).
//! - **Deadline jobs** run *as late as is safe*. A deadline job's laxity is the time it can
//!   still wait: `λ = (D − now) − max(ρ·W − e, 0)`. While `λ > σ·W` (the reserve `σ`, a share
//!   of the window) it is **relaxed**: young (2D-LAS queue 0) it is served like any young
//!   job, since it is probably short and deferring it saves little; older, it only uses GPUs
//!   no non-deadline job wants ([`RelaxedDeadlinePlacement`]). Once `λ ≤ σ·W` it is
//!   **critical**: it goes above every non-deadline job that has left queue 0 (and to the
//!   head of queue 0 while it is in it), until it finishes or turns hopeless. Young jobs
//!   keep precedence because they are the short jobs 2D-LAS exists to serve first, and they
//!   leave queue 0 within 3,250 GPU·s. Critical is sticky, so a job that proves itself by
//!   running is never demoted and preempted back and forth.
//! - **Hopeless** deadline jobs have missed whatever happens next: the deadline passed, or
//!   the job waits and `D − now < ρ₀·W − e` (even the least a met job needed no longer
//!   fits). By default ([`HopelessPolicy::Background`]) they run only on GPUs no other job
//!   wants, so they stop delaying jobs that can still be served in time.
//!
//! # Level 2: queue urgency
//! Critical jobs are ordered by the GPU time they commit the cluster to, `k·W`, smallest
//! first, then by deadline and id ([`CriticalOrder`]): when not every at-risk job can be
//! saved, saving the cheap ones saves the most deadlines per GPU-hour taken from others.
//! The key never changes while a job is critical, so two critical jobs never swap places
//! as time passes (a least-laxity order would: the running one's laxity stays, the waiting
//! one's falls, and they would preempt each other on every look).
//!
//! # When keys change
//! A job's key changes only at an event that changes the job, or at a time computed in
//! advance ([`JobOrder::next_review`]): a 2D-LAS threshold crossing, a relaxed job turning
//! critical (`D − σ·W − max(ρ·W − e, 0)` while it waits; `D − σ·W` while it runs, as `λ`
//! is then constant until `e` reaches `ρ·W`), a waiting job turning hopeless
//! (`D − max(ρ₀·W − e, 0)`), its deadline. `ρ` and `ρ₀` are re-published every
//! `republish_every` finished jobs and only when they move; each change advances
//! [`JobOrder::epoch`], so the scheduler re-keys the live jobs once.
//!
//! # Cold start
//! Until `min_samples` feasible deadline jobs have finished, `ρ = 1` and `ρ₀ = 0`: every
//! deadline job is critical from its submission, the safe choice when nothing is known.
//!
//! All arithmetic is integer (u64; shares in 1/1,024ths of a window, applied by shifts),
//! so replays are bit-exact and nothing on the per-job path divides.

use super::las::{QUEUE_MASK, TIRESIAS_FIRST_THRESHOLD_GPU_MS, div_ceil_narrow};
use super::sketch::{SHARE_SHIFT, WHOLE_WINDOW, WindowShareSketch};
use super::{
    EpochEffect, JobOrder, KeyChanges, Las, LasConfig, OrderHooks, Preemption, PriorityKey, key_ms,
};
use crate::event::RejectReason;
use crate::job::{Job, JobState};
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// Flag in [`Job::order_queue`]: this deadline job is hopeless (sticky).
const HOPELESS_FLAG: u8 = 0x80;
/// Flag in [`Job::order_queue`]: this deadline job turned critical (sticky until it finishes
/// or turns hopeless).
const CRITICAL_FLAG: u8 = 0x40;
/// Flag in [`Job::order_queue`]: this critical job needs at most
/// [`TiasConfig::finish_lift_gpu_ms`] more and is ordered at the head of queue 0 (sticky).
const LIFTED_FLAG: u8 = 0x20;

/// First class of the 2D-LAS region: queue `q`, band `b` → `1 + 2q + b`.
const LAS_CLASS: u32 = 1;
/// Critical deadline jobs lifted to the head of a queue.
const CRITICAL_BAND: u32 = 0;
/// Non-deadline jobs, and relaxed deadline jobs served like them.
const LAS_BAND: u32 = 1;
/// Relaxed deadline jobs kept below every 2D-LAS queue (the queue field has 4 bits, so at
/// most 16 queues).
const RELAXED_BELOW_CLASS: u32 = LAS_CLASS + 2 * 16;
/// Hopeless jobs under [`HopelessPolicy::Background`]: after everything, by 2D-LAS queue.
const BACKGROUND_CLASS: u32 = RELAXED_BELOW_CLASS + 1;

/// What TIAS does with a deadline job that can no longer make its deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HopelessPolicy {
    /// Run it only on GPUs no other job wants, in 2D-LAS order among such jobs (default):
    /// it has missed its deadline whatever happens next, and it still finishes.
    #[default]
    Background,
    /// Order it exactly like a non-deadline job (2D-LAS).
    BestEffort,
    /// Reject it ([`RejectReason::DeadlineUnreachable`]) once it is queued.
    Reject,
}

/// Where a deadline job that is not (yet) critical is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelaxedDeadlinePlacement {
    /// Like any job under 2D-LAS: its queue, FIFO by queue-entry time.
    LikeLas,
    /// After every non-deadline job, by deadline: it uses only GPUs non-deadline jobs leave
    /// free, until it turns critical.
    BelowAll,
    /// Like 2D-LAS while in queue 0, then [`BelowAll`](Self::BelowAll) (default): a young
    /// job is probably short, and deferring a short job frees little for others while
    /// every deferral risks its deadline (a placement slower than expected, a burst of
    /// critical jobs).
    #[default]
    LikeLasWhileYoung,
}

/// How critical jobs are ordered among themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CriticalOrder {
    /// Earliest deadline first.
    EarliestDeadline,
    /// Smallest GPU time committed, `k·W`, first (default), then earliest deadline.
    #[default]
    SmallestCommitment,
}

/// Every constant of TIAS, each with its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TiasConfig {
    /// The 2D-LAS queues for non-deadline (and young or best-effort) jobs.
    pub las: LasConfig,
    /// `q` of `ρ`, permille: a deadline job is assumed to need at most what 99 % of the
    /// feasible deadline jobs needed.
    pub share_quantile_permille: u16,
    /// `q` of `ρ₀`, permille: a waiting job that could no longer finish even if it needed
    /// only as little as the 10 % shortest feasible jobs is given up (hopeless). Its chance
    /// was below 10 %, and in an overloaded cluster it would otherwise take GPUs until its
    /// deadline and miss anyway.
    pub hopeless_quantile_permille: u16,
    /// `σ`, permille of the window: the laxity a relaxed job keeps in reserve when it turns
    /// critical, for waiting behind other critical and young jobs and for running slower
    /// than at full speed on a spread placement.
    pub safety_permille: u16,
    /// Feasible finished deadline jobs needed before `ρ` and `ρ₀` are learned.
    pub min_samples: u32,
    /// Finished jobs between two re-publications of `ρ` and `ρ₀`; each change re-keys every
    /// live job once, so this bounds that work to once per this many finishes.
    pub republish_every: u32,
    /// The sketch halves its counts at this many jobs (0 = never forgets).
    pub sketch_halve_at: u32,
    /// The 2D-LAS queue at whose head critical jobs are placed (a critical job still in a
    /// higher queue goes to the head of its own). 1: above every job that has left queue 0.
    pub critical_queue: u8,
    /// Order among critical jobs.
    pub critical_order: CriticalOrder,
    /// What happens to hopeless deadline jobs.
    pub hopeless: HopelessPolicy,
    /// Where relaxed deadline jobs go.
    pub relaxed: RelaxedDeadlinePlacement,
    /// A critical job whose remaining bound `k·(ρ·W − e)` has fallen below this many GPU·ms
    /// goes to the head of queue 0, above young jobs (0 = never). It needs no more than a
    /// young job may take before it leaves queue 0, so 2D-LAS's own reason to serve young
    /// jobs first applies to it; below young jobs, in an overloaded cluster, a deadline job
    /// that has run most of its length is preempted by each new arrival and misses after
    /// the GPUs have done most of its work. Default: 2D-LAS's first threshold.
    pub finish_lift_gpu_ms: u64,
    /// Overload mode, entered at a publication of `ρ`, `ρ₀` when the critical jobs together
    /// ask for more than this many permille of the healthy GPUs (`Σ k` over critical jobs;
    /// 0 = never). In it critical jobs are ranked by their remaining bound `k·(ρ·W − e)` as
    /// 2D-LAS ranks by attained service: not every deadline at risk can be met, and ranking
    /// by what is left saves the most per GPU-hour, while the expensive ones wait behind
    /// non-deadline jobs instead of taking every queue beyond the first from them.
    /// 1,500: the critical jobs alone would need half as many GPUs again as the cluster has.
    /// Deferring deadline jobs piles them up as critical near their laxity, so a demand just
    /// above the cluster is normal where every deadline can still be met (Philly at 128 GPUs
    /// peaks at 1.21 × while EDF meets 99.8 % of its deadlines; Chronus MIX1 at 256 GPUs
    /// reaches 3.5 ×; `docs/tias.md`, session 10).
    pub overload_enter_permille: u16,
    /// The mode is left at a publication where the critical demand is at most this many
    /// permille of the healthy GPUs. 1,000: the critical jobs fit in the cluster again.
    /// Below the entry level, so that a demand hovering near it does not switch the mode
    /// (and re-rank every deadline job) at each publication.
    pub overload_leave_permille: u16,
    /// A change of mode reaches the critical jobs one 64th at a time: job `id` switches
    /// `(1 + id mod 64)` steps of this many ms after the publication that changed the mode.
    /// Switching every critical job at once re-ranks them all in one pass, and the pass then
    /// preempts and starts dozens of jobs in one event (47 on the firmware's 64-GPU stream:
    /// 419,600 Cortex-M4F instructions against issue 12's 60,000). 1,000 ms: the whole
    /// change takes 64 s, against deadline windows of hours.
    pub overload_switch_step_ms: u64,
}

impl Default for TiasConfig {
    fn default() -> Self {
        Self {
            las: LasConfig::tiresias_with_long_tail(),
            share_quantile_permille: 990,
            hopeless_quantile_permille: 100,
            safety_permille: 100,
            min_samples: 32,
            republish_every: 64,
            sketch_halve_at: 4096,
            critical_queue: 1,
            critical_order: CriticalOrder::SmallestCommitment,
            hopeless: HopelessPolicy::Background,
            relaxed: RelaxedDeadlinePlacement::LikeLasWhileYoung,
            finish_lift_gpu_ms: TIRESIAS_FIRST_THRESHOLD_GPU_MS,
            overload_enter_permille: 1500,
            overload_leave_permille: 1000,
            overload_switch_step_ms: 1000,
        }
    }
}

/// What level 1 makes of a job at a given time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No deadline: 2D-LAS.
    NoDeadline,
    /// A deadline job that can still wait; it turns critical at `critical_at` unless an
    /// event changes it first.
    Relaxed {
        /// When its laxity falls to the reserve.
        critical_at: TimeMs,
    },
    /// A deadline job that must run now to be safe.
    Critical,
    /// A deadline job that can no longer make its deadline.
    Hopeless,
}

/// The TIAS job order. Preemptive; skips queue heads that do not fit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tias {
    config: TiasConfig,
    las: Las,
    sketch: WindowShareSketch,
    /// `ρ`, in 1/1,024ths of a window.
    bound_share: u32,
    /// `ρ₀`, in 1/1,024ths of a window.
    least_share: u32,
    /// `σ`, in 1/1,024ths of a window.
    safety_share: u32,
    finished_since_publish: u32,
    epoch: u32,
    /// In overload mode ([`TiasConfig::overload_enter_permille`]).
    overloaded: bool,
    /// When the mode last changed (`None`: never); see
    /// [`TiasConfig::overload_switch_step_ms`].
    mode_changed_at: Option<TimeMs>,
    /// The last epoch changed the mode alone (not `ρ`, `ρ₀`): only critical jobs follow it.
    mode_only_epoch: bool,
    /// `Σ k` over the live jobs marked critical (kept as marks are set and jobs leave).
    critical_gpus: u64,
    /// Healthy GPUs, from [`JobOrder::on_capacity`].
    healthy_gpus: u32,
}

impl Default for Tias {
    fn default() -> Self {
        Self::new(TiasConfig::default())
    }
}

impl Tias {
    /// TIAS with `config` and nothing learned yet.
    pub fn new(config: TiasConfig) -> Self {
        Self {
            config,
            las: Las::new(config.las),
            sketch: WindowShareSketch::new(config.sketch_halve_at),
            bound_share: WHOLE_WINDOW,
            least_share: 0,
            safety_share: permille_to_share(config.safety_permille),
            finished_since_publish: 0,
            epoch: 0,
            overloaded: false,
            mode_changed_at: None,
            mode_only_epoch: false,
            critical_gpus: 0,
            healthy_gpus: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TiasConfig {
        &self.config
    }

    /// What has been learned of finished deadline jobs.
    pub fn sketch(&self) -> &WindowShareSketch {
        &self.sketch
    }

    /// `ρ` and `ρ₀`, the most and the least share of its window a feasible deadline job is
    /// assumed to need, in 1/1,024ths of a window.
    pub fn shares(&self) -> (u32, u32) {
        (self.bound_share, self.least_share)
    }

    /// When the job's laxity falls to the reserve `σ·W`: now or earlier for a critical job;
    /// `None` without a deadline. O(1).
    pub fn critical_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        let remaining = share_of(window, self.bound_share).saturating_sub(job.executed().0);
        let latest = deadline
            .0
            .saturating_sub(share_of(window, self.safety_share));
        let waiting = TimeMs(latest.saturating_sub(remaining));
        if job.state() == JobState::Running && waiting > now {
            // While it runs, `e` grows as fast as the clock: the laxity holds until `e`
            // reaches `ρ·W`, then falls with the clock.
            return Some(TimeMs(latest));
        }
        Some(waiting)
    }

    /// When a waiting deadline job can no longer finish in time even if it needs only
    /// `ρ₀·W`; `None` while it runs (then it is making the most of its time) or before
    /// `ρ₀` is learned. O(1).
    pub fn hopeless_at(&self, job: &Job) -> Option<TimeMs> {
        if self.least_share == 0 || job.state() == JobState::Running {
            return None;
        }
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        let needed = share_of(window, self.least_share).saturating_sub(job.executed().0);
        Some(TimeMs(deadline.0.saturating_sub(needed)))
    }

    /// `ρ·W − e`: how much longer a deadline job may still need, in ms, if it needs no more
    /// than a job that can be met. O(1).
    fn remaining_bound_ms(&self, job: &Job) -> Option<u64> {
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        Some(share_of(window, self.bound_share).saturating_sub(job.executed().0))
    }

    /// `k·(ρ·W − e)`, GPU·ms. O(1).
    fn remaining_bound_gpu_ms(&self, job: &Job) -> u64 {
        self.remaining_bound_ms(job)
            .unwrap_or(0)
            .saturating_mul(u64::from(job.gpus()))
    }

    /// Whether a deadline job's remaining bound `k·(ρ·W − e)` is below
    /// [`TiasConfig::finish_lift_gpu_ms`]. O(1).
    fn nearly_done(&self, job: &Job) -> bool {
        job.deadline().is_some()
            && self.remaining_bound_gpu_ms(job) < self.config.finish_lift_gpu_ms
    }

    /// When a running critical job not yet lifted becomes [`nearly_done`](Self::nearly_done):
    /// its remaining bound falls by `k` GPU·ms per ms. O(1).
    fn lift_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        if job.state() != JobState::Running || job.order_queue & LIFTED_FLAG != 0 {
            return None;
        }
        let lift = if self.overloaded_for(job, now) {
            let queue = self.config.las.queue_for(self.remaining_bound_gpu_ms(job));
            let below = usize::from(queue).checked_sub(1)?;
            self.config.las.thresholds_gpu_ms().get(below).copied()?
        } else {
            self.config.finish_lift_gpu_ms
        };
        if lift == 0 {
            return None;
        }
        let remaining = self.remaining_bound_ms(job)?;
        // Nearly done once `remaining − x < ⌈lift / k⌉`, i.e. after
        // `x = remaining + 1 − ⌈lift / k⌉` more ms.
        let per_gpu = div_ceil_narrow(lift, u64::from(job.gpus().max(1)));
        let wait_ms = remaining.saturating_add(1).checked_sub(per_gpu)?;
        Some(now.saturating_add(crate::time::DurationMs(wait_ms)))
    }

    /// Level 1: how TIAS treats this job at `now`, from its flags and the clock. O(1).
    pub fn standing(&self, job: &Job, now: TimeMs) -> Standing {
        self.standing_and_hopeless_at(job, now).0
    }

    /// [`standing`](Self::standing) and, for a deadline job, [`hopeless_at`](Self::hopeless_at),
    /// each computed once (a review needs both). O(1).
    fn standing_and_hopeless_at(&self, job: &Job, now: TimeMs) -> (Standing, Option<TimeMs>) {
        let Some(deadline) = job.deadline() else {
            return (Standing::NoDeadline, None);
        };
        let hopeless_at = self.hopeless_at(job);
        let given_up = hopeless_at.is_some_and(|at| at <= now);
        let standing = if job.order_queue & HOPELESS_FLAG != 0 || now >= deadline || given_up {
            Standing::Hopeless
        } else if job.order_queue & CRITICAL_FLAG != 0 {
            Standing::Critical
        } else {
            match self.critical_at(job, now) {
                Some(at) if at <= now => Standing::Critical,
                Some(critical_at) => Standing::Relaxed { critical_at },
                None => Standing::NoDeadline,
            }
        };
        (standing, hopeless_at)
    }

    /// Re-learns `ρ` and `ρ₀`; a change advances the epoch. O(B).
    fn publish(&mut self, now: TimeMs) {
        let min = self.config.min_samples.max(1);
        let bound = self
            .sketch
            .feasible_quantile(self.config.share_quantile_permille, min)
            .unwrap_or(WHOLE_WINDOW);
        let least = self
            .sketch
            .feasible_quantile(self.config.hopeless_quantile_permille, min)
            .unwrap_or(0);
        let overloaded = self.overload_after_publication();
        if overloaded != self.overloaded {
            self.mode_changed_at = Some(now);
        }
        let shares_moved = (bound, least) != (self.bound_share, self.least_share);
        if shares_moved || overloaded != self.overloaded {
            self.mode_only_epoch = !shares_moved;
            (self.bound_share, self.least_share, self.overloaded) = (bound, least, overloaded);
            self.epoch = self.epoch.wrapping_add(1);
        }
    }

    /// Whether TIAS is in overload mode after a publication: entered above
    /// [`overload_enter_permille`](TiasConfig::overload_enter_permille) of the healthy GPUs,
    /// left at or below [`overload_leave_permille`](TiasConfig::overload_leave_permille).
    /// O(1).
    fn overload_after_publication(&self) -> bool {
        let enter = self.config.overload_enter_permille;
        if enter == 0 || self.healthy_gpus == 0 {
            return false;
        }
        let level = if self.overloaded {
            self.config.overload_leave_permille.min(enter)
        } else {
            enter
        };
        let demand = self.critical_gpus.saturating_mul(1000);
        demand > u64::from(self.healthy_gpus).saturating_mul(u64::from(level))
    }

    /// Whether TIAS is in overload mode.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// When the last change of mode reaches this job: `(1 + id mod 64)` steps after it.
    /// O(1).
    fn mode_switch_at(&self, job: &Job) -> Option<TimeMs> {
        let at = self.mode_changed_at?;
        let steps = u64::from(job.id().0 % 64) + 1;
        let delay = steps.saturating_mul(self.config.overload_switch_step_ms);
        Some(at.saturating_add(crate::time::DurationMs(delay)))
    }

    /// The mode as this job sees it at `now`: the previous one until the change reaches it.
    /// O(1).
    fn overloaded_for(&self, job: &Job, now: TimeMs) -> bool {
        match self.mode_switch_at(job) {
            Some(at) if now < at => !self.overloaded,
            _ => self.overloaded,
        }
    }

    /// Takes a critical job out of the critical demand (it finished, left or turned
    /// hopeless). O(1).
    fn leave_critical(&mut self, job: &Job) {
        if job.order_queue & CRITICAL_FLAG != 0 {
            self.critical_gpus = self.critical_gpus.saturating_sub(u64::from(job.gpus()));
        }
    }

    fn las_class(job: &Job, band: u32) -> u32 {
        class_of_queue(job.order_queue & QUEUE_MASK, band)
    }

    /// The key of a critical job: the head of its queue or of `critical_queue`, by
    /// [`CriticalOrder`].
    fn critical_key(&self, job: &Job, deadline: TimeMs, now: TimeMs) -> PriorityKey {
        let queue = if job.order_queue & LIFTED_FLAG != 0 {
            0
        } else if self.overloaded_for(job, now) {
            self.config.las.queue_for(self.remaining_bound_gpu_ms(job))
        } else {
            (job.order_queue & QUEUE_MASK).min(self.config.critical_queue)
        };
        let commitment = deadline
            .saturating_since(job.submitted_at())
            .0
            .saturating_mul(u64::from(job.gpus()));
        let primary = match self.config.critical_order {
            CriticalOrder::EarliestDeadline => key_ms(deadline.0),
            CriticalOrder::SmallestCommitment => key_ms(commitment),
        };
        PriorityKey {
            class: class_of_queue(queue, CRITICAL_BAND),
            primary,
            secondary: key_ms(deadline.0),
        }
    }
}

fn class_of_queue(queue: u8, band: u32) -> u32 {
    LAS_CLASS + 2 * u32::from(queue) + band
}

/// `permille` of a window in 1/1,024ths (rounded to nearest). Construction only.
fn permille_to_share(permille: u16) -> u32 {
    (u32::from(permille.min(1000)) * WHOLE_WINDOW + 500) / 1000
}

/// `share/1024` of `window_ms`, saturating. Shifts only.
fn share_of(window_ms: u64, share: u32) -> u64 {
    let share = u64::from(share);
    let whole = (window_ms >> SHARE_SHIFT).saturating_mul(share);
    let part = ((window_ms & (u64::from(WHOLE_WINDOW) - 1)) * share) >> SHARE_SHIFT;
    whole.saturating_add(part)
}

impl JobOrder for Tias {
    fn name(&self) -> &'static str {
        "tias"
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// Keys change only at events and at [`next_review`](JobOrder::next_review) times (a
    /// threshold crossing computed in advance), so periodic ticks change nothing.
    fn time_driven(&self) -> bool {
        false
    }

    /// Keys change only at the review times; `reject` only under [`HopelessPolicy::Reject`];
    /// no `after_pass`.
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            after_pass: false,
            reject: self.config.hopeless == HopelessPolicy::Reject,
            keys: KeyChanges::AtReview,
            ..OrderHooks::ALL
        }
    }

    /// 2D-LAS demotion/promotion, then the sticky critical and hopeless marks. O(K).
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.las.refresh_job(job, now);
        match self.standing(job, now) {
            Standing::Hopeless => {
                self.leave_critical(job);
                job.order_queue =
                    (job.order_queue & !(CRITICAL_FLAG | LIFTED_FLAG)) | HOPELESS_FLAG;
            }
            Standing::Critical => {
                if job.order_queue & CRITICAL_FLAG == 0 {
                    self.critical_gpus = self.critical_gpus.saturating_add(u64::from(job.gpus()));
                }
                job.order_queue |= CRITICAL_FLAG;
                if self.nearly_done(job) {
                    job.order_queue |= LIFTED_FLAG;
                }
            }
            Standing::Relaxed { .. } | Standing::NoDeadline => {}
        }
    }

    /// From the flags `refresh` set and the 2D-LAS queue: O(1).
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        let las = PriorityKey {
            class: Self::las_class(job, LAS_BAND),
            ..Las::las_key(job)
        };
        let Some(deadline) = job.deadline() else {
            return las;
        };
        if job.order_queue & HOPELESS_FLAG != 0 {
            return match self.config.hopeless {
                HopelessPolicy::Background => PriorityKey {
                    class: BACKGROUND_CLASS + u32::from(job.order_queue & QUEUE_MASK),
                    ..las
                },
                HopelessPolicy::BestEffort | HopelessPolicy::Reject => las,
            };
        }
        if job.order_queue & CRITICAL_FLAG != 0 {
            return self.critical_key(job, deadline, now);
        }
        let young = job.order_queue & QUEUE_MASK == 0;
        match self.config.relaxed {
            RelaxedDeadlinePlacement::LikeLas => las,
            RelaxedDeadlinePlacement::LikeLasWhileYoung if young => las,
            RelaxedDeadlinePlacement::BelowAll | RelaxedDeadlinePlacement::LikeLasWhileYoung => {
                PriorityKey {
                    class: RELAXED_BELOW_CLASS,
                    primary: key_ms(deadline.0),
                    secondary: 0,
                }
            }
        }
    }

    /// A queued hopeless job under [`HopelessPolicy::Reject`].
    fn reject(&self, job: &Job, now: TimeMs) -> Option<RejectReason> {
        let rejects = self.config.hopeless == HopelessPolicy::Reject;
        (rejects && self.standing(job, now) == Standing::Hopeless)
            .then_some(RejectReason::DeadlineUnreachable)
    }

    /// Learns the finished deadline job's window share; re-publishes `ρ` and `ρ₀` every
    /// `republish_every` finishes. O(1), O(B) when re-publishing.
    fn on_finished(&mut self, job: &Job, now: TimeMs) {
        if let Some(deadline) = job.deadline() {
            let window = deadline.saturating_since(job.submitted_at()).0;
            self.sketch.record(job.executed().0, window);
            self.leave_critical(job);
        }
        self.finished_since_publish = self.finished_since_publish.saturating_add(1);
        if self.finished_since_publish >= self.config.republish_every.max(1) {
            self.finished_since_publish = 0;
            self.publish(now);
        }
    }

    /// A cancelled or rejected critical job leaves the critical demand. O(1).
    fn on_removed(&mut self, job: &Job, _now: TimeMs) {
        self.leave_critical(job);
    }

    /// The overload mode weighs the critical demand against the healthy GPUs. O(1).
    fn on_capacity(&mut self, healthy_gpus: u32) {
        self.healthy_gpus = healthy_gpus;
    }

    fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Yes: a deadline gang started on GPUs spread over machines runs slower than its
    /// laxity allows for (on Philly every deadline miss TIAS had beyond EDF's was such a
    /// gang; `docs/tias.md`, session 9), while a single-GPU job runs as fast anywhere.
    fn consolidates_gangs(&self) -> bool {
        true
    }

    /// A change of mode alone adds only the review at which it reaches the job: until then
    /// the job sees the previous mode, so its key and refresh are unchanged. A change of
    /// `ρ`, `ρ₀` moves the key only of a job whose standing changes now (it turns critical,
    /// lifted or hopeless) or whose key reads `ρ` (critical in the overload mode); every
    /// other job only gets its new review if that is earlier than the one it has (a later
    /// one is found when the earlier comes): a publication re-keys a few jobs instead of
    /// every deadline job, and moves few timers. O(1).
    fn epoch_effect(&self, job: &Job, now: TimeMs) -> EpochEffect {
        if self.mode_only_epoch {
            return EpochEffect::Review(self.mode_switch_at(job));
        }
        let (standing, hopeless_at) = self.standing_and_hopeless_at(job, now);
        let flags = job.order_queue;
        let key_stays = match standing {
            Standing::Relaxed { .. } | Standing::NoDeadline => true,
            Standing::Critical => {
                flags & CRITICAL_FLAG != 0
                    && (flags & LIFTED_FLAG != 0 || !self.nearly_done(job))
                    && !self.overloaded_for(job, now)
            }
            Standing::Hopeless => false,
        };
        if key_stays {
            EpochEffect::Review(self.review_from(job, now, standing, hopeless_at))
        } else {
            EpochEffect::Rekey
        }
    }

    /// `ρ` and `ρ₀` enter only the standing of a deadline job that is not yet hopeless
    /// ([`critical_at`](Tias::critical_at), [`hopeless_at`](Tias::hopeless_at)): a job
    /// without a deadline is ordered and reviewed by 2D-LAS alone, and a hopeless job (the
    /// mark is sticky) by its 2D-LAS queue. So an epoch re-keys only the deadline jobs that
    /// can still be met: on the Cortex-M4F the worst event fell from 166,680 to
    /// the figure in `docs/tias.md`. A change of the overload mode alone moves only critical
    /// jobs (the review at which the switch reaches them). O(1).
    fn follows_epoch(&self, job: &Job) -> bool {
        let critical_only = self.mode_only_epoch;
        job.deadline().is_some()
            && job.order_queue & HOPELESS_FLAG == 0
            && (!critical_only || job.order_queue & CRITICAL_FLAG != 0)
    }

    /// The 2D-LAS review, the moment a relaxed job turns critical or a waiting one
    /// hopeless, the deadline. O(1).
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let (standing, hopeless_at) = self.standing_and_hopeless_at(job, now);
        self.review_from(job, now, standing, hopeless_at)
    }
}

impl Tias {
    /// [`next_review`](JobOrder::next_review) from the job's standing and `hopeless_at`
    /// at `now`, already worked out. O(1).
    fn review_from(
        &self,
        job: &Job,
        now: TimeMs,
        standing: Standing,
        hopeless_at: Option<TimeMs>,
    ) -> Option<TimeMs> {
        let las = self.las.review_at(job, now);
        let deadline = match standing {
            Standing::Relaxed { critical_at } => job.deadline().map(|d| d.min(critical_at)),
            Standing::Critical => job.deadline(),
            Standing::Hopeless | Standing::NoDeadline => None,
        };
        let hopeless = deadline.and(hopeless_at);
        let (lift, switch) = match standing {
            Standing::Critical => (self.lift_at(job, now), self.mode_switch_at(job)),
            _ => (None, None),
        };
        let after_now = |t: Option<TimeMs>| t.filter(|&t| t > now);
        let earlier = |a: Option<TimeMs>, b: Option<TimeMs>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => a.or(b),
        };
        let review = earlier(after_now(las), after_now(deadline));
        let review = earlier(review, after_now(hopeless));
        earlier(earlier(review, after_now(lift)), after_now(switch))
    }
}

#[cfg(test)]
#[path = "tias_tests.rs"]
mod tests;
