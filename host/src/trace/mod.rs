//! Trace loaders: turn a recorded workload file into [`TraceJob`]s the simulator replays.
//!
//! Every loader reports bad input as a [`TraceError`] that names the file, the line, the
//! field and the problem (`philly.csv:17: duration: "abc" is not a number`), and never
//! panics. Jobs come back sorted by submit time (ties by file line), with times rebased so
//! the first job arrives at 0 ms.

pub mod alibaba;
pub mod chronus;
pub mod deadlines;
pub mod elasticflow;
pub mod hydra;
pub mod loaded;
pub mod philly;
pub mod terms;
pub mod tiresias;

pub use crate::jobs::{TraceError, TraceFormat, TraceJob};
pub use loaded::{Loaded, Skipped};

use std::fmt;
use std::path::Path;

/// Loads a trace of any format; the first `limit` jobs by submit time are kept. A header
/// that lacks one of the format's columns is a [`TraceError::WrongFormat`] naming the
/// formats whose header does match.
pub fn load(path: &Path, format: TraceFormat, limit: Option<usize>) -> Result<Loaded, TraceError> {
    match load_as(path, format, limit) {
        Err(TraceError::MissingColumn { file, column }) => Err(TraceError::WrongFormat {
            file,
            column,
            format,
            matching: formats_matching(path, format),
        }),
        other => other,
    }
}

/// The formats other than `tried` whose loader gets past the header of `path` (it may still
/// find a bad row later). O(formats · file).
fn formats_matching(path: &Path, tried: TraceFormat) -> Vec<TraceFormat> {
    use clap::ValueEnum;
    TraceFormat::value_variants()
        .iter()
        .copied()
        .filter(|&f| f != tried)
        .filter(|&f| {
            !matches!(
                load_as(path, f, Some(1)),
                Err(TraceError::MissingColumn { .. } | TraceError::Io { .. })
            )
        })
        .collect()
}

fn load_as(path: &Path, format: TraceFormat, limit: Option<usize>) -> Result<Loaded, TraceError> {
    match format {
        TraceFormat::Philly => {
            let jobs = philly::load(path, limit)?;
            let source_ids = jobs
                .iter()
                .map(|j| format!("line {}", j.source_line))
                .collect();
            Ok(Loaded {
                jobs,
                source_ids,
                skipped: Vec::new(),
            })
        }
        TraceFormat::Elasticflow => elasticflow::load(path, limit),
        TraceFormat::Chronus => chronus::load(path, limit),
        TraceFormat::Hydra => hydra::load(path, limit),
        TraceFormat::Tiresias => tiresias::load(path, limit),
        TraceFormat::AlibabaGpu2023 => alibaba::load(path, limit),
        // Its jobs carry models and DAGs a `Loaded` cannot hold: `WorkloadArgs::load` reads it.
        // Here only whether the file looks like one (for the wrong-format hint).
        TraceFormat::Mixed => {
            let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            let first = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'));
            let file = path.display().to_string();
            if !first.is_some_and(|l| l.starts_with('{')) {
                return Err(TraceError::MissingColumn {
                    file,
                    column: "one JSON object per line".into(),
                });
            }
            Err(TraceError::Field {
                file,
                line: 0,
                field: "format".into(),
                problem: "a mixed workload is loaded with its models and DAGs by \
                          gantry::workload, not trace::load"
                    .into(),
            })
        }
    }
}

/// A located field reader over one CSV record; keeps the messages uniform across loaders.
pub(crate) struct Row<'a> {
    pub file: &'a str,
    pub line: usize,
    pub record: &'a csv::StringRecord,
}

impl Row<'_> {
    /// A field error at this row.
    pub fn error(&self, field: &str, problem: impl fmt::Display) -> TraceError {
        TraceError::Field {
            file: self.file.to_string(),
            line: self.line,
            field: field.to_string(),
            problem: problem.to_string(),
        }
    }

    /// The raw text of column `col` (named `field` in messages).
    pub fn text(&self, col: usize, field: &str) -> Result<&str, TraceError> {
        self.record
            .get(col)
            .map(str::trim)
            .ok_or_else(|| self.error(field, "missing column"))
    }

    /// Column `col` as a finite, non-negative number.
    pub fn non_negative(&self, col: usize, field: &str) -> Result<f64, TraceError> {
        let text = self.text(col, field)?;
        let value: f64 = text
            .parse()
            .map_err(|_| self.error(field, format!("{text:?} is not a number")))?;
        if !value.is_finite() {
            return Err(self.error(field, format!("{text:?} is not finite")));
        }
        if value < 0.0 {
            return Err(self.error(field, format!("{text:?} is negative")));
        }
        Ok(value)
    }

    /// Column `col` as an unsigned integer.
    pub fn unsigned(&self, col: usize, field: &str) -> Result<u64, TraceError> {
        let value = self.non_negative(col, field)?;
        if value.fract() != 0.0 || value > u64::MAX as f64 {
            return Err(self.error(field, format!("{value} is not a whole number")));
        }
        Ok(value as u64)
    }
}

