//! Job dependencies (`sbatch --dependency`): gantry schedules a held job only once what it
//! depends on is met.
//!
//! Slurm tests a job's dependencies only while the job is eligible to start, never while it
//! is held, so the states `squeue` shows for a held job's items (`afterok:7(unfulfilled)`)
//! stay as they were at submission. gantry reads the items and judges each from the
//! parent jobs' states in its own poll, by Slurm's rules (`sbatch(1)`, *--dependency*):
//!
//! | item | met when | never met when |
//! |---|---|---|
//! | `after:J[+m]` | J started (or was cancelled before it started), `m` minutes ago | — |
//! | `afterany:J` | J ended, in any state | — |
//! | `afterok:J` | J ended `COMPLETED` | J ended otherwise |
//! | `afternotok:J` | J ended otherwise than `COMPLETED` | J ended `COMPLETED` |
//! | `singleton` | no other job of its name and user runs, is suspended, or waits with a lower id | — |
//!
//! `J` is a job, an array's task (`A_k`) or every task of an array (`A_*`). A parent Slurm
//! no longer lists (purged after `MinJobAge`) counts as met, as Slurm lifts such an item.
//! Items joined by `,` must all be met, by `?` any one. A job still `COMPLETING` has not
//! ended yet for gantry (its final state shows at the next poll). `singleton` is Slurm's
//! own test (`_find_singleton_job` in slurmctld): a job of the same user and name blocks it
//! while it runs or is suspended, or while it waits (held or not) with a lower job id, so
//! a chain of same-named jobs runs one at a time in submission order. Other kinds
//! (`aftercorr`, `afterburstbuffer`, `expand`), and `singleton` where the poll could not
//! read the job's name, are not judged: such a job is Slurm's.

use super::array::ArrayTasks;
use super::json::{JobStateName, SlurmJob};
use std::collections::BTreeMap;

/// What a held job's dependency allows now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// None, or every item needed is met: the job may be scheduled.
    Met,
    /// Not yet: why, in words (`job 7 has not ended`).
    Waiting(String),
    /// It can never be met (`job 7 ended FAILED`).
    Never(String),
    /// gantry does not judge it: an item kind it does not read, or text it cannot parse.
    NotJudged(String),
}

/// The job an item waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parent {
    Job(u32),
    /// Task `k` of array `A` (`A_k`).
    Task(u32, u32),
    /// Every task of array `A` (`A_*`).
    Array(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    After { minutes: u64 },
    AfterAny,
    AfterOk,
    AfterNotOk,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    /// `kind:parent`.
    On { kind: Kind, parent: Parent },
    /// `singleton`: no other job of the same name and user running or waiting before it.
    Singleton,
}

/// The items of a dependency and whether any one suffices (`?`) or all are needed (`,`).
fn parse(expression: &str) -> Result<(Vec<Item>, bool), String> {
    let any = expression.contains('?');
    if any && expression.contains(',') {
        return Err("mixes `,` and `?`".into());
    }
    let mut items = Vec::new();
    for part in expression.split([',', '?']) {
        // `afterok:7:8(unfulfilled)`: the state in brackets is Slurm's, stale while held.
        let part = part.split('(').next().unwrap_or(part);
        if part == "singleton" {
            items.push(Item::Singleton);
            continue;
        }
        let mut fields = part.split(':');
        let kind_name = fields.next().unwrap_or("");
        let parents: Vec<&str> = fields.collect();
        if parents.is_empty() {
            return Err(format!("{part:?} is not a kind gantry judges"));
        }
        for parent in parents {
            let (parent, minutes) = match parent.split_once('+') {
                Some((p, m)) => (p, number(m, part)?),
                None => (parent, 0),
            };
            let kind = match kind_name {
                "after" => Kind::After { minutes },
                "afterany" => Kind::AfterAny,
                "afterok" => Kind::AfterOk,
                "afternotok" => Kind::AfterNotOk,
                other => return Err(format!("{other:?} is not a kind gantry judges")),
            };
            let parent = match parent.split_once('_') {
                Some((a, "*")) => Parent::Array(number(a, part)?),
                Some((a, k)) => Parent::Task(number(a, part)?, number(k, part)?),
                None => Parent::Job(number(parent, part)?),
            };
            items.push(Item::On { kind, parent });
        }
    }
    Ok((items, any))
}

