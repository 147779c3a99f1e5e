//! The `gantry` binary as a user runs it.

use std::process::Command;

fn gantry(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn simulate_without_arguments_prints_the_metrics_table() {
    let out = gantry(&["simulate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "avg JCT (s)",
        "p99 JCT (s)",
        "makespan (s)",
        "GPU utilisation",
        "avg comm cost",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
}

#[test]
fn simulate_json_has_the_documented_keys() {
    let out = gantry(&[
        "simulate",
        "--json",
        "--limit",
        "300",
        "--placement",
        "best-fit",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "jobs",
        "avg_jct_s",
        "p99_jct_s",
        "makespan_s",
        "utilization",
        "avg_comm_cost",
    ] {
        assert!(
            v.get(key).is_some_and(|x| x.is_number()),
            "missing {key} in {v}"
        );
    }
    assert_eq!(v["jobs"], 300);
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = gantry(&["simulate", "--cluster", "4x8"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected RACKSxMACHINESxGPUS"));
    let dir = std::env::temp_dir().join(format!("gantry-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "timestamp,duration,num_gpus\n2017-10-09 07:01:55,12,two\n",
    )
    .unwrap();
    let out = gantry(&["simulate", "--trace", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.csv:2: num_gpus: \"two\" is not a number"),
        "{err}"
    );
}

#[test]
fn dag_gantt_writes_one_panel_per_planner() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-gantt");
    std::fs::create_dir_all(&dir).unwrap();
    // A diamond in STG form: entry 0, tasks 1..=4, exit 5.
    let stg = dir.join("diamond.stg");
    std::fs::write(
        &stg,
        "4\n0 0 0\n1 3 1 0\n2 4 1 1\n3 2 1 1\n4 5 2 2 3\n5 0 1 4\n",
    )
    .unwrap();
    let svg = dir.join("diamond.svg");
    let out = gantry(&[
        "dag",
        "--input",
        stg.to_str().unwrap(),
        "--format",
        "stg",
        "--gpus",
        "2",
        "--planners",
        "heft,random",
        "--device",
        "cpu",
        "--gantt",
        svg.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("heft: makespan") && text.contains("random: makespan"));
    assert!(text.contains("time (ms)"));
}
