//! Progress bars for long runs: an [`indicatif`] bar on stderr that appears only once a run
//! has taken [`SHOW_AFTER`] (short runs print nothing), and never when stderr is not a
//! terminal or the user asked for `--quiet`. Shared by threads (compare's runs in parallel
//! count into one bar).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a run goes silent before its bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(2);

/// A bar over `total` units (jobs, planner runs), hidden until [`SHOW_AFTER`].
#[derive(Debug)]
pub struct RunProgress {
    bar: ProgressBar,
    allowed: bool,
    shown: AtomicBool,
}

impl RunProgress {
    /// A bar for `total` `unit`s; `quiet` (or stderr not a terminal) keeps it hidden.
    pub fn new(total: u64, unit: &str, quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let template = format!(
            "{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} {unit} \
             ({{rate}}, ETA {{eta}})"
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}/s", state.per_sec());
                },
            ));
        }
        Self {
            bar,
            allowed: !quiet && std::io::stderr().is_terminal(),
            shown: AtomicBool::new(false),
        }
    }

    /// A bar that never shows (library callers, tests).
    pub fn hidden(total: u64) -> Self {
        let mut p = Self::new(total, "jobs", true);
        p.allowed = false;
        p
    }

    /// Counts `n` more units done; shows the bar once the run is past [`SHOW_AFTER`].
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        if self.allowed
            && !self.shown.load(Ordering::Relaxed)
            && self.bar.elapsed() >= SHOW_AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Units counted so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Whether the bar has been drawn.
    pub fn was_shown(&self) -> bool {
        self.shown.load(Ordering::Relaxed)
    }

    /// Removes the bar from the terminal (if it was shown).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_stays_hidden_when_quiet() {
        let p = RunProgress::new(10, "jobs", true);
        for _ in 0..10 {
            p.inc(1);
        }
        assert_eq!(p.position(), 10);
        assert!(!p.was_shown());
        p.finish();
    }
}
