//! TIAS: two-level, information-agnostic scheduling of deadline and non-deadline jobs.
//!
//! Yang, Lin, Ni, Song, "TIAS", INSAI 2021 publishes only its abstract: level 1 gives each
//! kind of job its own priority calculation; level 2 orders the jobs that compete inside one
//! queue by a common *urgency*; durations are never known. Everything below the abstract is
//! our design, measured in `docs/tias.md`.
//!
//! # Information
//! TIAS never reads [`JobSpec::declared_length`](crate::JobSpec::declared_length). It knows
//! each job's GPUs `k`, optional deadline `D`, submission time `s`, executed time `e` and
//! attained GPU time; it learns online
//! - how much of its *window* `W = D − s` a deadline job needs ([`WindowShareSketch`]): of
//!   the shares of the jobs some schedule could have met (`S ≤ W`), the high quantile `ρ`
//!   (99th percentile) bounds the run time of a deadline job that can still be met,
//!   `S ≤ ρ·W`, and the low quantile `ρ₀` (10th) is what it needs at the very least;
//! - the distribution of job sizes in GPU·ms ([`SizeSketch`]): every finished job, and every
//!   live deadline job as a provisional sample `r·k·W`, since a deadline says how long its
//!   user expects the job to take. From it, a Gittins index table ([`GittinsTable`]).
//!
//! # Level 1: one standing per kind of job
//! - **Non-deadline jobs** are ranked by their Gittins index: the expected completions per
//!   GPU·ms if served next, given the GPU time they have attained (Gittins 1979; Tiresias
//!   §4.1 for jobs of unknown length). Until a table is learned, by Tiresias's discretized
//!   2D-LAS ([`LasConfig::tiresias_with_long_tail`]).
//! - **Deadline jobs** run *as late as is safe*. A deadline job's laxity is the time it can
//!   still wait: `λ = (D − now) − max(ρ·W − e, 0)`. While `λ > σ·W` (the reserve `σ`, a share
//!   of the window) it is **relaxed**: young (2D-LAS queue 0) it is ranked like a
//!   non-deadline job, since it is probably short and deferring it saves little; older, it
//!   only uses GPUs no other job wants ([`RelaxedDeadlinePlacement`]). Once `λ ≤ σ·W` it is
//!   **critical** until it finishes or turns hopeless (sticky, so a job that proves itself
//!   by running is never demoted and preempted back and forth).
//! - **Hopeless** deadline jobs have missed whatever happens next: the deadline passed, or
//!   the job waits and `D − now < ρ₀·W − e`. By default ([`HopelessPolicy::Background`])
//!   they run only on GPUs no other job wants.
//! - **Gangs of a quarter of the cluster or more** are ranked as non-deadline jobs
//!   ([`TiasConfig::big_gang_permille`]): protecting a gang that needs half the cluster for
//!   its whole window blocks dozens of small deadline jobs, and the miss rate counts each job
//!   once (measured: 3.6–5 % of non-deadline JCT on ITP cluster01, at most a few deadlines).
//!
//! # Level 2: one urgency for every job, the unified index
//! A critical job competes with the non-deadline jobs on the same scale: *expected
//! completions per GPU·ms*. If it is feasible it finishes within its remaining bound
//! `k·(ρ·W − e)`, and a met deadline is worth `w` non-deadline completions
//! ([`TiasConfig::deadline_weight`]): its index is `w / (k·(ρ·W − e))`, the bound rounded up
//! to the upper edge of its size bin so the key changes only at bin crossings. When the
//! cluster is overloaded with critical work this ranks the cheap deadlines first (they save
//! the most per GPU·ms), and the expensive ones wait behind short non-deadline jobs instead
//! of taking the cluster from them. A critical job whose bound has fallen below
//! [`TiasConfig::finish_lift_gpu_ms`] is **lifted** above every job. Indices are base-2
//! logarithms in 1/256ths ([`log2_q8`]), so keys compare without a division.
//!
//! # When keys change
//! A job's key changes only at an event that changes the job, or at a time computed in
//! advance ([`JobOrder::next_review`]): a 2D-LAS threshold or size-bin crossing, a relaxed
//! job turning critical, a waiting one hopeless, a critical job's bound crossing a bin edge,
//! its deadline. What TIAS learns is published at once: a new index table with the `ρ` and
//! `ρ₀` of that moment, at most every [`TiasConfig::table_every_ms`], built a few rows per
//! event. It reaches job `id` `(1 + h(id))` steps after it is published, `h` a hash of the id
//! onto 0..64 ([`switch_step`](Tias::switch_step)), so any id scheme (sequential, a stride
//! of 64) is spread over the steps (until then the
//! job reads the previous table, `ρ` and `ρ₀`); [`JobOrder::advance`] moves the steps, each
//! an epoch that re-keys only the jobs it reaches, so no event re-keys every job (a publication
//! that re-keys every deadline job at once costs the Cortex-M4F about 166,000 instructions in
//! one event).
//!
//! # Deadline safety (optional)
//! By default a critical job competes by the index, so an expensive one may wait past the
//! point where it can still finish. [`DeadlineSafety::LatestStart`] ranks a critical job
//! that has reached its latest safe start `D − (ρ·W − e)` above every job but the lifted,
//! by deadline: EDF's misses where EDF meets its deadlines, at a higher non-deadline JCT.
//!
//! # Cold start
//! Until `min_samples` feasible deadline jobs have finished (and a publication came), `ρ = 1`
//! and `ρ₀ = 0`: every deadline job is critical from its submission, the safe choice when
//! nothing is known.
//!
//! All arithmetic is integer (u64; shares in 1/1,024ths of a window, applied by shifts),
//! so replays are bit-exact, and nothing on the per-job path divides by more than 32 bits.

use super::gittins::{GittinsTable, SIZE_BINS, SIZE_EDGES_GPU_MS, SizeSketch, log2_q8, size_bin};
use super::las::{QUEUE_MASK, TIRESIAS_FIRST_THRESHOLD_GPU_MS, div_ceil_narrow};
use super::sketch::{SHARE_SHIFT, WHOLE_WINDOW, WindowShareSketch};
use super::{
    EpochEffect, JobOrder, KeyChanges, Las, LasConfig, OrderHooks, Preemption, PriorityKey, key_ms,
};
use crate::event::RejectReason;
use crate::job::{Job, JobState};
use crate::time::{DurationMs, TimeMs};
use serde::{Deserialize, Serialize};

