//! The one seam between `gantry slurm` and Slurm: running a Slurm command and reading what
//! it printed. Everything else (parsing, reconciling, deciding) is plain data in, data out,
//! so it is tested with a [`SlurmRunner`] that answers from fixtures instead of a cluster.

use super::session::{ScontrolSession, SessionError};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wait_timeout::ChildExt as _;

/// Runs Slurm's command-line tools (`squeue`, `sinfo`, `scontrol`, `scancel`).
pub trait SlurmRunner {
    /// Runs `program` with `args` and returns its standard output, or why it failed.
    fn run(&mut self, program: &str, args: &[String]) -> Result<String, CommandError>;

    /// Runs `program` with `args`, `input` on its standard input (`scontrol` reads one
    /// command per line and carries out each, so one process does a cycle's updates; see
    /// [`super::action::start_together`]), and returns its standard output, or why it
    /// failed (a failure of any line fails the whole run).
    fn run_input(
        &mut self,
        program: &str,
        args: &[String],
        input: &str,
    ) -> Result<String, CommandError>;

    /// Runs independent commands (program, arguments, standard input if any) and returns
    /// their outputs in order.
    /// The default runs them one after the other; [`ProcessRunner`] runs them side by side,
    /// so a poll (`squeue` and `sinfo`) takes as long as the slower of them, not the sum.
    fn run_all(&mut self, commands: &[Invocation<'_>]) -> Vec<Result<String, CommandError>> {
        commands
            .iter()
            .map(|(program, args, input)| match input {
                Some(input) => self.run_input(program, args, input),
                None => self.run(program, args),
            })
            .collect()
    }

    /// Runs independent command sequences (each a list of command lines, program first, run
    /// in order up to the first failure) and returns, per sequence, its result and when it
    /// ended. The default runs them one after the other; [`ProcessRunner`] runs up to
    /// [`PARALLEL`] at a time.
    fn run_sequences(
        &mut self,
        sequences: &[Vec<Vec<String>>],
    ) -> Vec<(Result<(), CommandError>, Instant)> {
        sequences
            .iter()
            .map(|lines| (run_lines(self, lines), Instant::now()))
            .collect()
    }

    /// Runs `scontrol` once per line of `lines` (each its arguments, plain words), one
    /// after the other, and returns each line's result. The default starts a process per
    /// line; [`ProcessRunner`] sends them to one long-lived `scontrol`
    /// ([`super::session`]), about 1 ms a line instead of 4.
    fn scontrol_each(&mut self, lines: &[Vec<String>]) -> Vec<Result<(), CommandError>> {
        lines
            .iter()
            .map(|args| self.run("scontrol", args).map(|_| ()))
            .collect()
    }
}

/// One command to run: program, arguments, and what to write to its standard input (if
/// anything).
pub type Invocation<'a> = (&'a str, Vec<String>, Option<String>);

/// How many command sequences [`ProcessRunner::run_sequences`] runs at once: commands run
/// one job at a time (a cycle's releases when their batch failed, see
/// [`super::action::start_together`]) overlap.
pub const PARALLEL: usize = 8;

/// Runs `lines` in order, stopping at the first failure.
pub fn run_lines<R: SlurmRunner + ?Sized>(
    runner: &mut R,
    lines: &[Vec<String>],
) -> Result<(), CommandError> {
    for line in lines {
        let Some((program, args)) = line.split_first() else {
            continue;
        };
        runner.run(program, args)?;
    }
    Ok(())
}

/// Why a Slurm command did not succeed. Every variant names the command line.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// It could not be started (not installed, not on `PATH`).
    #[error("`{command}` could not start: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// It ran longer than the timeout and was killed.
    #[error("`{command}` timed out after {timeout_ms} ms (killed)")]
    Timeout {
        /// The command line.
        command: String,
        /// The limit.
        timeout_ms: u64,
    },
    /// It exited with a failure status.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Exit status as text.
        status: String,
        /// What it printed on stderr (trimmed, at most 500 characters).
        stderr: String,
    },
}

impl CommandError {
    /// The failure text Slurm printed, or the error as text.
    pub fn stderr(&self) -> String {
        match self {
            CommandError::Failed { stderr, .. } => stderr.clone(),
            other => other.to_string(),
        }
    }
}

/// Runs the real commands, each with a time limit, with `SLURM_CONF` and `PATH` inherited,
/// `SLURM_TIME_FORMAT=%s` (times as Unix seconds) and `SLURM_BITSTR_LEN=0` (array task
/// expressions whole).
#[derive(Debug)]
pub struct ProcessRunner {
    /// Longest a command may run before it is killed and reported as timed out.
    pub timeout: Duration,
    /// The long-lived `scontrol` of [`SlurmRunner::scontrol_each`], started at its first
    /// use and dropped (so started again) after any command that did not succeed: the
    /// error may be a controller that moved or a process that hangs.
    session: Option<ScontrolSession>,
}