fn number<T: std::str::FromStr>(text: &str, part: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{part:?}: {text:?} is not a job id or a count"))
}

/// The jobs and arrays `expression` names (to list those that ended by id).
pub fn parents(expression: &str) -> Vec<u32> {
    parse(expression).map_or(Vec::new(), |(items, _)| {
        items
            .iter()
            .filter_map(|i| match *i {
                Item::On {
                    parent: Parent::Job(j) | Parent::Task(j, _) | Parent::Array(j),
                    ..
                } => Some(j),
                Item::Singleton => None,
            })
            .collect()
    })
}

/// Judges `job`'s dependency ([`SlurmJob::dependency`]) against the jobs of a poll at
/// `now_s` (Unix seconds).
pub fn judge(job: &SlurmJob, jobs: &BTreeMap<u32, &SlurmJob>, now_s: u64) -> Verdict {
    let expression = job.dependency.as_str();
    if expression.is_empty() {
        return Verdict::Met;
    }
    let (items, any) = match parse(expression) {
        Ok(parsed) => parsed,
        Err(why) => return Verdict::NotJudged(why),
    };
    let verdicts = items.iter().map(|item| match *item {
        Item::On { kind, parent } => judge_item(kind, parent, jobs, now_s),
        Item::Singleton => judge_singleton(job, jobs),
    });
    let mut waiting = None;
    let mut never = None;
    for verdict in verdicts {
        match verdict {
            Verdict::NotJudged(why) => return Verdict::NotJudged(why),
            Verdict::Met if any => return Verdict::Met,
            Verdict::Never(why) if !any => return Verdict::Never(why),
            Verdict::Waiting(why) => waiting = waiting.or(Some(why)),
            Verdict::Never(why) => never = never.or(Some(why)),
            _ => {}
        }
    }
    match (waiting, never) {
        (Some(why), _) => Verdict::Waiting(why),
        (None, Some(why)) => Verdict::Never(why),
        (None, None) => Verdict::Met,
    }
}

/// The jobs `parent` stands for in the poll: empty when Slurm no longer lists it.
fn parent_jobs<'a>(parent: Parent, jobs: &BTreeMap<u32, &'a SlurmJob>) -> Vec<&'a SlurmJob> {
    let task_of = |a: u32, j: &SlurmJob| j.array_job == Some(a);
    match parent {
        Parent::Job(id) => jobs.get(&id).copied().into_iter().collect(),
        Parent::Array(a) => jobs.values().copied().filter(|j| task_of(a, j)).collect(),
        Parent::Task(a, k) => jobs
            .values()
            .copied()
            .filter(|j| task_of(a, j))
            .filter(|j| {
                ArrayTasks::parse(&j.array_tasks).is_ok_and(|t| t.tasks.binary_search(&k).is_ok())
            })
            .collect(),
    }
}

/// Slurm's `singleton` test for `job`: the first other job of its user and name that runs,
/// is suspended, or waits with a lower id blocks it.
fn judge_singleton(job: &SlurmJob, jobs: &BTreeMap<u32, &SlurmJob>) -> Verdict {
    let Some(owner) = &job.owner else {
        return Verdict::NotJudged("singleton: its name could not be read".into());
    };
    let blocker = jobs.values().find(|other| {
        other.id != job.id
            && other.owner.as_ref() == Some(owner)
            && (other.state.runs() || (other.state == JobStateName::Pending && other.id < job.id))
    });
    match blocker {
        Some(other) if other.state == JobStateName::Pending => Verdict::Waiting(format!(
            "job {} of the same name and user waits before it",
            other.id
        )),
        Some(other) => Verdict::Waiting(format!(
            "job {} of the same name and user has not ended",
            other.id
        )),
        None => Verdict::Met,
    }
}