/// Flag in [`Job::order_queue`]: this deadline job is hopeless (sticky).
const HOPELESS_FLAG: u8 = 0x80;
/// Flag in [`Job::order_queue`]: this deadline job turned critical (sticky until it finishes
/// or turns hopeless).
const CRITICAL_FLAG: u8 = 0x40;
/// Flag in [`Job::order_queue`]: this critical job needs at most
/// [`TiasConfig::finish_lift_gpu_ms`] more and is ranked above every job (sticky).
const LIFTED_FLAG: u8 = 0x20;

/// Critical jobs nearly done ([`LIFTED_FLAG`]), by commitment `k·W`: above everything.
const LIFTED_CLASS: u32 = 0;
/// Under [`DeadlineSafety::LatestStart`], waiting critical jobs at or past their latest safe
/// start, and running jobs that started there: below the lifted, above every other job, by
/// deadline.
const LATEST_START_CLASS: u32 = 1;
/// A job ranked by 2D-LAS (before it reads an index table) in queue `q` has class
/// `LAS_CLASS + 2q`: queue 0 above the index class, the later queues below it, where the
/// critical jobs stood between Tiresias's first and second queues before the index existed.
const LAS_CLASS: u32 = 2;
/// Every job ranked by the unified index (non-deadline, young relaxed, critical, big gangs).
const INDEX_CLASS: u32 = 3;
/// Relaxed deadline jobs kept below every other live job but the hopeless (the queue field
/// has 4 bits, so `LAS_CLASS + 2q` stays below this).
const RELAXED_BELOW_CLASS: u32 = LAS_CLASS + 2 * 16;
/// Hopeless jobs under [`HopelessPolicy::Background`]: after everything, by 2D-LAS queue.
const BACKGROUND_CLASS: u32 = RELAXED_BELOW_CLASS + 1;
/// A new table reaches job `id` after `1 + h(id)` switch steps, `h(id) < SWITCH_STEPS`.
const SWITCH_STEPS: u64 = 64;

/// What TIAS does with a deadline job that can no longer make its deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HopelessPolicy {
    /// Run it only on GPUs no other job wants, in 2D-LAS order among such jobs (default):
    /// it has missed its deadline whatever happens next, and it still finishes.
    #[default]
    Background,
    /// Rank it exactly like a non-deadline job.
    BestEffort,
    /// Reject it ([`RejectReason::DeadlineUnreachable`]) once it is queued.
    Reject,
}

/// Whether a critical deadline job may be kept waiting past its latest safe start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeadlineSafety {
    /// A critical job competes with every other job by the unified index (default): the
    /// cluster's GPU time goes where it saves the most completions, deadlines weighted by
    /// [`TiasConfig::deadline_weight`], so an expensive deadline job may wait behind short
    /// non-deadline jobs and miss.
    #[default]
    Index,
    /// A critical job whose laxity under the bound is gone, `D − now ≤ ρ·W − e` (it must
    /// run from now on to finish by its deadline if it needs `ρ·W`), is ranked above every
    /// job but the lifted ones, by deadline (EDF among them): deadline jobs run as late as
    /// the bound allows and then are never displaced. For workloads whose deadlines matter
    /// more than non-deadline JCT, such as a nightly batch due in the morning. Measured on
    /// the 32 configurations of the development grid and the held-out check
    /// (`scripts/tias-safe-grid.sh`, `docs/tias.md`): misses within EDF's + 0.005 and
    /// non-deadline JCT at most EDF's on every one; against the default, 1.0–5.1 × its
    /// non-deadline JCT, the most where the cluster is overloaded with deadline work, and
    /// there more misses (the default serves the cheap deadlines first).
    LatestStart,
}

/// Where a deadline job that is not (yet) critical is ranked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelaxedDeadlinePlacement {
    /// Like a non-deadline job.
    LikeLas,
    /// After every non-deadline job, by deadline: it uses only GPUs other jobs leave free,
    /// until it turns critical.
    BelowAll,
    /// Like a non-deadline job while in 2D-LAS queue 0, then [`BelowAll`](Self::BelowAll)
    /// (default): a young job is probably short, and deferring a short job frees little for
    /// others while every deferral risks its deadline.
    #[default]
    LikeLasWhileYoung,
}

