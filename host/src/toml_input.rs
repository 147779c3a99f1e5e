//! TOML input files (`--cluster-file`, `--tias-config`): parsing with the place of every
//! error, so that a typo or a value of the wrong kind is reported as `file:line: key:
//! problem`, the form of every input error (see [`TraceError`](crate::jobs::TraceError)).

use serde::de::DeserializeOwned;
use std::ops::Range;
use std::path::Path;

/// An input file or flag that cannot be used, with where and what: `file:line: field:
/// problem`, or `file: field: problem` when no line is known (a flag, the file as a whole).
/// The error of cluster files and flags (`ClusterError`) and of `--tias-config` files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct InputError {
    /// The file, or the flag (`--gpu-types`).
    pub source_name: String,
    /// 1-based line, or 0 for a flag or the file as a whole.
    pub line: usize,
    /// The field (`racks`, `gpu_types`, a type name, a TIAS constant).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl InputError {
    /// An error at `source:line` in `field`.
    pub fn at(source: &str, line: usize, field: &str, problem: impl Into<String>) -> Self {
        Self {
            source_name: source.to_string(),
            line,
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    fn render(&self) -> String {
        if self.line == 0 {
            format!("{}: {}: {}", self.source_name, self.field, self.problem)
        } else {
            format!(
                "{}:{}: {}: {}",
                self.source_name, self.line, self.field, self.problem
            )
        }
    }
}

/// Reads an input file: its name as errors give it (the path as shown) and its text, or an
/// error at `file`.
pub fn read(path: &Path) -> Result<(String, String), InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::at(&name, 0, "file", e.to_string()))?;
    Ok((name, text))
}

/// Parses `text` (read from `source`) as a `T`; a syntax error, an unknown or missing key or
/// a value of the wrong kind comes back with its line and key.
pub fn from_str<T: DeserializeOwned>(text: &str, source: &str) -> Result<T, InputError> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        let line = e.span().map_or(0, |s| line_of(text, s.start));
        InputError::at(source, line, &field_of(&message, text, e.span()), message)
    })
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based line where `key` is assigned (`key = …` at the start of a line), or 0: where a
/// value that parsed is then found out of range.
pub fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|line| line.split('=').next().map(str::trim) == Some(key))
        .map_or(0, |i| i + 1)
}

/// The field a TOML error is about: the quoted key in messages like "unknown field `rakcs`"
/// or "missing field `racks`", else the key on the error's line (an "unknown variant `x`"
/// quotes the value, not the key).
fn field_of(message: &str, text: &str, span: Option<Range<usize>>) -> String {
    let names_field = message.starts_with("unknown field") || message.starts_with("missing field");
    if names_field
        && let Some(start) = message.find('`')
        && let Some(len) = message[start + 1..].find('`')
    {
        return message[start + 1..start + 1 + len].to_string();
    }
    let Some(span) = span else {
        return "file".into();
    };
    let line_start = text[..span.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    line.split('=').next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        first: u16,
        second: Option<String>,
    }

    #[test]
    fn problems_name_their_line_and_key() {
        let typo = from_str::<Two>("first = 1\nsecnd = \"x\"\n", "t.toml").unwrap_err();
        assert_eq!((typo.line, typo.field.as_str()), (2, "secnd"));
        assert!(
            typo.to_string()
                .starts_with("t.toml:2: secnd: unknown field")
        );
        let kind = from_str::<Two>("first = \"one\"\n", "t.toml").unwrap_err();
        assert_eq!((kind.line, kind.field.as_str()), (1, "first"));
        let missing = from_str::<Two>("second = \"x\"\n", "t.toml").unwrap_err();
        assert_eq!(missing.field, "first");
        assert!(from_str::<Two>("first = 3\n", "t.toml").is_ok());
    }

    #[test]
    fn a_key_is_found_on_its_line() {
        let text = "# comment\nfirst = 1\n  second = \"a = b\"\n";
        assert_eq!(line_of_key(text, "first"), 2);
        assert_eq!(line_of_key(text, "second"), 3);
        assert_eq!(line_of_key(text, "third"), 0);
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, text.len()), 4);
    }
}