/// The column index of `name` in `headers`, or a typed error.
pub(crate) fn column(
    headers: &csv::StringRecord,
    file: &str,
    name: &str,
) -> Result<usize, TraceError> {
    headers
        .iter()
        .position(|h| h.trim() == name)
        .ok_or_else(|| TraceError::MissingColumn {
            file: file.to_string(),
            column: name.to_string(),
        })
}

/// Maps records to the 1-based line they start on, counting from their byte offsets and
/// skipping the blank lines the csv crate passes over, so messages point at the row itself.
/// Records must be asked for in file order; each byte is scanned once overall.
pub(crate) struct LineCounter<'a> {
    text: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    /// A counter over the whole input text.
    pub fn new(text: &'a str) -> Self {
        Self {
            text: text.as_bytes(),
            offset: 0,
            line: 1,
        }
    }

    /// The line `record` starts on.
    pub fn line_of(&mut self, record: &csv::StringRecord) -> usize {
        let Some(pos) = record.position() else {
            return self.line;
        };
        let start = (pos.byte() as usize).clamp(self.offset, self.text.len());
        self.line += self.text[self.offset..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.offset = start;
        let mut line = self.line;
        for &b in &self.text[start..] {
            match b {
                b'\n' => line += 1,
                b'\r' => {}
                _ => break,
            }
        }
        line
    }
}

/// Reads a whole file, mapping IO errors to [`TraceError::Io`].
pub(crate) fn read_file(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A CSV reader over text with headers, flexible row lengths (short rows are reported by
/// field, not by the csv crate), and trimmed fields.
pub(crate) fn csv_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes())
}

/// Sorts jobs by `(submit, source line)`, keeps the first `limit`, rebases time to the first
/// submit and renumbers ids `0..n` in that order.
pub fn finish_jobs(mut jobs: Vec<TraceJob>, limit: Option<usize>) -> Vec<TraceJob> {
    jobs.sort_by_key(|j| (j.submit_ms, j.source_line));
    if let Some(n) = limit {
        jobs.truncate(n);
    }
    let origin = jobs.first().map_or(0, |j| j.submit_ms);
    for (i, job) in jobs.iter_mut().enumerate() {
        job.id = i as u32;
        job.submit_ms -= origin;
        job.deadline_ms = job.deadline_ms.map(|d| d.saturating_sub(origin));
    }
    jobs
}

/// Test helpers shared by the loaders' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::TraceError;

    /// Parses `header` + each case's row as file `t.csv` and checks the error message starts
    /// with the case's expected prefix (`t.csv:LINE: FIELD: problem`).
    pub(crate) fn check_malformed<T: std::fmt::Debug>(
        parse: impl Fn(&str, &str, Option<usize>) -> Result<T, TraceError>,
        header: &str,
        cases: &[(&str, &str)],
    ) {
        for (row, want) in cases {
            let err = parse(&format!("{header}{row}"), "t.csv", None)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{err:?} should start with {want:?}");
        }
    }

    /// Parses `header` alone as file `t.csv` and checks the error names the missing `column`
    /// on line 1.
    pub(crate) fn check_missing_column<T: std::fmt::Debug>(
        parse: impl Fn(&str, &str, Option<usize>) -> Result<T, TraceError>,
        header: &str,
        column: &str,
    ) {
        let err = parse(header, "t.csv", None).unwrap_err().to_string();
        assert_eq!(err, format!("t.csv:1: header: missing column `{column}`"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_format_names_the_formats_whose_header_matches() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let file = dir.join("tiresias.csv");
        std::fs::write(&file, "job_id,num_gpu,submit_time,duration\n1,2,0,60\n").unwrap();
        let err = load(&file, TraceFormat::Philly, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(
                "header: missing column `timestamp` of --format philly; \
                 the header matches --format tiresias"
            ),
            "{err}"
        );
        std::fs::write(&file, "a,b\n1,2\n").unwrap();
        let err = load(&file, TraceFormat::Hydra, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("no format gantry reads has this header"),
            "{err}"
        );
    }
}