/// Every constant of TIAS, each with its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TiasConfig {
    /// The 2D-LAS queues: the order before an index table is learned, what "young" means for
    /// a relaxed deadline job, and the order among hopeless jobs.
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
    /// The window-share sketch halves its counts at this many jobs (0 = never forgets).
    pub sketch_halve_at: u32,
    /// What happens to hopeless deadline jobs.
    pub hopeless: HopelessPolicy,
    /// Where relaxed deadline jobs go.
    pub relaxed: RelaxedDeadlinePlacement,
    /// A critical job whose remaining bound `k·(ρ·W − e)` has fallen below this many GPU·ms
    /// is ranked above every job (0 = never). It needs no more than a young job may take
    /// before it leaves 2D-LAS's first queue, and in an overloaded cluster a deadline job
    /// that has run most of its length would otherwise be preempted by each new arrival and
    /// miss after the GPUs have done most of its work. Default: 2D-LAS's first threshold.
    pub finish_lift_gpu_ms: u64,
    /// `w`: how many non-deadline completions a met deadline is worth in the unified index.
    /// 8: the development grid passed at 4, 8 and 16; at 32 the critical jobs take
    /// too much from Chronus MIX1's non-deadline jobs at 256 GPUs (1.05 × LAS's JCT).
    pub deadline_weight: u32,
    /// Deadline jobs of at least this many permille of the cluster's GPUs are ranked as
    /// non-deadline jobs (0 = never). 250: on ITP cluster01, 13 gangs of 64 GPUs and 6 of 32
    /// hold 70 % of all deadline jobs' `k·W`, and only 4 of the 11 largest can be met at all.
    pub big_gang_permille: u16,
    /// Size samples (finished jobs, provisional windows and the pseudo-sample together)
    /// needed before the first index table: fewer give an index of noise.
    pub table_min_samples: u32,
    /// Finished deadline jobs needed before `r`, the run time per window, turns live
    /// deadline jobs' windows into size samples. 8 and 32 measured alike.
    pub ratio_min_deadline_jobs: u32,
    /// A new index table is started at most this often, ms. The table changes keys, so it is
    /// rate-limited like `ρ`; 64 s is short against jobs of hours, and measured as good as
    /// a table per finish.
    pub table_every_ms: u64,
    /// A new table (and the `ρ` of critical jobs' index, published with it) reaches job `id`
    /// `(1 + h(id))` steps of this many ms after it is published (`h` hashes the id onto
    /// 0..64), so a table re-keys a
    /// 64th of the jobs per step instead of every job in one event (switching all at once
    /// preempted and started 47 jobs in one event on the firmware's stream). The
    /// next table is started only once every job has switched.
    pub table_switch_step_ms: u64,
    /// Rows of a new table computed per event while one is being built: a row is O(B) with
    /// 128-bit products, so a whole table (O(B²)) in one event would exceed the Cortex-M4F's
    /// per-event budget.
    pub table_rows_per_event: u8,
    /// A new table keeps the published index of every bin where it moved by at most this
    /// many 1/256ths of an octave, and is not published at all if nothing else moved (nor
    /// `ρ`, `ρ₀`). 4 (1.1 %): bins are √2 apart, so such a change hardly reorders jobs, while
    /// every switch re-keys the jobs whose index changed; in a steady workload the tables
    /// settle and a switch re-keys few jobs (the per-event cost stays flat in the queue).
    pub table_tolerance_log2_q8: u8,
    /// The most jobs one scheduling pass touches ([`JobOrder::jobs_per_pass`]): the walk of
    /// a publication (every live job) and the re-keys of a switch step go in slices of this
    /// many, and a pass makes at most this many decisions, each slice at a follow-up tick
    /// of the same instant, so each job is reached at the instant it would have been and no
    /// event's cost grows with the queue or with how many jobs one instant starts or
    /// preempts. 16: a re-key (refresh, index, ranking move, timer) is the costliest
    /// per-job step on the Cortex-M4F, and 16 of them, or 16 decisions with their
    /// placements, stay under the 60,000 instructions a firmware integrator budgets per
    /// event (`scripts/firmware-check.sh`: 57,240 at worst on its Philly stream).
    pub jobs_per_pass: u16,
    /// Whether critical jobs are kept from waiting past their latest safe start.
    pub deadline_safety: DeadlineSafety,
    /// A running job ranked by its size index (a non-deadline job, a young relaxed one, a
    /// big gang) is ranked as if its index were this many 1/256ths of an octave higher, so
    /// a queued job takes its GPUs only with an index that much above its own: a running
    /// job's Gittins index falls at each √2 size bin it crosses, and without a margin every
    /// fresh arrival outranks the jobs past their first bins (Tiresias's queues, 2.2–2.5 ×
    /// apart, spare jobs the same churn). Each start and preemption then re-keys its job.
    /// 0 here (none): on the Cortex-M4F that re-key per decision takes a 16-decision event
    /// past the 60,000 instructions a firmware integrator budgets (189,120 at worst on
    /// `scripts/firmware-check.sh`'s streams). Hosts use [`TiasConfig::host`]'s 256.
    pub preemption_margin_log2_q8: u16,
}

impl TiasConfig {
    /// The default with a preemption margin of 256 (2 ×, two size bins;
    /// [`preemption_margin_log2_q8`](Self::preemption_margin_log2_q8)): what `gantry`'s
    /// `tias` orders run. Over seeds 0–9 of the development grid (`scripts/tias-seeds.py`)
    /// 153 of 200 runs meet both targets, against 145 without, and the misses target on as
    /// many (180); 384 and 512 meet both on 157 but the misses target on 176 and 168, and
    /// miss the bundled mixed sample's non-deadline JCT target; 768 on 138.
    pub fn host() -> Self {
        Self {
            preemption_margin_log2_q8: 256,
            ..Self::default()
        }
    }
}

impl Default for TiasConfig {
    fn default() -> Self {
        Self {
            las: LasConfig::tiresias_with_long_tail(),
            share_quantile_permille: 990,
            hopeless_quantile_permille: 100,
            safety_permille: 100,
            min_samples: 32,
            sketch_halve_at: 4096,
            hopeless: HopelessPolicy::Background,
            relaxed: RelaxedDeadlinePlacement::LikeLasWhileYoung,
            finish_lift_gpu_ms: TIRESIAS_FIRST_THRESHOLD_GPU_MS,
            deadline_weight: 8,
            big_gang_permille: 250,
            table_min_samples: 32,
            ratio_min_deadline_jobs: 8,
            table_every_ms: 64_000,
            table_switch_step_ms: 1_000,
            table_rows_per_event: 4,
            table_tolerance_log2_q8: 4,
            jobs_per_pass: 16,
            deadline_safety: DeadlineSafety::Index,
            preemption_margin_log2_q8: 0,
        }
    }
}

/// What level 1 makes of a job at a given time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No deadline.
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

/// How a job's key is made, from the marks `refresh` set. Each reads different state, which
/// is what decides whom a publication moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ranking {
    /// By the index table of its attained GPU time (2D-LAS before it reads one).
    Sized,
    /// Critical: by `w / (k·(ρ·W − e))`, which reads `ρ`.
    Critical,
    /// Critical and nearly done: above everything.
    Lifted,
    /// Relaxed and older: below all, by deadline.
    RelaxedBelow,
    /// Hopeless, in the background.
    Background,
}

/// What changed since the last pass, published as one change of the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct EpochChange {
    /// A new index table (with its `ρ`, `ρ₀`) was published: each job whose key its switch
    /// moves gets a review at its switch time.
    published: bool,
    /// The cluster's size, and with it which gangs are big, changed.
    gangs: bool,
}

impl EpochChange {
    /// Both changes: what a job needs that neither has reached. O(1).
    fn union(self, other: Self) -> Self {
        Self {
            published: self.published || other.published,
            gangs: self.gangs || other.gangs,
        }
    }
}