impl ProcessRunner {
    /// Commands killed after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            session: None,
        }
    }

    /// A runner for another thread (without the session).
    fn worker(&self) -> Self {
        Self::new(self.timeout)
    }

    /// One `scontrol` command through the session; through its own process when no
    /// session can be started or the session died before it answered (every command
    /// gantry sends is idempotent, so one that may have run already is safe to run again).
    fn scontrol_in_session(&mut self, args: &[String]) -> Result<(), CommandError> {
        if self.session.is_none() {
            self.session = ScontrolSession::start("scontrol").ok();
        }
        let Some(session) = self.session.as_mut() else {
            return self.run("scontrol", args).map(|_| ());
        };
        let Err(error) = session.run(args, self.timeout) else {
            return Ok(());
        };
        self.session = None;
        let command = || format!("scontrol (session) {}", args.join(" "));
        match error {
            SessionError::Failed(stderr) => Err(CommandError::Failed {
                command: command(),
                status: "error reported".into(),
                stderr: stderr.chars().take(500).collect(),
            }),
            SessionError::Timeout(_) => Err(CommandError::Timeout {
                command: command(),
                timeout_ms: self.timeout.as_millis() as u64,
            }),
            SessionError::Gone(_) => self.run("scontrol", args).map(|_| ()),
        }
    }
}

/// `program args…` as one line, for messages.
pub fn command_line(program: &str, args: &[String]) -> String {
    let mut line = program.to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    line
}

impl SlurmRunner for ProcessRunner {
    fn run_all(&mut self, commands: &[Invocation<'_>]) -> Vec<Result<String, CommandError>> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = commands
                .iter()
                .map(|(program, args, input)| {
                    let runner = self.worker();
                    scope.spawn(move || runner.spawn(program, args, input.as_deref()))
                })
                .collect();
            handles
                .into_iter()
                .zip(commands)
                .map(|(handle, (program, args, _))| {
                    handle.join().unwrap_or_else(|_| {
                        Err(CommandError::Failed {
                            command: command_line(program, args),
                            status: "not run".into(),
                            stderr: "the thread running it panicked".into(),
                        })
                    })
                })
                .collect()
        })
    }

    fn run_sequences(
        &mut self,
        sequences: &[Vec<Vec<String>>],
    ) -> Vec<(Result<(), CommandError>, Instant)> {
        self.parallel(sequences)
    }

    fn run(&mut self, program: &str, args: &[String]) -> Result<String, CommandError> {
        self.spawn(program, args, None)
    }

    fn run_input(
        &mut self,
        program: &str,
        args: &[String],
        input: &str,
    ) -> Result<String, CommandError> {
        self.spawn(program, args, Some(input))
    }

    fn scontrol_each(&mut self, lines: &[Vec<String>]) -> Vec<Result<(), CommandError>> {
        lines
            .iter()
            .map(|args| self.scontrol_in_session(args))
            .collect()
    }
}

impl ProcessRunner {
    /// Runs one command with its time limit, `input` (if any) written to its standard input.
    fn spawn(
        &self,
        program: &str,
        args: &[String],
        input: Option<&str>,
    ) -> Result<String, CommandError> {
        let mut command = command_line(program, args);
        if let Some(input) = input {
            command.push_str(&format!(" < ({} lines)", input.lines().count()));
        }
        let mut child = Command::new(program)
            .args(args)
            // Times as Unix seconds in `squeue`'s compact listing (`compact`).
            .env("SLURM_TIME_FORMAT", "%s")
            // A job array's pending tasks in full (`squeue` cuts the expression at 64
            // characters by default), for `array`.
            .env("SLURM_BITSTR_LEN", "0")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| CommandError::Spawn {
                command: command.clone(),
                source,
            })?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            // Written on a thread: a child that stops reading must not block gantry past
            // the time limit. Closing the pipe (the thread ends) is the child's end of input.
            let input = input.to_string();
            std::thread::spawn(move || {
                use std::io::Write as _;
                let _ = stdin.write_all(input.as_bytes());
            });
        }
        // Drain both pipes on threads: a large `squeue --json` would fill the pipe and block
        // the child before it exits.
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::Timeout {
                    command,
                    timeout_ms: self.timeout.as_millis() as u64,
                });
            }
        };
        let stdout = stdout.and_then(|h| h.join().ok()).unwrap_or_default();
        let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
        if status.success() {
            Ok(stdout)
        } else {
            let stderr: String = stderr.trim().chars().take(500).collect();
            Err(CommandError::Failed {
                command,
                status: status.to_string(),
                stderr,
            })
        }
    }
}

