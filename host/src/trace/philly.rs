//! The Philly trace as the Pollux artifact ships it (`philly-pollux/philly.csv`):
//! `timestamp,duration,num_gpus,gpu_time,cluster`, where `timestamp` is a wall-clock date
//! (`2017-10-09 07:01:55`), `duration` seconds, `num_gpus` the gang size. The file is not
//! sorted; rows are sorted by timestamp here. Blank lines are skipped.

use super::loaded::{RowOutcome, gpu_count, read_rows, to_ms};
use super::{Row, TraceError, TraceJob, column, read_file};
use std::path::Path;

/// The jobs of a Philly file, sorted by submit time, the first `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Vec<TraceJob>, TraceError> {
    let text = read_file(path)?;
    parse(&text, &path.display().to_string(), limit)
}

/// Parses Philly CSV text; `file` names it in errors.
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Vec<TraceJob>, TraceError> {
    let columns = |headers: &csv::StringRecord| {
        Ok([
            column(headers, file, "timestamp")?,
            column(headers, file, "duration")?,
            column(headers, file, "num_gpus")?,
        ])
    };
    read_rows(text, file, limit, columns, job).map(|loaded| loaded.jobs)
}

/// One Philly row as a job; its source id is its line.
fn job(
    &[col_time, col_duration, col_gpus]: &[usize; 3],
    row: &Row<'_>,
) -> Result<RowOutcome, TraceError> {
    let stamp = row.text(col_time, "timestamp")?;
    let submitted = chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S")
        .map_err(|e| row.error("timestamp", format!("{stamp:?}: {e}")))?;
    let submit_ms = u64::try_from(submitted.and_utc().timestamp_millis())
        .map_err(|_| row.error("timestamp", format!("{stamp:?} is before 1970")))?;
    let duration_s = row.non_negative(col_duration, "duration")?;
    let gpus = gpu_count(row, col_gpus, "num_gpus")?;
    let job = TraceJob {
        id: 0,
        submit_ms,
        duration_ms: to_ms(duration_s, 1000.0),
        gpus,
        deadline_ms: None,
        gradient_mb: 0,
        source_line: row.line,
    };
    Ok(RowOutcome::Job(job, format!("line {}", row.line)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "timestamp,duration,num_gpus,gpu_time,cluster\n";

    #[test]
    fn sorts_rebases_and_limits() {
        let text = format!(
            "{HEADER}2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,2951.0,4,1,b\n\n2017-10-09 06:13:03,5,2,1,c\n"
        );
        let jobs = parse(&text, "t.csv", None).unwrap();
        assert_eq!(jobs.len(), 3);
        assert_eq!(
            (jobs[0].submit_ms, jobs[0].gpus, jobs[0].duration_ms),
            (0, 4, 2_951_000)
        );
        assert_eq!(
            (jobs[1].submit_ms, jobs[1].gpus, jobs[1].source_line),
            (0, 2, 5)
        );
        assert_eq!(jobs[2].submit_ms, 2_932_000);
        assert_eq!(jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(parse(&text, "t.csv", Some(1)).unwrap().len(), 1);
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "2017-10-09 07:01:55,abc,1,1,a\n",
                "t.csv:2: duration: \"abc\" is not a number",
            ),
            (
                "2017-10-09 07:01:55,-5,1,1,a\n",
                "t.csv:2: duration: \"-5\" is negative",
            ),
            (
                "2017-10-09 07:01:55,5,1.5,1,a\n",
                "t.csv:2: num_gpus: 1.5 is not a whole number",
            ),
            (
                "2017-10-09 07:01:55,5\n",
                "t.csv:2: num_gpus: missing column",
            ),
            ("yesterday,5,1,1,a\n", "t.csv:2: timestamp: \"yesterday\""),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
        crate::trace::test_support::check_missing_column(parse, "timestamp,num_gpus\n", "duration");
    }
}