/// The TIAS job order. Preemptive; skips queue heads that do not fit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tias {
    config: TiasConfig,
    sketch: WindowShareSketch,
    /// `ρ`, in 1/1,024ths of a window.
    bound_share: u32,
    /// `ρ₀`, in 1/1,024ths of a window.
    least_share: u32,
    /// `σ`, in 1/1,024ths of a window.
    safety_share: u32,
    epoch: u32,
    /// What the last change of the epoch moved.
    last_change: EpochChange,
    /// What changed since: published at the next pass ([`JobOrder::advance`]), so that
    /// what one event changes reaches the jobs as one epoch.
    pending: EpochChange,
    /// Whether the scheduler's walk has applied `last_change` to every live job
    /// ([`JobOrder::epoch_walked`]); until then a new change is published together with it.
    walked: bool,
    /// What is known of job sizes.
    sizes: SizeSketch,
    /// The index table published last.
    table: GittinsTable,
    /// The table before it, read by a job until the new one reaches it; once every job has
    /// switched, the next table is built here.
    previous: GittinsTable,
    /// Before the second table there is no previous one: a job not yet reached by the first
    /// table is ranked by 2D-LAS.
    previous_is_las: bool,
    /// When `table` was published (`None`: no table yet).
    table_at: Option<TimeMs>,
    /// The newest table has reached the jobs whose switch step `h(id)` is below this (64:
    /// every job).
    /// Moved by the clock ([`catch_up`](Self::catch_up)) at the start of every pass and in
    /// the hooks after which a key or review is read before the pass (a submission, a
    /// change of capacity, whose `GpuDown` preempts); a finish moves it to the steps
    /// before its instant, so the next table starts once the last one reached every job
    /// before the finish.
    switched_steps: u8,
    /// `ρ` before the last publication, read by a job the newest table has not reached yet.
    previous_bound_share: u32,
    /// `ρ₀` before the last publication.
    previous_least_share: u32,
    /// The next row of the table being built into `previous` (`SIZE_BINS`: none is).
    next_row: u8,
    /// The most healthy GPUs seen: the cluster's size, which big gangs are measured against.
    cluster_gpus: u32,
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
            sketch: WindowShareSketch::new(config.sketch_halve_at),
            bound_share: WHOLE_WINDOW,
            least_share: 0,
            safety_share: permille_to_share(config.safety_permille),
            epoch: 0,
            last_change: EpochChange::default(),
            pending: EpochChange::default(),
            walked: true,
            sizes: SizeSketch::new(),
            table: GittinsTable::new(),
            previous: GittinsTable::new(),
            previous_is_las: true,
            table_at: None,
            switched_steps: SWITCH_STEPS as u8,
            previous_bound_share: WHOLE_WINDOW,
            previous_least_share: 0,
            next_row: SIZE_BINS as u8,
            cluster_gpus: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TiasConfig {
        &self.config
    }

    /// What has been learned of finished deadline jobs' window shares.
    pub fn sketch(&self) -> &WindowShareSketch {
        &self.sketch
    }

    /// What has been learned of job sizes.
    pub fn sizes(&self) -> &SizeSketch {
        &self.sizes
    }

    /// The index table published last and when (`None` before the first).
    pub fn table(&self) -> Option<(&GittinsTable, TimeMs)> {
        self.table_at.map(|at| (&self.table, at))
    }

    /// `ρ` and `ρ₀`, the most and the least share of its window a feasible deadline job is
    /// assumed to need, in 1/1,024ths of a window, as last published.
    pub fn shares(&self) -> (u32, u32) {
        (self.bound_share, self.least_share)
    }

    /// `ρ` and `ρ₀` as this job reads them: published with the newest table once that has
    /// reached the job, the ones before until then. O(1).
    fn shares_for(&self, job: &Job) -> (u32, u32) {
        if self.has_switched(job) {
            (self.bound_share, self.least_share)
        } else {
            (self.previous_bound_share, self.previous_least_share)
        }
    }

    /// When the job's laxity falls to the reserve `σ·W`: now or earlier for a critical job;
    /// `None` without a deadline. O(1).
    pub fn critical_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        let remaining =
            share_of(window, self.shares_for(job).0).saturating_sub(job.executed_at(now).0);
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
    pub fn hopeless_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let least_share = self.shares_for(job).1;
        if least_share == 0 || job.state() == JobState::Running {
            return None;
        }
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        let needed = share_of(window, least_share).saturating_sub(job.executed_at(now).0);
        Some(TimeMs(deadline.0.saturating_sub(needed)))
    }

    /// `ρ·W − e` for `ρ = bound_share`: how much longer a deadline job may still need, in
    /// ms, if it needs no more than a job that can be met. O(1).
    fn remaining_bound_ms(job: &Job, bound_share: u32, now: TimeMs) -> Option<u64> {
        let deadline = job.deadline()?;
        let window = deadline.saturating_since(job.submitted_at()).0;
        Some(share_of(window, bound_share).saturating_sub(job.executed_at(now).0))
    }

    /// `k·(ρ·W − e)`, GPU·ms, under the current `ρ`. O(1).
    fn remaining_bound_gpu_ms(&self, job: &Job, now: TimeMs) -> u64 {
        Self::remaining_bound_ms(job, self.shares_for(job).0, now)
            .unwrap_or(0)
            .saturating_mul(u64::from(job.gpus()))
    }

    /// Whether a deadline job's remaining bound `k·(ρ·W − e)` is below
    /// [`TiasConfig::finish_lift_gpu_ms`]. O(1).
    fn nearly_done(&self, job: &Job, now: TimeMs) -> bool {
        job.deadline().is_some()
            && self.remaining_bound_gpu_ms(job, now) < self.config.finish_lift_gpu_ms
    }

    /// When a running job whose remaining bound is `remaining_ms` on `k` GPUs has less than
    /// `gpu_ms` left: its bound falls by `k` GPU·ms per ms. `None` if it never will (`gpu_ms`
    /// is 0). O(1).
    fn bound_below_at(now: TimeMs, remaining_ms: u64, gpus: u16, gpu_ms: u64) -> Option<TimeMs> {
        // Below once `remaining − x < ⌈gpu_ms / k⌉`, i.e. after
        // `x = remaining + 1 − ⌈gpu_ms / k⌉` more ms.
        let per_gpu = div_ceil_narrow(gpu_ms, u64::from(gpus.max(1)));
        let wait_ms = remaining_ms.saturating_add(1).checked_sub(per_gpu)?;
        Some(now.saturating_add(DurationMs(wait_ms)))
    }

    /// When a running critical job not yet lifted becomes [`nearly_done`](Self::nearly_done).
    /// O(1).
    fn lift_at(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let lift = self.config.finish_lift_gpu_ms;
        if job.state() != JobState::Running || job.order_queue & LIFTED_FLAG != 0 || lift == 0 {
            return None;
        }
        let remaining = Self::remaining_bound_ms(job, self.shares_for(job).0, now)?;
        Self::bound_below_at(now, remaining, job.gpus(), lift)
    }

    /// Under [`DeadlineSafety::LatestStart`], the latest time a critical job can still
    /// (re)start and finish by its deadline if it needs `ρ·W`: `D − (ρ·W − e)`. While it
    /// runs this moves with the clock, so a job is past it from the moment it waits past it
    /// until it finishes (or the bound is learned lower). `None` in the default mode,
    /// without a deadline, or once `e ≥ ρ·W` (then [`nearly_done`](Self::nearly_done)
    /// lifts it). O(1).
    fn latest_start(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        if self.config.deadline_safety != DeadlineSafety::LatestStart {
            return None;
        }
        let deadline = job.deadline()?;
        let remaining = Self::remaining_bound_ms(job, self.shares_for(job).0, now)?;
        (remaining > 0).then(|| TimeMs(deadline.0.saturating_sub(remaining)))
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
        let hopeless_at = self.hopeless_at(job, now);
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

    /// Whether the job is a gang of at least [`TiasConfig::big_gang_permille`] of the
    /// cluster. O(1).
    fn big_gang(&self, job: &Job) -> bool {
        let permille = u64::from(self.config.big_gang_permille);
        permille > 0
            && self.cluster_gpus > 0
            && u64::from(job.gpus()) * 1000 >= permille * u64::from(self.cluster_gpus)
    }

    /// How the job's key is made, from the marks `refresh` set. O(1).
    fn ranking(&self, job: &Job) -> Ranking {
        let flags = job.order_queue;
        if job.deadline().is_none() {
            return Ranking::Sized;
        }
        if flags & HOPELESS_FLAG != 0 {
            return match self.config.hopeless {
                HopelessPolicy::Background => Ranking::Background,
                HopelessPolicy::BestEffort | HopelessPolicy::Reject => Ranking::Sized,
            };
        }
        if self.big_gang(job) {
            return Ranking::Sized;
        }
        if flags & LIFTED_FLAG != 0 {
            return Ranking::Lifted;
        }
        if flags & CRITICAL_FLAG != 0 {
            return Ranking::Critical;
        }
        let young = flags & QUEUE_MASK == 0;
        match self.config.relaxed {
            RelaxedDeadlinePlacement::LikeLas => Ranking::Sized,
            RelaxedDeadlinePlacement::LikeLasWhileYoung if young => Ranking::Sized,
            RelaxedDeadlinePlacement::BelowAll | RelaxedDeadlinePlacement::LikeLasWhileYoung => {
                Ranking::RelaxedBelow
            }
        }
    }

    /// The switch step at which the newest table reaches job `id`: the top 6 bits of
    /// `(id ^ id >> 16) · 0x9E37_79B1` (Fibonacci hashing, after folding the high half onto
    /// the low one). Ids are the caller's: `id mod 64` would put ids 0, 64, 128, … all on
    /// one step and re-key every job in one event, while the product's top bits spread any
    /// arithmetic progression of ids evenly over the 64 steps (120 jobs of stride 1, 64 or
    /// 65,536: at most 3 on one step). O(1), one 32-bit multiplication.
    fn switch_step(job: &Job) -> u8 {
        let id = job.id().0;
        let mixed = (id ^ (id >> 16)).wrapping_mul(0x9E37_79B1);
        (mixed >> (32 - SWITCH_STEPS.trailing_zeros())) as u8
    }

    /// Whether the newest table (and index `ρ`) has reached this job. O(1).
    fn has_switched(&self, job: &Job) -> bool {
        Self::switch_step(job) < self.switched_steps
    }

    /// The table this job reads: the newest once it has reached the job, the one before
    /// until then; `None` means 2D-LAS. O(1).
    fn table_for(&self, job: &Job) -> Option<&GittinsTable> {
        self.table_at?;
        if self.has_switched(job) {
            Some(&self.table)
        } else if self.previous_is_las {
            None
        } else {
            Some(&self.previous)
        }
    }

    /// Moves the table switch to the steps due by `now`: step `k` (from 1) is due
    /// `k · table_switch_step_ms` after the publication. One division per call (not per
    /// job). O(1).
    #[inline(never)]
    fn catch_up(&mut self, now: TimeMs) {
        let Some(at) = self.table_at else {
            return;
        };
        let elapsed_ms = now.saturating_since(at).0;
        let due = elapsed_ms
            .checked_div(self.config.table_switch_step_ms)
            .unwrap_or(SWITCH_STEPS)
            .min(SWITCH_STEPS) as u8;
        self.switched_steps = self.switched_steps.max(due);
    }

    /// When the job switches to the newest table: `(1 + h(id))` steps after its
    /// publication (`None` once it has, or before the first table). O(1).
    fn switch_at(&self, job: &Job) -> Option<TimeMs> {
        if self.has_switched(job) {
            return None;
        }
        self.step_due_at(Self::switch_step(job))
    }

    /// When the switch reaches the jobs of step `step` (`h(id)`): `step + 1` steps of
    /// `table_switch_step_ms` after the publication (`None` before the first table). O(1).
    fn step_due_at(&self, step: u8) -> Option<TimeMs> {
        let steps = u64::from(step) + 1;
        let delay = steps.saturating_mul(self.config.table_switch_step_ms);
        Some(self.table_at?.saturating_add(DurationMs(delay)))
    }

    /// When the next step of the table switch is due. O(1).
    #[cfg(test)]
    fn next_step_at(&self) -> Option<TimeMs> {
        if u64::from(self.switched_steps) >= SWITCH_STEPS {
            return None;
        }
        self.step_due_at(self.switched_steps)
    }

    /// The key of a job ranked by size: its index in the table it reads, or 2D-LAS. O(log B).
    fn sized_key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        match self.table_for(job) {
            Some(table) => PriorityKey {
                class: INDEX_CLASS,
                primary: -i64::from(table.log_index(job.attained_gpu_ms_at(now)))
                    - self.running_margin(job),
                secondary: key_ms(job.submitted_at().0),
            },
            None => PriorityKey {
                class: class_of_queue(job.order_queue & QUEUE_MASK),
                ..Las::las_key(job)
            },
        }
    }

    /// What a running job's index is raised by ([`TiasConfig::preemption_margin_log2_q8`]),
    /// in the key's units; 0 for a queued job. O(1).
    fn running_margin(&self, job: &Job) -> i64 {
        if job.state() == JobState::Running {
            i64::from(self.config.preemption_margin_log2_q8)
        } else {
            0
        }
    }

    /// The size bin of a critical job's remaining bound under `ρ = bound_share`. O(log B).
    fn bound_bin(job: &Job, bound_share: u32, now: TimeMs) -> usize {
        let remaining = Self::remaining_bound_ms(job, bound_share, now).unwrap_or(0);
        Self::bin_of_bound(remaining, job.gpus())
    }

    /// The size bin of a remaining bound of `remaining_ms` on `gpus` GPUs. O(log B).
    fn bin_of_bound(remaining_ms: u64, gpus: u16) -> usize {
        size_bin(remaining_ms.saturating_mul(u64::from(gpus)))
    }

    /// A critical job's key: `w / (k·(ρ·W − e))` as a log-index, the bound rounded up to its
    /// bin's upper edge, so that it changes only when the bound crosses a bin edge. `ρ` is
    /// the one published with the table the job reads, so a new `ρ` reaches critical jobs a
    /// 64th at a time, as a table does. O(log B).
    fn critical_key(&self, job: &Job, deadline: TimeMs, now: TimeMs) -> PriorityKey {
        let bin = Self::bound_bin(job, self.shares_for(job).0, now);
        let bound = SIZE_EDGES_GPU_MS
            .get(bin + 1)
            .copied()
            .unwrap_or(SIZE_EDGES_GPU_MS[SIZE_BINS - 1]);
        let weight = log2_q8(u128::from(self.config.deadline_weight.max(1)));
        let index = weight - log2_q8(u128::from(bound));
        PriorityKey {
            class: INDEX_CLASS,
            primary: -i64::from(index),
            secondary: key_ms(deadline.0),
        }
    }

    /// A lifted job's key: by the GPU time it commits the cluster to, `k·W`, smallest first
    /// (saving the cheap ones saves the most deadlines per GPU-hour), then by deadline.
    fn lifted_key(job: &Job, deadline: TimeMs) -> PriorityKey {
        let commitment = deadline
            .saturating_since(job.submitted_at())
            .0
            .saturating_mul(u64::from(job.gpus()));
        PriorityKey {
            class: LIFTED_CLASS,
            primary: key_ms(commitment),
            secondary: key_ms(deadline.0),
        }
    }

    /// When a running job ranked by an index table next crosses into a size bin. O(log B).
    fn sized_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        if self.table_for(job).is_none() || job.state() != JobState::Running {
            return None;
        }
        let attained = job.attained_gpu_ms_at(now);
        let edge = *SIZE_EDGES_GPU_MS.get(size_bin(attained) + 1)?;
        let wait_ms = div_ceil_narrow(edge - attained, u64::from(job.gpus().max(1)));
        Some(now.saturating_add(DurationMs(wait_ms)))
    }

    /// Whether the table switch changes this job's index (from 2D-LAS it always does). O(log B).
    fn switch_moves(&self, job: &Job, now: TimeMs) -> bool {
        let attained = job.attained_gpu_ms_at(now);
        self.previous_is_las || self.previous.log_index(attained) != self.table.log_index(attained)
    }

    /// When a running critical job's bound falls into the next bin down. O(log B).
    fn critical_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        if job.state() != JobState::Running {
            return None;
        }
        let remaining = Self::remaining_bound_ms(job, self.shares_for(job).0, now)?;
        // The lower edge of the bound's bin ([`bound_bin`](Self::bound_bin)).
        let edge = SIZE_EDGES_GPU_MS[Self::bin_of_bound(remaining, job.gpus())];
        if edge == 0 {
            return None;
        }
        Self::bound_below_at(now, remaining, job.gpus(), edge)
    }

    /// `ρ` and `ρ₀` from what the window-share sketch holds now. O(B).
    fn learned_shares(&self) -> (u32, u32) {
        let min = self.config.min_samples.max(1);
        let bound = self
            .sketch
            .feasible_quantile(self.config.share_quantile_permille, min)
            .unwrap_or(WHOLE_WINDOW);
        let least = self
            .sketch
            .feasible_quantile(self.config.hopeless_quantile_permille, min)
            .unwrap_or(0);
        (bound, least)
    }

    /// Starts a new table if none is being built, the last one has reached every job and
    /// is old enough, and enough sizes are known; then computes this event's rows, and
    /// publishes the table (with the current `ρ` for critical jobs' index) when its last
    /// row is done. Publishing changes no key: every job reads the table before it until
    /// the switch reaches it ([`JobOrder::advance`]; with steps of 0 ms, at once, and the
    /// keys given before move at the pass's epoch). O(B log B) plus
    /// `table_rows_per_event` rows of O(B).
    fn build_table(&mut self, now: TimeMs, may_start: bool) {
        let building = usize::from(self.next_row) < SIZE_BINS;
        if !building {
            let every = DurationMs(self.config.table_every_ms);
            let switched = u64::from(self.switched_steps) >= SWITCH_STEPS;
            let due = self
                .table_at
                .is_none_or(|at| now >= at.saturating_add(every));
            if !(may_start && switched && due) {
                return;
            }
        }
        let sizes = self.sizes.blended(self.config.ratio_min_deadline_jobs);
        if !building {
            if sizes.total() < u64::from(self.config.table_min_samples) {
                return;
            }
            self.next_row = 0;
        }
        for _ in 0..self.config.table_rows_per_event.max(1) {
            let row = usize::from(self.next_row);
            if row >= SIZE_BINS {
                break;
            }
            self.previous.compute_row(&sizes, row);
            self.next_row = self.next_row.saturating_add(1);
        }
        if usize::from(self.next_row) < SIZE_BINS {
            return;
        }
        let tolerance = i32::from(self.config.table_tolerance_log2_q8);
        if self.table_at.is_some() {
            self.previous.settle_towards(&self.table, tolerance);
        }
        let shares = self.learned_shares();
        let unchanged = self.previous == self.table && shares == self.shares();
        if self.table_at.is_some() && unchanged {
            // Nothing to publish: the next table is due 64 s from now.
            self.table_at = Some(now);
            return;
        }
        core::mem::swap(&mut self.table, &mut self.previous);
        self.previous_is_las = self.table_at.is_none();
        self.table_at = Some(now);
        self.switched_steps = 0;
        self.pending.published = true;
        self.previous_bound_share = self.bound_share;
        self.previous_least_share = self.least_share;
        (self.bound_share, self.least_share) = shares;
        // The steps due at the publication itself (all of them with steps of 0 ms): a job
        // submitted in this event is then refreshed under the `ρ` it will read at the
        // pass, not latched critical under the previous one before the pass's `advance`.
        self.catch_up(now);
    }

    /// The deadline job's GPUs and window, for its provisional size sample.
    fn window_sample(job: &Job) -> Option<(u16, u64)> {
        let deadline = job.deadline()?;
        Some((job.gpus(), deadline.saturating_since(job.submitted_at()).0))
    }

    /// Whether the switch to the newest table, `ρ` and `ρ₀` can move this job's key, refresh
    /// or review: a deadline job not yet hopeless if `ρ` or `ρ₀` moved (its standing reads
    /// them), a job ranked by size whose index differs in the two tables (from 2D-LAS,
    /// always). In a steady workload the tables settle, and a switch re-keys few jobs.
    /// O(log B).
    fn switch_moves_key(&self, job: &Job, now: TimeMs) -> bool {
        let meetable = job.deadline().is_some() && job.order_queue & HOPELESS_FLAG == 0;
        let shares_moved = (self.previous_bound_share, self.previous_least_share)
            != (self.bound_share, self.least_share);
        (meetable && shares_moved)
            || (self.ranking(job) == Ranking::Sized && self.switch_moves(job, now))
    }
}

