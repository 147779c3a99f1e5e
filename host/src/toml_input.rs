//! TOML input files (`--cluster-file`, `--tias-config`): parsing with the place of every
//! error, so that a typo or a value of the wrong kind is reported as `file:line: key:
//! problem`, the form of every input error (see [`TraceError`](crate::jobs::TraceError)).

use serde::de::DeserializeOwned;
use std::ops::Range;

/// Where a TOML input is wrong and what is wrong: the 1-based line (0 when the file as a
/// whole is), the key, and the parser's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TomlProblem {
    /// 1-based line, or 0.
    pub line: usize,
    /// The key the problem is about (`file` when none is known).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Parses `text` as a `T`; a syntax error, an unknown or missing key or a value of the wrong
/// kind comes back with its line and key.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, TomlProblem> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        TomlProblem {
            line: e.span().map_or(0, |s| line_of(text, s.start)),
            field: field_of(&message, text, e.span()),
            message,
        }
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
        let typo = from_str::<Two>("first = 1\nsecnd = \"x\"\n").unwrap_err();
        assert_eq!((typo.line, typo.field.as_str()), (2, "secnd"));
        let kind = from_str::<Two>("first = \"one\"\n").unwrap_err();
        assert_eq!((kind.line, kind.field.as_str()), (1, "first"));
        let missing = from_str::<Two>("second = \"x\"\n").unwrap_err();
        assert_eq!(missing.field, "first");
        assert!(from_str::<Two>("first = 3\n").is_ok());
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
