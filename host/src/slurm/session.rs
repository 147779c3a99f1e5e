//! A long-lived `scontrol` that reads one command per line on its standard input, for the
//! few commands of a release (`update` that pins a job, then `release`).
//!
//! Each `scontrol` process spends about 3 ms starting (loading `slurm.conf` and its
//! plugins) before its one request to slurmctld; the request itself takes 0.7–1.9 ms on the
//! lab. A job that finds its GPUs free starts only in Slurm's next scheduling pass after its
//! release, so those milliseconds decide whether it catches the pass (docs/slurm.md,
//! *Doorbells*). The session pays the start once.
//!
//! `scontrol` reading a pipe answers nothing on success and writes its errors to its
//! standard error, and it reports an unknown word (`invalid keyword: WORD`) there too and
//! goes on. So after each command the session sends a mark, a word of its own that
//! `scontrol` cannot know, and reads the standard error up to the mark's report: whatever
//! came before it is the command's failure. The mark makes each command's result exact
//! (a script of several lines fed to one process only fails or succeeds as a whole).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The prefix of the marks; a number follows.
const MARK: &str = "gantry-mark-";

/// Why a command sent to the session has no clean answer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `scontrol` reported an error before the mark (its lines, joined by `; `).
    #[error("{0}")]
    Failed(String),
    /// No mark within the time limit.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The process is gone (its input or standard error closed).
    #[error("scontrol is gone: {0}")]
    Gone(String),
}

/// One `scontrol` process and the lines of its standard error, read on a thread.
#[derive(Debug)]
pub struct ScontrolSession {
    child: Child,
    stdin: ChildStdin,
    stderr: Receiver<String>,
    marks: u64,
}

impl ScontrolSession {
    /// Starts `program` (`scontrol`) with no arguments, reading commands from a pipe, with
    /// `SLURM_TIME_FORMAT=%s` as every command gantry runs. Its standard output (an echo of
    /// each line) is discarded.
    pub fn start(program: &str) -> std::io::Result<Self> {
        let mut child = Command::new(program)
            .env("SLURM_TIME_FORMAT", "%s")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let (Some(stdin), Some(stderr)) = (child.stdin.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipes to scontrol"));
        };
        let (lines, stderr_lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            stderr: stderr_lines,
            marks: 0,
        })
    }

    /// Runs one command (`args`: plain words, no blanks or quotes inside one) and waits at
    /// most `timeout` for its result.
    pub fn run(&mut self, args: &[String], timeout: Duration) -> Result<(), SessionError> {
        self.marks += 1;
        let mark = format!("{MARK}{}", self.marks);
        writeln!(self.stdin, "{}\n{mark}", args.join(" "))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| SessionError::Gone(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        let mut errors: Vec<String> = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.trim_end().ends_with(&mark) => break,
                Ok(line) => errors.push(line.trim().to_string()),
                Err(RecvTimeoutError::Timeout) => return Err(SessionError::Timeout(timeout)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(SessionError::Gone("its standard error closed".into()));
                }
            }
        }
        // An earlier mark's report cannot come after a later one: nothing else to skip.
        errors.retain(|l| !l.is_empty());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SessionError::Failed(errors.join("; ")))
        }
    }
}

impl Drop for ScontrolSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `scontrol` reading a pipe: silent on success, errors and unknown
    /// words reported on standard error, as 22.05 does. In a temporary folder, removed
    /// when the guard drops.
    fn fake_scontrol() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scontrol");
        std::fs::write(
            &path,
            r#"#!/bin/sh
while read -r word rest; do
  case "$word" in
    update|release) case "$rest" in *999*) echo "Invalid job id specified for job 999" >&2;; esac ;;
    hang) sleep 5 ;;
    quit) exit 0 ;;
    *) echo "invalid keyword: $word" >&2 ;;
  esac
done
"#,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, path)
    }

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn each_command_gets_its_own_result_in_one_process() {
        let (_dir, program) = fake_scontrol();
        let mut session = ScontrolSession::start(program.to_str().unwrap()).unwrap();
        let second = Duration::from_secs(5);
        assert!(
            session
                .run(&words("update JobId=7 NodeList=n1"), second)
                .is_ok()
        );
        let err = session.run(&words("release 999"), second).unwrap_err();
        assert_eq!(err.to_string(), "Invalid job id specified for job 999");
        // The failure stays with its command: the next one is clean again.
        assert!(session.run(&words("release 7"), second).is_ok());
        assert_eq!(session.marks, 3);
    }

    #[test]
    fn a_command_without_an_answer_times_out_and_a_gone_process_says_so() {
        let (_dir, program) = fake_scontrol();
        let mut session = ScontrolSession::start(program.to_str().unwrap()).unwrap();
        let err = session
            .run(&words("hang"), Duration::from_millis(100))
            .unwrap_err();
        assert!(matches!(err, SessionError::Timeout(_)), "{err}");
        let mut session = ScontrolSession::start(program.to_str().unwrap()).unwrap();
        let err = session
            .run(&words("quit"), Duration::from_secs(5))
            .unwrap_err();
        assert!(matches!(err, SessionError::Gone(_)), "{err}");
    }
}