/// `LAS_CLASS + 2q`: see [`LAS_CLASS`].
fn class_of_queue(queue: u8) -> u32 {
    LAS_CLASS + 2 * u32::from(queue)
}

/// The earlier of two optional times.
fn earlier(a: Option<TimeMs>, b: Option<TimeMs>) -> Option<TimeMs> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
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
        match self.config.deadline_safety {
            DeadlineSafety::Index => "tias",
            DeadlineSafety::LatestStart => "tias-deadline-safe",
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

    /// 2D-LAS demotion/promotion, then the sticky critical, lifted and hopeless marks. O(K).
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.config.las.refresh_job(job, now);
        match self.standing(job, now) {
            Standing::Hopeless => {
                job.order_queue =
                    (job.order_queue & !(CRITICAL_FLAG | LIFTED_FLAG)) | HOPELESS_FLAG;
            }
            Standing::Critical => {
                job.order_queue |= CRITICAL_FLAG;
                if self.nearly_done(job, now) {
                    job.order_queue |= LIFTED_FLAG;
                }
            }
            Standing::Relaxed { .. } | Standing::NoDeadline => {}
        }
    }

    /// From the marks `refresh` set, the table the job reads and the index `ρ` published with
    /// it: O(log B).
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        let Some(deadline) = job.deadline() else {
            return self.sized_key(job, now);
        };
        match self.ranking(job) {
            Ranking::Sized => self.sized_key(job, now),
            Ranking::Critical if self.latest_start(job, now).is_some_and(|at| at <= now) => {
                PriorityKey {
                    class: LATEST_START_CLASS,
                    primary: key_ms(deadline.0),
                    secondary: 0,
                }
            }
            Ranking::Critical => self.critical_key(job, deadline, now),
            Ranking::Lifted => Self::lifted_key(job, deadline),
            Ranking::RelaxedBelow => PriorityKey {
                class: RELAXED_BELOW_CLASS,
                primary: key_ms(deadline.0),
                secondary: 0,
            },
            Ranking::Background => PriorityKey {
                class: BACKGROUND_CLASS + u32::from(job.order_queue & QUEUE_MASK),
                ..Las::las_key(job)
            },
        }
    }

    /// A queued hopeless job under [`HopelessPolicy::Reject`].
    fn reject(&self, job: &Job, now: TimeMs) -> Option<RejectReason> {
        let rejects = self.config.hopeless == HopelessPolicy::Reject;
        (rejects && self.standing(job, now) == Standing::Hopeless)
            .then_some(RejectReason::DeadlineUnreachable)
    }

    /// A deadline job not yet marked hopeless that its state change made hopeless: a
    /// running job is never hopeless (it makes the most of its time), so a preemption (a
    /// GPU failure, a job of higher priority) with less than `ρ₀·W − e` left before its
    /// deadline makes it hopeless at that instant, which no review announced. Without a
    /// re-key it would keep its critical or lifted key and take GPUs back from the jobs
    /// that preempted it (and under [`HopelessPolicy::Reject`] be rejected out of rank
    /// order). And a job ranked by its size index once it starts or leaves its GPUs, since
    /// its key carries the preemption margin only while it runs. O(1).
    fn state_change_rekeys(&self, job: &Job, now: TimeMs) -> bool {
        let margin_moves = self.config.preemption_margin_log2_q8 != 0
            && self.ranking(job) == Ranking::Sized
            && self.table_for(job).is_some();
        margin_moves
            || (job.deadline().is_some()
                && job.order_queue & HOPELESS_FLAG == 0
                && self.standing(job, now) == Standing::Hopeless)
    }

    /// A deadline job's window becomes a provisional size sample; a table being built gets
    /// this event's rows. O(B log B) plus the rows.
    fn on_submitted(&mut self, job: &Job, now: TimeMs) {
        self.catch_up(now);
        if let Some((gpus, window_ms)) = Self::window_sample(job) {
            self.sizes.add_window(gpus, window_ms);
        }
        self.build_table(now, false);
    }

    /// Learns the job's size (replacing its provisional sample) and, for a deadline job, its
    /// window share; starts or continues a table (with which `ρ`, `ρ₀` are re-published).
    /// O(B log B) plus the rows, O(B) more when publishing.
    fn on_finished(&mut self, job: &Job, now: TimeMs) {
        // The steps before this instant have come; those at it are taken at its pass.
        if let Some(before) = now.0.checked_sub(1) {
            self.catch_up(TimeMs(before));
        }
        let executed_ms = job.executed_at(now).0;
        let window = Self::window_sample(job);
        if let Some((gpus, window_ms)) = window {
            self.sizes.remove_window(gpus, window_ms);
            self.sketch.record(executed_ms, window_ms);
        }
        let run_and_window = window.map(|(_, window_ms)| (executed_ms, window_ms));
        self.sizes
            .record_finished(job.attained_gpu_ms_at(now), run_and_window);
        self.build_table(now, true);
    }

    /// A cancelled or rejected deadline job's provisional size sample goes. O(log B).
    fn on_removed(&mut self, job: &Job, _now: TimeMs) {
        if let Some((gpus, window_ms)) = Self::window_sample(job) {
            self.sizes.remove_window(gpus, window_ms);
        }
    }

    /// Big gangs are measured against the cluster's size: the most healthy GPUs seen (a
    /// failure does not make a gang big). O(1).
    fn on_capacity(&mut self, healthy_gpus: u32, now: TimeMs) {
        self.catch_up(now);
        if healthy_gpus > self.cluster_gpus {
            self.cluster_gpus = healthy_gpus;
            self.pending.gangs |= self.config.big_gang_permille > 0;
        }
    }

    /// Moves the table switch to the steps due by `now` (job `id` switches `(1 + h(id))`
    /// steps after the publication: a review of its own, not an epoch), and publishes what
    /// changed since the last pass (a new table, the cluster's size) as one change of the
    /// epoch. O(1).
    fn advance(&mut self, now: TimeMs) {
        self.catch_up(now);
        if self.pending != EpochChange::default() {
            // A walk not yet done restarts under the new epoch: the jobs it had not reached
            // need the earlier change too (an extra re-key is never wrong).
            self.last_change = if self.walked {
                self.pending
            } else {
                self.last_change.union(self.pending)
            };
            self.pending = EpochChange::default();
            self.walked = false;
            self.epoch = self.epoch.wrapping_add(1);
        }
    }

    /// [`TiasConfig::jobs_per_pass`] (at least 1).
    fn jobs_per_pass(&self) -> usize {
        usize::from(self.config.jobs_per_pass.max(1))
    }

    /// The last change has reached every live job: the next one is published alone.
    fn epoch_walked(&mut self) {
        self.walked = true;
    }

    fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Yes: a deadline gang started on GPUs spread over machines runs slower than its
    /// laxity allows for (on Philly every deadline miss TIAS had beyond EDF's was such a
    /// gang), while a single-GPU job runs as fast anywhere.
    fn consolidates_gangs(&self) -> bool {
        true
    }

    /// A change of the cluster's size re-keys the deadline jobs; a publication gives each
    /// job whose key, refresh or review its switch moves (a deadline job that can still be
    /// met, a job whose index differs in the new table) a review at its switch time, or
    /// re-keys it if that has come (switch steps of 0 ms). O(log B).
    fn epoch_effect(&self, job: &Job, now: TimeMs) -> EpochEffect {
        let gangs = self.last_change.gangs && job.deadline().is_some();
        let moved = self.last_change.published && self.switch_moves_key(job, now);
        match self.switch_at(job) {
            _ if gangs => EpochEffect::Rekey,
            // Switched already (steps of 0 ms, or a pass after its step): now.
            None if moved => EpochEffect::Rekey,
            Some(at) if moved => EpochEffect::Review(Some(at)),
            _ => EpochEffect::Review(None),
        }
    }

    /// A publication can move the jobs that read a table, `ρ` or `ρ₀`; a change of the
    /// cluster's size every deadline job. O(1).
    fn follows_epoch(&self, job: &Job) -> bool {
        let deadline = job.deadline().is_some();
        let meetable = deadline && job.order_queue & HOPELESS_FLAG == 0;
        (self.last_change.gangs && deadline)
            || (self.last_change.published && (meetable || self.ranking(job) == Ranking::Sized))
    }

    /// The 2D-LAS review, the size-bin crossing of a job ranked by size, the bound's bin
    /// crossing and the lift of a critical job, the moment a relaxed job turns critical or
    /// a waiting one hopeless, the deadline, and the job's switch to the newest table if
    /// that moves its key. O(log B).
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        let (standing, hopeless_at) = self.standing_and_hopeless_at(job, now);
        self.review_from(job, now, standing, hopeless_at)
    }
}

