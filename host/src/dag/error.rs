//! The one error type of the DAG loaders: every problem names the file, the 1-based line, the
//! field and what is wrong (`instance100.csv:17: end_time: "x" is not a number`).

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a DAG input could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DagLoadError {
    /// The file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Bad content at a known place. JSON inputs are one line: `line` is 1 and `field` is the
    /// JSON path (`3.nodes[2].first_wave`).
    #[error("{file}:{line}: {field}: {problem}")]
    Field {
        /// The file name.
        file: String,
        /// 1-based line.
        line: usize,
        /// The column or JSON path.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// A place in an input file, to build located errors without repeating the file name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    pub file: &'a str,
    pub line: usize,
}

impl At<'_> {
    /// An error at this place.
    pub fn err(&self, field: &str, problem: impl fmt::Display) -> DagLoadError {
        DagLoadError::Field {
            file: self.file.to_string(),
            line: self.line,
            field: field.to_string(),
            problem: problem.to_string(),
        }
    }

    /// Parse a number at this place.
    pub fn num<T: std::str::FromStr>(&self, field: &str, text: &str) -> Result<T, DagLoadError> {
        text.trim()
            .parse()
            .map_err(|_| self.err(field, format!("{:?} is not a number", text.trim())))
    }
}

/// Read a whole file, mapping the error to [`DagLoadError::Io`].
pub(crate) fn read(path: &Path) -> Result<String, DagLoadError> {
    std::fs::read_to_string(path).map_err(|source| DagLoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The file's name for messages (the whole path if it has none).
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
