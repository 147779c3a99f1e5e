//! `--tias-config FILE`: TIAS's constants ([`TiasConfig`]) from a TOML file.
//!
//! Every constant of TIAS has a default and a reason (docs/tias.md), but one of them is a
//! site's own trade: how many non-deadline completions a met deadline is worth
//! (`deadline_weight`; docs/tias.md, *Tuning*, measures it, and
//! `examples/tias-deadlines-first.toml` puts deadlines first). The file names only what it
//! changes; every other constant keeps the
//! value of the order it is applied to (`tias` or `tias-deadline-safe`, or the `gantry`
//! scheduler's TIAS). Keys are [`TiasConfig`]'s fields, enums by their variant names, the
//! 2D-LAS queues in a `[las]` table:
//!
//! ```toml
//! deadline_weight = 4           # a met deadline is worth 4 non-deadline completions
//! safety_permille = 150         # keep 15 % of the window in reserve
//! hopeless = "Reject"           # Background | BestEffort | Reject
//! deadline_safety = "Index"     # Index | LatestStart
//!
//! [las]
//! thresholds_gpu_s = [3250, 7200, 18000]
//! promote_knob_permille = 0
//! service = "GpuTime"           # GpuTime | Time
//! ```
//!
//! A typo, a value of the wrong kind or out of range is a [`TiasConfigError`] naming the
//! file, the line and the key. A recording keeps the overrides (its header extension), so
//! `gantry replay` builds the same order.

use crate::toml_input::{self, InputError, line_of_key};
use gantry_core::order::{
    DeadlineSafety, HopelessPolicy, LasConfig, LasConfigError, LengthMetric, MAX_LAS_THRESHOLDS,
    RelaxedDeadlinePlacement, TiasConfig,
};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A TIAS configuration file that cannot be used: `file:line: key: problem` (`file: key:
/// problem` when no line is known).
pub type TiasConfigError = InputError;

/// The constants a file changes; `None` keeps the order's own. Serialised into a
/// recording's header extension as it was read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)] // Each field is the `TiasConfig` field of its name.
pub struct TiasOverrides {
    pub las: Option<LasOverrides>,
    pub share_quantile_permille: Option<u16>,
    pub hopeless_quantile_permille: Option<u16>,
    pub safety_permille: Option<u16>,
    pub min_samples: Option<u32>,
    pub sketch_halve_at: Option<u32>,
    pub hopeless: Option<HopelessPolicy>,
    pub relaxed: Option<RelaxedDeadlinePlacement>,
    pub finish_lift_gpu_ms: Option<u64>,
    pub deadline_weight: Option<u32>,
    pub big_gang_permille: Option<u16>,
    pub table_min_samples: Option<u32>,
    pub ratio_min_deadline_jobs: Option<u32>,
    pub table_every_ms: Option<u64>,
    pub table_switch_step_ms: Option<u64>,
    pub table_rows_per_event: Option<u8>,
    pub table_tolerance_log2_q8: Option<u8>,
    pub jobs_per_pass: Option<u16>,
    pub deadline_safety: Option<DeadlineSafety>,
    pub preemption_margin_log2_q8: Option<u16>,
}

/// The 2D-LAS queues' changes (`[las]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LasOverrides {
    /// Queue thresholds in GPU·s, strictly increasing (at most
    /// [`MAX_LAS_THRESHOLDS`]).
    pub thresholds_gpu_s: Option<Vec<u64>>,
    /// Tiresias's PromoteKnob, permille (0 = off).
    pub promote_knob_permille: Option<u32>,
    /// Service as GPU·time (2D-LAS) or run time.
    pub service: Option<LengthMetric>,
}

/// A value a file may not give, with its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    /// The key.
    pub field: &'static str,
    /// Why.
    pub problem: String,
}

/// Reads a `--tias-config FILE` (clap's value parser: the error names the file, line and
/// key).
pub fn parse_arg(path: &str) -> Result<TiasOverrides, TiasConfigError> {
    TiasOverrides::load(Path::new(path))
}

impl TiasOverrides {
    /// Reads and checks a file.
    pub fn load(path: &Path) -> Result<Self, TiasConfigError> {
        let (file, text) = toml_input::read(path)?;
        Self::parse(&text, &file)
    }