impl Tias {
    /// [`next_review`](JobOrder::next_review) from the job's standing and `hopeless_at`
    /// at `now`, already worked out. O(log B).
    fn review_from(
        &self,
        job: &Job,
        now: TimeMs,
        standing: Standing,
        hopeless_at: Option<TimeMs>,
    ) -> Option<TimeMs> {
        let las = self.config.las.review_at(job, now);
        let deadline = match standing {
            Standing::Relaxed { critical_at } => job.deadline().map(|d| d.min(critical_at)),
            Standing::Critical => job.deadline(),
            Standing::Hopeless | Standing::NoDeadline => None,
        };
        let hopeless = deadline.and(hopeless_at);
        let lift = match standing {
            Standing::Critical => self.lift_at(job, now),
            _ => None,
        };
        let ranked = match self.ranking(job) {
            Ranking::Sized => self.sized_review(job, now),
            Ranking::Critical => self.critical_review(job, now),
            Ranking::Lifted | Ranking::RelaxedBelow | Ranking::Background => None,
        };
        let switch = self
            .switch_at(job)
            .filter(|_| self.switch_moves_key(job, now));
        // A waiting critical job reaches its latest start (a running one keeps its distance).
        let waiting = job.state() != JobState::Running;
        let latest_start = match standing {
            Standing::Critical if waiting => self.latest_start(job, now),
            _ => None,
        };
        let after_now = |t: Option<TimeMs>| t.filter(|&t| t > now);
        let review = earlier(after_now(las), after_now(deadline));
        let review = earlier(review, after_now(latest_start));
        let review = earlier(review, after_now(hopeless));
        let review = earlier(review, after_now(switch));
        earlier(earlier(review, after_now(lift)), after_now(ranked))
    }
}

#[cfg(test)]
#[path = "tias_tests.rs"]
mod tests;
