//! Shortest job first (SJF) and shortest remaining time first (SRTF): **oracles**.
//!
//! Both read [`JobSpec::declared_length`](crate::JobSpec::declared_length), the job's true
//! duration, which a real scheduler does not know. They are lower-bound style baselines for
//! the information-agnostic orders (LAS, TIAS), not deployable policies; every table that
//! shows them should say "oracle". Jobs without a declared length sort after every job with
//! one (by submission time, then id).

use super::{JobOrder, KeyChanges, OrderHooks, Preemption, PriorityKey, key_ms};
use crate::job::Job;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// What "length" an oracle order sorts by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LengthMetric {
    /// Run time in ms (Tiresias's `shortest`).
    #[default]
    Time,
    /// Run time × GPUs, in GPU·ms (Tiresias's `shortest-gpu`): the 2D length.
    GpuTime,
}

impl LengthMetric {
    fn scale(self, ms: u64, job: &Job) -> u64 {
        match self {
            LengthMetric::Time => ms,
            LengthMetric::GpuTime => ms.saturating_mul(u64::from(job.gpus())),
        }
    }
}

/// The key shared by both oracles: class 0 with a known length, class 1 (after) without.
fn length_key(length_ms: Option<u64>, job: &Job) -> PriorityKey {
    match length_ms {
        Some(ms) => PriorityKey {
            class: 0,
            primary: key_ms(ms),
            secondary: key_ms(job.submitted_at().0),
        },
        None => PriorityKey {
            class: 1,
            primary: key_ms(job.submitted_at().0),
            secondary: 0,
        },
    }
}

/// ORACLE shortest job first: smallest declared length first, never preempts (a started job
/// runs to completion), skips queue heads that do not fit. O(1) per key.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Sjf {
    /// Time or GPU·time.
    pub metric: LengthMetric,
}

impl JobOrder for Sjf {
    /// `"sjf"`; it is an oracle (reads the true duration).
    fn name(&self) -> &'static str {
        match self.metric {
            LengthMetric::Time => "sjf",
            LengthMetric::GpuTime => "sjf-gpu",
        }
    }

    /// The key reads only the spec and submission time; no other hook is used.
    fn hooks(&self) -> OrderHooks {
        OrderHooks::FIXED_KEY_ONLY
    }

    fn key(&self, job: &Job, _now: TimeMs) -> PriorityKey {
        let length = job.declared_length().map(|d| self.metric.scale(d.0, job));
        length_key(length, job)
    }
}

/// ORACLE shortest remaining time first: smallest `declared_length − executed` first,
/// preemptive (a shorter arrival preempts a longer running job, which keeps its service).
/// O(1) per key.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Srtf {
    /// Time (Tiresias `shortest`) or GPU·time (Tiresias `shortest-gpu`).
    pub metric: LengthMetric,
}

impl JobOrder for Srtf {
    /// `"srtf"`; it is an oracle (reads the true duration).
    fn name(&self) -> &'static str {
        match self.metric {
            LengthMetric::Time => "srtf",
            LengthMetric::GpuTime => "srtf-gpu",
        }
    }

    fn preemption(&self) -> Preemption {
        Preemption::On
    }

    /// Only `key`, which changes as a running job executes: re-keyed every pass.
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            keys: KeyChanges::EveryPass,
            ..OrderHooks::FIXED_KEY_ONLY
        }
    }

    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        let remaining = job
            .declared_remaining_at(now)
            .map(|d| self.metric.scale(d.0, job));
        length_key(remaining, job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::JobId;
    use crate::job::JobSpec;
    use crate::time::DurationMs;

    fn job(id: u32, gpus: u16, len_ms: Option<u64>, executed_ms: u64) -> Job {
        let mut spec = JobSpec::new(JobId(id), gpus);
        spec.declared_length = len_ms.map(DurationMs);
        let mut j = Job::submitted(spec, TimeMs(id.into()));
        j.set_executed(DurationMs(executed_ms));
        j
    }

    /// (order name, metric, [(gpus, length, executed)] → expected rank of ids 0..)
    #[test]
    fn oracles_sort_by_declared_length_unknown_last() {
        type Case = (LengthMetric, bool, [(u16, Option<u64>, u64); 3], [u32; 3]);
        let cases: [Case; 4] = [
            // SJF by time: 50 < 100, unknown last.
            (
                LengthMetric::Time,
                false,
                [(1, Some(100), 0), (8, Some(50), 0), (1, None, 0)],
                [1, 0, 2],
            ),
            // SJF by GPU·time: 1×100 < 8×50.
            (
                LengthMetric::GpuTime,
                false,
                [(1, Some(100), 0), (8, Some(50), 0), (1, None, 0)],
                [0, 1, 2],
            ),
            // SRTF: job 0 has run 90 of 100 → 10 left, before job 1's 50.
            (
                LengthMetric::Time,
                true,
                [(1, Some(100), 90), (1, Some(50), 0), (1, None, 0)],
                [0, 1, 2],
            ),
            // SRTF by GPU·time: 4×10 = 40 < 1×50.
            (
                LengthMetric::GpuTime,
                true,
                [(4, Some(100), 90), (1, Some(50), 0), (1, None, 0)],
                [0, 1, 2],
            ),
        ];
        for (metric, remaining, specs, want) in cases {
            let jobs: [Job; 3] = core::array::from_fn(|i| {
                let (g, l, e) = specs[i];
                job(i as u32, g, l, e)
            });
            let mut ids: [u32; 3] = [0, 1, 2];
            ids.sort_by_key(|&i| {
                let j = &jobs[i as usize];
                let k = if remaining {
                    Srtf { metric }.key(j, TimeMs(0))
                } else {
                    Sjf { metric }.key(j, TimeMs(0))
                };
                (k, i)
            });
            assert_eq!(ids, want, "{metric:?} remaining={remaining}");
        }
    }

    #[test]
    fn names_and_preemption() {
        assert_eq!(Sjf::default().name(), "sjf");
        assert_eq!(
            Srtf {
                metric: LengthMetric::GpuTime
            }
            .name(),
            "srtf-gpu"
        );
        assert_eq!(Sjf::default().preemption(), Preemption::Off);
        assert_eq!(Srtf::default().preemption(), Preemption::On);
    }
}
