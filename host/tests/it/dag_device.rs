//! `gantry dag --device`: `auto` works on a machine without a GPU (one notice line, the CPU
//! path) and gives the same plan as `cpu`; `cuda` is an error there.

use std::process::Command;

/// A 60-task WORL slice written to a temporary folder (synthetic fan-in 3 at load), removed
/// when the guard drops.
fn slice() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instance60.csv");
    let mut text = String::from("task_name,job_name,start_time,end_time\n");
    for i in 0..60u32 {
        let start = 100 + i;
        text.push_str(&format!(
            "task_x,j_1,{start},{}\n",
            start + 5 + (i * 37) % 91
        ));
    }
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn dag(input: &std::path::Path, device: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args([
            "dag",
            "--format",
            "worl",
            "--gpus",
            "6",
            "--planners",
            "woa,woa-heft",
        ])
        .args([
            "--woa-iterations",
            "8",
            "--json",
            "--device",
            device,
            "--input",
        ])
        .arg(input)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

fn makespans(out: &std::process::Output) -> Vec<(String, f64)> {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["planner"].as_str().unwrap().to_string(),
                r["makespan"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn auto_works_everywhere_and_matches_cpu() {
    let (_dir, input) = slice();
    let cpu = dag(&input, "cpu");
    assert!(
        cpu.status.success(),
        "{}",
        String::from_utf8_lossy(&cpu.stderr)
    );
    assert!(
        cpu.stderr.is_empty(),
        "cpu printed {}",
        String::from_utf8_lossy(&cpu.stderr)
    );
    let auto = dag(&input, "auto");
    assert!(
        auto.status.success(),
        "{}",
        String::from_utf8_lossy(&auto.stderr)
    );
    assert_eq!(makespans(&auto), makespans(&cpu));
    let notice = String::from_utf8_lossy(&auto.stderr);
    let v: serde_json::Value = serde_json::from_slice(&auto.stdout).unwrap();
    if v[0]["evaluated_on"] == "cpu" {
        assert_eq!(notice.lines().count(), 1, "one notice line, got {notice:?}");
        assert!(notice.contains("no usable CUDA GPU"), "{notice}");
        let cuda = dag(&input, "cuda");
        assert!(
            !cuda.status.success(),
            "--device cuda without a GPU must fail"
        );
    } else {
        eprintln!("GPU present: auto used CUDA with the CPU's results");
    }
}