    /// Parses and checks file text; `file` labels errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, TiasConfigError> {
        let overrides: Self = toml_input::from_str(text, file)?;
        overrides.apply(TiasConfig::default()).map_err(|invalid| {
            let line = line_of_key(text, invalid.field);
            InputError::at(file, line, invalid.field, invalid.problem)
        })?;
        Ok(overrides)
    }

    /// The changes as the file would give them, `key = value` joined by commas (`[las]`
    /// keys as `las.key`): for a recording's dump and a journal's mismatch message.
    pub fn describe(&self) -> String {
        let table = toml::Table::try_from(self).unwrap_or_default();
        let mut parts = Vec::new();
        for (key, value) in &table {
            match value {
                toml::Value::Table(las) => {
                    for (inner, value) in las {
                        parts.push(format!("{key}.{inner} = {}", plain(value)));
                    }
                }
                value => parts.push(format!("{key} = {}", plain(value))),
            }
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    /// `base` with these changes, or the first value no TIAS may have (a share above the
    /// whole, queue thresholds that do not increase).
    pub fn apply(&self, base: TiasConfig) -> Result<TiasConfig, Invalid> {
        let mut c = base;
        macro_rules! set {
            ($($field:ident),*) => {$(
                if let Some(value) = self.$field {
                    c.$field = value;
                }
            )*};
        }
        set!(
            share_quantile_permille,
            hopeless_quantile_permille,
            safety_permille,
            min_samples,
            sketch_halve_at,
            hopeless,
            relaxed,
            finish_lift_gpu_ms,
            deadline_weight,
            big_gang_permille,
            table_min_samples,
            ratio_min_deadline_jobs,
            table_every_ms,
            table_switch_step_ms,
            table_rows_per_event,
            table_tolerance_log2_q8,
            jobs_per_pass,
            deadline_safety,
            preemption_margin_log2_q8
        );
        if let Some(las) = &self.las {
            c.las = las.apply(c.las)?;
        }
        for (field, permille) in [
            ("share_quantile_permille", c.share_quantile_permille),
            ("hopeless_quantile_permille", c.hopeless_quantile_permille),
            ("safety_permille", c.safety_permille),
            ("big_gang_permille", c.big_gang_permille),
        ] {
            if permille > 1000 {
                return Err(Invalid {
                    field,
                    problem: format!("{permille} is above 1000 (the whole)"),
                });
            }
        }
        for (field, value) in [
            ("deadline_weight", c.deadline_weight),
            ("jobs_per_pass", u32::from(c.jobs_per_pass)),
            ("table_rows_per_event", u32::from(c.table_rows_per_event)),
        ] {
            if value == 0 {
                return Err(Invalid {
                    field,
                    problem: "must be at least 1".into(),
                });
            }
        }
        Ok(c)
    }
}

/// A TOML value as a file writes it (this build's `toml` has no writer): integers and
/// strings, and arrays of them.
fn plain(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => format!("{text:?}"),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(plain).collect();
            format!("[{}]", items.join(", "))
        }
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

impl LasOverrides {
    fn apply(&self, base: LasConfig) -> Result<LasConfig, Invalid> {
        let mut c = match &self.thresholds_gpu_s {
            Some(thresholds) => {
                let mut fresh = LasConfig::from_gpu_secs(thresholds).map_err(|e| Invalid {
                    field: "thresholds_gpu_s",
                    problem: match e {
                        LasConfigError::TooManyThresholds => {
                            format!("more than {MAX_LAS_THRESHOLDS} thresholds")
                        }
                        _ => "thresholds must be above 0 and strictly increasing".into(),
                    },
                })?;
                fresh.promote_knob_permille = base.promote_knob_permille;
                fresh.service = base.service;
                fresh
            }
            None => base,
        };
        if let Some(knob) = self.promote_knob_permille {
            c.promote_knob_permille = knob;
        }
        if let Some(service) = self.service {
            c.service = service;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "deadline_weight = 4\nsafety_permille = 150\nhopeless = \"Reject\"\n\n[las]\nthresholds_gpu_s = [100, 200]\nservice = \"Time\"\n";

    #[test]
    fn a_file_changes_only_what_it_names() {
        let overrides = TiasOverrides::parse(FILE, "t.toml").unwrap();
        let base = TiasConfig {
            deadline_safety: DeadlineSafety::LatestStart,
            ..TiasConfig::default()
        };
        let c = overrides.apply(base).unwrap();
        assert_eq!(c.deadline_weight, 4);
        assert_eq!(c.safety_permille, 150);
        assert_eq!(c.hopeless, HopelessPolicy::Reject);
        assert_eq!(c.las.thresholds_gpu_ms(), [100_000, 200_000]);
        assert_eq!(c.las.service, LengthMetric::Time);
        // Everything else is the base's, the order's own mode included.
        let expected = TiasConfig {
            deadline_weight: 4,
            safety_permille: 150,
            hopeless: HopelessPolicy::Reject,
            las: c.las,
            ..base
        };
        assert_eq!(c, expected);
        assert_eq!(
            TiasOverrides::parse("", "t.toml").unwrap().apply(base),
            Ok(base)
        );
    }

    #[test]
    fn the_changes_are_described_as_a_file_gives_them() {
        let overrides = TiasOverrides::parse(FILE, "t.toml").unwrap();
        assert_eq!(
            overrides.describe(),
            "deadline_weight = 4, hopeless = \"Reject\", las.service = \"Time\", \
             las.thresholds_gpu_s = [100, 200], safety_permille = 150"
        );
        assert_eq!(TiasOverrides::default().describe(), "none");
    }

    #[test]
    fn the_shipped_example_reads() {
        let text = include_str!("../../examples/tias-deadlines-first.toml");
        let overrides = TiasOverrides::parse(text, "tias-deadlines-first.toml").unwrap();
        assert_eq!(
            overrides.describe(),
            "deadline_weight = 32, share_quantile_permille = 950"
        );
    }

    #[test]
    fn every_constant_can_be_set() {
        // Every field of `TiasConfig` (as serde names it) is a key of the file: a field added
        // to the core without an override here is an unknown key, and fails this test.
        let mut config = toml::Table::try_from(TiasConfig::default()).unwrap();
        let las: toml::Table = toml::from_str(
            "thresholds_gpu_s = [3250]\npromote_knob_permille = 0\nservice = \"GpuTime\"\n",
        )
        .unwrap();
        config.insert("las".into(), toml::Value::Table(las));
        let overrides: TiasOverrides = config.try_into().unwrap();
        let c = overrides.apply(TiasConfig::default()).unwrap();
        assert_eq!(c.las.thresholds_gpu_ms(), [3_250_000]);
        assert_eq!(
            TiasConfig {
                las: TiasConfig::default().las,
                ..c
            },
            TiasConfig::default()
        );
    }

    #[test]
    fn bad_files_name_file_line_and_key() {
        let cases = [
            (
                FILE.replace("deadline_weight", "deadline_wieght"),
                "t.toml:1: deadline_wieght: unknown field",
            ),
            (
                FILE.replace("= 150", "= \"high\""),
                "t.toml:2: safety_permille: invalid type",
            ),
            (
                FILE.replace("\"Reject\"", "\"Drop\""),
                "t.toml:3: hopeless: unknown variant `Drop`",
            ),
            (
                FILE.replace("= 150", "= 1500"),
                "t.toml:2: safety_permille: 1500 is above 1000",
            ),
            (
                FILE.replace("= 4", "= 0"),
                "t.toml:1: deadline_weight: must be at least 1",
            ),
            (
                FILE.replace("[100, 200]", "[200, 100]"),
                "t.toml:6: thresholds_gpu_s:",
            ),
            (
                FILE.replace("service", "servce"),
                "t.toml:7: servce: unknown field",
            ),
        ];
        for (text, want) in cases {
            let got = TiasOverrides::parse(&text, "t.toml")
                .unwrap_err()
                .to_string();
            assert!(got.starts_with(want), "{got:?} should start with {want:?}");
        }
        let missing = TiasOverrides::load(Path::new("/nonexistent/t.toml")).unwrap_err();
        assert_eq!((missing.line, missing.field.as_str()), (0, "file"));
        assert_eq!(missing.source_name, "/nonexistent/t.toml");
        assert!(
            missing
                .to_string()
                .starts_with("/nonexistent/t.toml: file: ")
        );
        // An inline `[las]` table: the key is named, with no line to give.
        let inline = "las = { thresholds_gpu_s = [2, 1] }\n";
        let got = TiasOverrides::parse(inline, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(got.starts_with("t.toml: thresholds_gpu_s: "), "{got}");
    }
}