fn judge_item(kind: Kind, parent: Parent, jobs: &BTreeMap<u32, &SlurmJob>, now_s: u64) -> Verdict {
    let parents = parent_jobs(parent, jobs);
    let ended = |j: &SlurmJob| j.state.is_final();
    let ok = |j: &SlurmJob| j.state == JobStateName::Completed;
    let first = |test: &dyn Fn(&SlurmJob) -> bool| parents.iter().find(|j| test(j)).map(|j| j.id);
    match kind {
        Kind::After { minutes } => {
            if let Some(id) = first(&|j| j.state == JobStateName::Pending) {
                return Verdict::Waiting(format!("job {id} has not started"));
            }
            let since = parents.iter().map(|j| j.start_s).max().unwrap_or(0);
            let at = since.saturating_add(minutes.saturating_mul(60));
            if now_s < at {
                return Verdict::Waiting(format!("{minutes} min after job starts, at {at}"));
            }
            Verdict::Met
        }
        Kind::AfterAny => match first(&|j| !ended(j)) {
            Some(id) => Verdict::Waiting(format!("job {id} has not ended")),
            None => Verdict::Met,
        },
        Kind::AfterOk => {
            if let Some(j) = parents.iter().find(|j| ended(j) && !ok(j)) {
                return Verdict::Never(format!("job {} ended {}", j.id, j.state.name()));
            }
            match first(&|j| !ended(j)) {
                Some(id) => Verdict::Waiting(format!("job {id} has not ended")),
                None => Verdict::Met,
            }
        }
        Kind::AfterNotOk => {
            if let Some(id) = first(&|j| !ended(j)) {
                return Verdict::Waiting(format!("job {id} has not ended"));
            }
            match parents.iter().find(|j| !ok(j)) {
                Some(_) => Verdict::Met,
                None if parents.is_empty() => Verdict::Met,
                None => Verdict::Never(format!(
                    "job {} ended COMPLETED",
                    parents.first().map_or(0, |j| j.id)
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u32, state: JobStateName, start_s: u64) -> SlurmJob {
        SlurmJob {
            id,
            state,
            start_s,
            ..SlurmJob::default()
        }
    }

    fn judge_with(expression: &str, listed: &[&SlurmJob], now_s: u64) -> Verdict {
        let jobs: BTreeMap<u32, &SlurmJob> = listed.iter().map(|j| (j.id, *j)).collect();
        let child = SlurmJob {
            id: 100,
            dependency: expression.into(),
            ..SlurmJob::default()
        };
        judge(&child, &jobs, now_s)
    }

    /// The verdict's kind, without its words.
    fn kind(expression: &str, listed: &[&SlurmJob], now_s: u64) -> &'static str {
        match judge_with(expression, listed, now_s) {
            Verdict::Met => "met",
            Verdict::Waiting(_) => "waiting",
            Verdict::Never(_) => "never",
            Verdict::NotJudged(_) => "not judged",
        }
    }

    #[test]
    fn each_kind_is_met_waits_or_is_never_met_by_its_parents_state() {
        use JobStateName::{Completed, Pending, Running};
        let failed = JobStateName::Ended("FAILED".into());
        let (pending, running) = (&job(7, Pending, 0), &job(7, Running, 100));
        let (done, bad) = (&job(7, Completed, 100), &job(7, failed, 100));
        assert_eq!(kind("afterok:7(unfulfilled)", &[running], 200), "waiting");
        assert_eq!(kind("afterok:7", &[done], 200), "met");
        assert_eq!(
            judge_with("afterok:7", &[bad], 200),
            Verdict::Never("job 7 ended FAILED".into())
        );
        assert_eq!(kind("afternotok:7", &[bad], 200), "met");
        assert_eq!(kind("afternotok:7", &[done], 200), "never");
        assert_eq!(kind("afterany:7", &[bad], 200), "met");
        assert_eq!(kind("afterany:7", &[running], 200), "waiting");
        assert_eq!(kind("after:7", &[pending], 200), "waiting");
        assert_eq!(kind("after:7", &[running], 200), "met");
        assert_eq!(kind("after:7+2", &[running], 200), "waiting");
        assert_eq!(kind("after:7+2", &[running], 220), "met");
        // A parent Slurm no longer lists: met, as Slurm lifts it.
        assert_eq!(kind("afterok:7", &[], 200), "met");
        assert_eq!(kind("", &[], 200), "met");
    }

    #[test]
    fn all_items_or_any_one() {
        let done = job(7, JobStateName::Completed, 100);
        let bad = job(8, JobStateName::Ended("CANCELLED".into()), 100);
        let on = job(9, JobStateName::Running, 100);
        let listed = [&done, &bad, &on];
        assert_eq!(kind("afterok:7,afterany:9", &listed, 200), "waiting");
        assert_eq!(kind("afterok:7,afterok:8", &listed, 200), "never");
        assert_eq!(kind("afterok:8?afterok:7", &listed, 200), "met");
        assert_eq!(kind("afterok:8?afterany:9", &listed, 200), "waiting");
        // Several jobs in one item: each must be met.
        assert_eq!(kind("afterok:7:8", &listed, 200), "never");
        assert_eq!(parents("afterok:7:8,after:9+1,afterany:5_*"), [7, 8, 9, 5]);
    }

    #[test]
    fn array_parents_are_every_task_or_one() {
        let task = |id, task: &str, state| SlurmJob {
            id,
            array_job: Some(5),
            array_tasks: task.into(),
            state,
            ..SlurmJob::default()
        };
        let (first, second, rest) = (
            task(5, "0", JobStateName::Completed),
            task(10, "1", JobStateName::Running),
            task(11, "2-3", JobStateName::Pending),
        );
        let listed = [&first, &second, &rest];
        assert_eq!(kind("afterok:5_0", &listed, 0), "met");
        assert_eq!(kind("afterok:5_*(unfulfilled)", &listed, 0), "waiting");
        assert_eq!(kind("afterany:5_3", &listed, 0), "waiting");
        assert_eq!(kind("afterok:5_*", &[&first], 0), "met");
    }

    #[test]
    fn a_singleton_waits_for_its_name_running_or_waiting_before_it() {
        let named = |id, name: &str, user, state| SlurmJob {
            id,
            state,
            owner: Some((user, name.to_string())),
            dependency: if id == 10 {
                "singleton(unfulfilled)".into()
            } else {
                String::new()
            },
            ..SlurmJob::default()
        };
        use JobStateName::{Completed, Completing, Pending, Running, Suspended};
        let kind_among = |others: &[SlurmJob]| {
            let me = named(10, "train", 7, Pending);
            let mut jobs: BTreeMap<u32, &SlurmJob> = others.iter().map(|j| (j.id, j)).collect();
            jobs.insert(me.id, &me);
            match judge(&me, &jobs, 0) {
                Verdict::Met => "met",
                Verdict::Waiting(_) => "waiting",
                Verdict::Never(_) => "never",
                Verdict::NotJudged(_) => "not judged",
            }
        };
        // Blocked by the same name and user running, suspended, or waiting with a lower id
        // (held or not: Slurm counts a held one too).
        assert_eq!(kind_among(&[named(4, "train", 7, Running)]), "waiting");
        assert_eq!(kind_among(&[named(4, "train", 7, Suspended)]), "waiting");
        assert_eq!(kind_among(&[named(4, "train", 7, Pending)]), "waiting");
        // Not by a later one, an ended or ending one, another name or another user.
        assert_eq!(kind_among(&[named(12, "train", 7, Pending)]), "met");
        assert_eq!(kind_among(&[named(4, "train", 7, Completed)]), "met");
        assert_eq!(kind_among(&[named(4, "train", 7, Completing)]), "met");
        assert_eq!(kind_among(&[named(4, "eval", 7, Running)]), "met");
        assert_eq!(kind_among(&[named(4, "train", 8, Running)]), "met");
        // Joined with other items; a name the poll could not read is not judged.
        let mut unnamed = named(10, "train", 7, Pending);
        unnamed.owner = None;
        let jobs = BTreeMap::from([(10, &unnamed)]);
        assert!(matches!(judge(&unnamed, &jobs, 0), Verdict::NotJudged(_)));
        assert_eq!(parents("singleton,afterok:3"), [3]);
    }

    #[test]
    fn kinds_gantry_does_not_judge_are_named() {
        for expression in ["aftercorr:5_*", "expand:3", "afterok:x"] {
            assert_eq!(kind(expression, &[], 0), "not judged", "{expression}");
        }
    }
}
