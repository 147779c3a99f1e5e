//! Console plumbing every command shares, kept here so it is tested: output that stops
//! quietly when its reader goes away, error text without repeats, refusing flags that do not
//! apply, and the name a `clap` value is given on the command line.

use std::fmt::Display;
use std::io::{ErrorKind, Write as _};

/// stdout was closed by its reader (`gantry … | head`): not a failure; the binary stops
/// quietly with status 0.
#[derive(Debug, thiserror::Error)]
#[error("stdout closed by its reader")]
pub struct ClosedPipe;

/// Writes `text` to stdout, then flushes. A closed pipe becomes [`ClosedPipe`] instead of
/// the panic `println!` gives.
pub fn write_out(text: impl Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match write!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Err(ClosedPipe.into()),
        other => Ok(other?),
    }
}

/// [`write_out`] with a newline.
pub fn write_line(text: impl Display) -> anyhow::Result<()> {
    write_out(format_args!("{text}\n"))
}

/// The command-line name of a value (`las-time`, `best-fit`, `compat`).
pub fn value_name(value: &impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// Whether `err` is a closed stdout.
pub fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ClosedPipe>().is_some()
}

/// The error and its causes on one line, `outer: cause: cause`, leaving out a cause whose
/// text is already part of what precedes it (a `thiserror` message often embeds its source,
/// and anyhow's default report would print it again under "Caused by").
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Refuses the flags among `ids` (clap argument ids) that were given on the command line:
/// `context` does not use them. `hint` says what to use instead.
pub fn refuse_flags(
    command: &clap::Command,
    matches: &clap::ArgMatches,
    ids: &[&str],
    context: &str,
    hint: &str,
) -> anyhow::Result<()> {
    let given: Vec<String> = command
        .get_arguments()
        .filter(|a| ids.contains(&a.get_id().as_str()))
        .filter(|a| {
            matches.value_source(a.get_id().as_str())
                == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|a| match a.get_long() {
            Some(long) => format!("--{long}"),
            None => a.get_id().to_string(),
        })
        .collect();
    anyhow::ensure!(
        given.is_empty(),
        "{context} does not use {}; {hint}",
        given.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Outer {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let inner = std::io::Error::new(ErrorKind::NotFound, "No such file or directory");
        let err = anyhow::Error::new(Outer {
            path: "/no/such/dir/x".into(),
            source: inner,
        })
        .context("writing the recording");
        assert_eq!(
            error_text(&err),
            "writing the recording: /no/such/dir/x: No such file or directory"
        );
    }

    #[test]
    fn flags_given_are_refused_by_their_long_names() {
        let cmd = clap::Command::new("t")
            .arg(clap::Arg::new("trace").long("trace"))
            .arg(clap::Arg::new("seeds").long("seeds").default_value("0-19"));
        let m = cmd.clone().get_matches_from(["t", "--trace", "x.csv"]);
        let err = refuse_flags(&cmd, &m, &["trace", "seeds"], "the scenario", "use --jobs")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "the scenario does not use --trace; use --jobs");
        let m = cmd.clone().get_matches_from(["t"]);
        assert!(refuse_flags(&cmd, &m, &["trace", "seeds"], "x", "y").is_ok());
    }
}