impl ProcessRunner {
    /// Runs `sequences` on up to [`PARALLEL`] threads, each sequence on one.
    fn parallel(&self, sequences: &[Vec<Vec<String>>]) -> Vec<(Result<(), CommandError>, Instant)> {
        let threads = PARALLEL.min(sequences.len()).max(1);
        let mut results: Vec<Option<(Result<(), CommandError>, Instant)>> =
            (0..sequences.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let mut runner = self.worker();
                    scope.spawn(move || {
                        (t..sequences.len())
                            .step_by(threads)
                            .map(|i| (i, run_lines(&mut runner, &sequences[i]), Instant::now()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for handle in handles {
                // A thread that panicked leaves its sequences unanswered: reported below.
                for (i, result, at) in handle.join().unwrap_or_default() {
                    results[i] = Some((result, at));
                }
            }
        });
        results
            .into_iter()
            .zip(sequences)
            .map(|(r, lines)| {
                r.unwrap_or_else(|| {
                    let command = lines.first().map(|l| l.join(" ")).unwrap_or_default();
                    (
                        Err(CommandError::Failed {
                            command,
                            status: "not run".into(),
                            stderr: "the thread running it panicked".into(),
                        }),
                        Instant::now(),
                    )
                })
            })
            .collect()
    }
}

fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(ms: u64) -> ProcessRunner {
        ProcessRunner::new(Duration::from_millis(ms))
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn returns_stdout_of_a_successful_command() {
        let out = runner(5_000)
            .run("sh", &args(&["-c", "echo hello"]))
            .unwrap();
        assert_eq!(out, "hello\n");
    }

    #[test]
    fn reports_failure_with_stderr_and_the_command_line() {
        let err = runner(5_000)
            .run("sh", &args(&["-c", "echo 'Invalid job id' >&2; exit 1"]))
            .unwrap_err();
        assert!(matches!(err, CommandError::Failed { .. }), "{err}");
        assert_eq!(err.stderr(), "Invalid job id");
        assert!(err.to_string().contains("sh -c"), "{err}");
    }

    #[test]
    fn kills_a_command_that_runs_too_long() {
        let err = runner(100).run("sleep", &args(&["5"])).unwrap_err();
        assert!(
            matches!(
                err,
                CommandError::Timeout {
                    timeout_ms: 100,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn sequences_run_side_by_side_in_order_each_stopping_at_its_first_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let d = dir.display();
        // Each of 3 sequences waits until all 3 have started: one after the other, the
        // first would wait for good (killed at the 5 s limit).
        let barrier = |i: usize| {
            vec![args(&[
                "sh",
                "-c",
                &format!("touch {d}/{i}; while [ $(ls {d} | wc -l) -lt 3 ]; do sleep 0.01; done"),
            ])]
        };
        let mut sequences: Vec<Vec<Vec<String>>> = (0..3).map(barrier).collect();
        // A failing line stops its sequence: the file after it is never made.
        sequences.push(vec![
            args(&["sh", "-c", "exit 3"]),
            args(&["touch", &format!("{d}/never")]),
        ]);
        let results = runner(5_000).run_sequences(&sequences);
        assert_eq!(results.len(), 4);
        for (result, _) in &results[..3] {
            assert!(result.is_ok(), "{result:?}");
        }
        assert!(matches!(results[3].0, Err(CommandError::Failed { .. })));
        assert!(!dir.join("never").exists());
    }

    #[test]
    fn input_goes_to_standard_input_and_a_failure_names_it() {
        let out = runner(5_000)
            .run_input("cat", &[], "update JobId=1\nupdate JobId=2\n")
            .unwrap();
        assert_eq!(out, "update JobId=1\nupdate JobId=2\n");
        let err = runner(5_000)
            .run_input("sh", &args(&["-c", "cat >/dev/null; exit 1"]), "a\nb\n")
            .unwrap_err();
        assert!(err.to_string().contains("sh -c"), "{err}");
        assert!(err.to_string().contains("< (2 lines)"), "{err}");
    }

    #[test]
    fn commands_run_side_by_side_and_answer_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let d = dir.display();
        // Each waits until both have started: one after the other, the first would wait
        // for good (killed at the 5 s limit).
        let both = |i: usize| {
            args(&[
                "-c",
                &format!(
                    "touch {d}/{i}; while [ $(ls {d} | wc -l) -lt 2 ]; do sleep 0.01; done; echo {i}"
                ),
            ])
        };
        let out = runner(5_000).run_all(&[("sh", both(0), None), ("sh", both(1), None)]);
        let out: Vec<String> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(out, ["0\n", "1\n"]);
    }

    #[test]
    fn reports_a_missing_program() {
        let err = runner(1_000)
            .run("gantry-no-such-program", &[])
            .unwrap_err();
        assert!(matches!(err, CommandError::Spawn { .. }), "{err}");
    }

    #[test]
    fn large_output_does_not_block() {
        let out = runner(10_000)
            .run(
                "sh",
                &args(&["-c", "head -c 1000000 /dev/zero | tr '\\0' x"]),
            )
            .unwrap();
        assert_eq!(out.len(), 1_000_000);
    }
}
