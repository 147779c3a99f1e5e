//! `scripts/gantry-slurm@.service`, the systemd unit that runs `gantry slurm` for one
//! partition: its command must be one this build accepts, and systemd must read the unit
//! without a complaint.

use std::path::{Path, PathBuf};
use std::process::Command;

fn unit_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("gantry-slurm@.service")
}

/// The unit's `ExecStart=` line, split into words: the program, then its arguments.
fn exec_start(unit: &str) -> Vec<String> {
    let lines: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ExecStart="))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "the unit has one ExecStart= line: {lines:?}"
    );
    lines[0].split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_service_units_command_parses_for_this_build() {
    let unit = std::fs::read_to_string(unit_path()).expect("scripts/gantry-slurm@.service");
    let words = exec_start(&unit);
    assert!(
        words.first().is_some_and(|p| p.ends_with("/gantry")),
        "ExecStart runs gantry: {words:?}"
    );
    // `%i` is the instance: the partition.
    let args: Vec<String> = words[1..].iter().map(|w| w.replace("%i", "gpu")).collect();
    assert_eq!(args.first().map(String::as_str), Some("slurm"));
    let out = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(&args)
        .arg("--help")
        .output()
        .expect("run gantry");
    assert!(
        out.status.success(),
        "gantry-slurm@.service: `gantry {}` does not parse:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn systemd_reads_the_service_unit_without_a_complaint() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::skip_outside_ci("systemd-analyze is missing (Debian: apt-get install systemd)");
        return;
    }
    let unit = std::fs::read_to_string(unit_path()).expect("scripts/gantry-slurm@.service");
    let program = exec_start(&unit)[0].clone();
    // An instance of the template, running this build (systemd checks the program exists).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let instance = dir.join("gantry-slurm@gpu.service");
    std::fs::write(
        &instance,
        unit.replace(&program, env!("CARGO_BIN_EXE_gantry")),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&instance)
        .output()
        .expect("run systemd-analyze");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Unknown keys and bad values are warnings (exit 0): any line about the unit fails.
    let about_unit: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("gantry-slurm@"))
        .collect();
    assert!(
        out.status.success() && about_unit.is_empty(),
        "systemd-analyze verify gantry-slurm@.service:\n{stderr}"
    );
}
