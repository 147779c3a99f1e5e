//! Job arrays (`sbatch --array`): gantry schedules each task as a single job.
//!
//! Slurm keeps an array's pending tasks in one record (the array's own job id, `A`) until a
//! task is started or updated, which splits it into a record of its own with a new job id.
//! `squeue` shows that record as one line whose task field is the pending tasks' expression
//! (`0-3`, `0,2,4`, `0-99%4` with a throttle), and folds pending tasks already split back
//! into that line while the record holds more than one task. So gantry splits every pending
//! task but the lowest (an update that changes nothing, [`super::action::Action::Split`])
//! in the cycle it first sees the record; from the next poll on each task is a line of its
//! own, held as submitted, and the core schedules it as any single job.
//!
//! A throttle (`%N`) is gantry's to keep: Slurm holds a released task back (reason
//! `JobArrayTaskLimit`) while N tasks of the array run, split or not, where the core would
//! count it running; so the core holds at most N of its tasks at once. What stays Slurm's
//! (released unpinned, logged once per array): an array of more than [`MAX_TASKS_SPLIT`]
//! pending tasks, or whose expression gantry cannot read, and tasks released outside gantry.
//!
//! The record that keeps the lowest task has the array's id, and a command given that id
//! acts on every task of the array (`scancel A` cancels them all): commands name it `A_k`
//! ([`command_name`]).

use super::json::SlurmJob;

/// Arrays of more pending tasks than this are left to Slurm. Slurm makes a task's job record
/// only when the task starts; each split task is a record of its own, counted against
/// Slurm's `MaxJobCount` (10,000 by default). 1,001 tasks is Slurm's default `MaxArraySize`,
/// so every array a default Slurm accepts is split (in about 1 s: one `scontrol` line per
/// task).
pub const MAX_TASKS_SPLIT: usize = 1_001;

/// The pending tasks of an array's record, as `squeue` shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayTasks {
    /// Task ids, ascending, without repeats.
    pub tasks: Vec<u32>,
    /// The throttle (`%N`): at most this many tasks run at once.
    pub throttle: Option<u32>,
}

impl ArrayTasks {
    /// Reads Slurm's task expression: ids, ranges `a-b` and stepped ranges `a-b:s` separated
    /// by commas, then an optional `%N`. Fails on anything else (a truncated `…` expression
    /// included) and on more than [`MAX_TASKS_SPLIT`] tasks.
    pub fn parse(expression: &str) -> Result<ArrayTasks, String> {
        let (list, throttle) = match expression.split_once('%') {
            Some((list, n)) => (list, Some(number(n, expression)?)),
            None => (expression, None),
        };
        let mut tasks = Vec::new();
        for part in list.split(',') {
            let (range, step) = match part.split_once(':') {
                Some((range, step)) => (range, number(step, expression)?),
                None => (part, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (number(a, expression)?, number(b, expression)?),
                None => {
                    let id = number(range, expression)?;
                    (id, id)
                }
            };
            if step == 0 || last < first {
                return Err(format!("{expression:?}: {part:?} is not a task range"));
            }
            let count = (last - first) / step + 1;
            if tasks.len() + count as usize > MAX_TASKS_SPLIT {
                return Err(format!(
                    "{expression:?}: more than {MAX_TASKS_SPLIT} pending tasks"
                ));
            }
            tasks.extend((0..count).map(|i| first + i * step));
        }
        tasks.sort_unstable();
        tasks.dedup();
        Ok(ArrayTasks { tasks, throttle })
    }
}

fn number(text: &str, expression: &str) -> Result<u32, String> {
    text.parse::<u32>()
        .map_err(|_| format!("{expression:?}: {text:?} is not a task id"))
}

/// The single task of an array job's record (`7`), or `None` for a record of several tasks
/// or a job outside an array.
pub fn single_task(job: &SlurmJob) -> Option<u32> {
    job.array_job?;
    job.array_tasks.parse::<u32>().ok()
}

/// How Slurm commands must name `job`: `A_k` for the task kept in the array's own record
/// (its id is the array's, which names every task), `None` (its id) otherwise.
pub fn command_name(job: &SlurmJob) -> Option<String> {
    let array = job.array_job.filter(|&a| a == job.id)?;
    single_task(job).map(|task| format!("{array}_{task}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ranges_lists_steps_and_the_throttle() {
        let parsed = |e: &str| ArrayTasks::parse(e).unwrap();
        assert_eq!(parsed("0-3").tasks, [0, 1, 2, 3]);
        assert_eq!(
            parsed("0,2,4%2"),
            ArrayTasks {
                tasks: vec![0, 2, 4],
                throttle: Some(2)
            }
        );
        assert_eq!(parsed("1-7:3,9,2").tasks, [1, 2, 4, 7, 9]);
        assert_eq!(parsed("5").tasks, [5]);
        assert_eq!(parsed("5").throttle, None);
    }

    #[test]
    fn refuses_what_it_cannot_read_and_arrays_too_large_to_split() {
        for bad in ["", "1-", "3-1", "1,2,...", "0-4:0", "a", "1%x"] {
            assert!(ArrayTasks::parse(bad).is_err(), "{bad:?}");
        }
        let err = ArrayTasks::parse("0-1001").unwrap_err();
        assert!(err.contains("more than 1001 pending tasks"), "{err}");
        assert_eq!(ArrayTasks::parse("0-1000").unwrap().tasks.len(), 1_001);
        // A huge range is refused before it is expanded.
        assert!(ArrayTasks::parse("0-4000000000").is_err());
    }

    #[test]
    fn the_task_in_the_arrays_own_record_is_named_by_its_task_id() {
        let job = |id, array_job, tasks: &str| SlurmJob {
            id,
            array_job,
            array_tasks: tasks.into(),
            ..SlurmJob::default()
        };
        assert_eq!(command_name(&job(4, Some(4), "3")).as_deref(), Some("4_3"));
        assert_eq!(command_name(&job(7, Some(4), "2")), None);
        assert_eq!(command_name(&job(4, Some(4), "0-3")), None);
        assert_eq!(command_name(&job(9, None, "")), None);
        assert_eq!(single_task(&job(7, Some(4), "2")), Some(2));
        assert_eq!(single_task(&job(4, Some(4), "0,2")), None);
    }
}
