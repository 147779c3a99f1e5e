//! The firmware's one line of JSON, written without `core::fmt`.
//!
//! Nothing else in the firmware formats text, and `core::fmt` (with its padding and integer
//! machinery) would cost more than 2 KiB of flash for this one line: numbers go through
//! `itoa` and every piece is written to the host's stdout as it comes.

use semihosting::io::Write as _;

/// A JSON object written field by field to the host's stdout. Keys and text values are
/// the firmware's own names (no character needs escaping).
pub struct JsonLine {
    out: semihosting::io::Stdout,
    first: bool,
    failed: bool,
}

impl JsonLine {
    /// Opens the object; `None` when the host has no stdout.
    pub fn start() -> Option<Self> {
        let mut line = JsonLine {
            out: semihosting::io::stdout().ok()?,
            first: true,
            failed: false,
        };
        line.raw(b"{");
        Some(line)
    }

    /// `"key":123`
    pub fn number(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        self.raw(itoa::Buffer::new().format(value).as_bytes());
        self
    }

    /// `"key":"value"`
    pub fn text(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        self.raw(b"\"");
        self.raw(value.as_bytes());
        self.raw(b"\"");
        self
    }

    /// `"key":true` or `"key":false`
    pub fn flag(&mut self, key: &str, value: bool) -> &mut Self {
        self.key(key);
        self.raw(if value { b"true" } else { b"false" });
        self
    }

    /// Closes the object and the line; whether every write reached the host.
    pub fn end(mut self) -> bool {
        self.raw(b"}\n");
        !self.failed
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.raw(b",");
        }
        self.first = false;
        self.raw(b"\"");
        self.raw(key.as_bytes());
        self.raw(b"\":");
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.failed |= self.out.write_all(bytes).is_err();
    }
}

/// Writes `parts` to the host's stderr, one after the other (a message without formatting).
pub fn stderr(parts: &[&[u8]]) {
    if let Ok(mut err) = semihosting::io::stderr() {
        for part in parts {
            let _ = err.write_all(part);
        }
    }
}
