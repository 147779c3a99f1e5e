//! The `gantry` binary as a user runs it.

use std::process::Command;

fn gantry(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn simulate_without_arguments_shows_gantry_beside_the_baselines() {
    let out = gantry(&["simulate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "mixed_sample.jsonl",
        "256 GPUs: 128 v100, 64 p100, 64 k80",
        "| gantry ",
        "| fifo + first-fit + heft ",
        "| fifo + first-fit + list ",
        "| las + best-fit + heft ",
        "| edf + best-fit + list ",
        "avg JCT (s)",
        "DAG JCT (s)",
        "miss rate",
        "GPU util",
        "* best in its column",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
    // One screen: the table and its legend fit in 24 lines.
    assert!(text.lines().count() <= 24, "{text}");
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
        "dag_jobs",
        "avg_jct_dag_s",
    ] {
        assert!(
            v.get(key).is_some_and(|x| x.is_number()),
            "missing {key} in {v}"
        );
    }
    assert_eq!(v["jobs"], 300);
    assert_eq!(v["dag_planner"], "list");
    assert_eq!(v["scheduler"], "fifo + best-fit + list");
    // The side-by-side run: an array, gantry first, with its parts named.
    let out = gantry(&["simulate", "--json", "--limit", "300"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[0]["scheduler"], "gantry");
    assert_eq!(
        (
            &rows[0]["order"],
            &rows[0]["placement"],
            &rows[0]["dag_planner"]
        ),
        (&"tias".into(), &"ppo-gavel".into(), &"worl".into())
    );
    // compare: one row per order × placer × planner, gantry first with --gantry.
    let out = gantry(&[
        "compare",
        "--json",
        "--limit",
        "300",
        "--orders",
        "fifo,las",
        "--placements",
        "best-fit",
        "--dag-planners",
        "list,heft,worl",
        "--gantry",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[0]["scheduler"], "gantry");
    assert_eq!(rows[6]["scheduler"], "las + best-fit + worl");
}

#[test]
fn plot_writes_readable_svgs() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-plots");
    let _ = std::fs::remove_dir_all(&dir);
    let out = gantry(&[
        "simulate",
        "--limit",
        "600",
        "--plot",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (file, title) in [
        ("jct_cdf.svg", "Job completion time (JCT) distribution"),
        ("deadline_miss.svg", "Deadline miss rate"),
        (
            "utilisation_queue.svg",
            "GPU utilisation and queue length over time",
        ),
        ("dag_gantt.svg", "DAG job"),
    ] {
        let svg = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains(title), "{file}");
        assert!(svg.contains("gantry"), "{file} names the schedulers");
    }
}

#[test]
fn bad_mixed_input_names_file_line_and_field() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-mixed-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let good = r#"{"submit_s":0,"duration_s":60,"gpus":1}"#;
    let dag = |tasks: &str, edges: &str| {
        format!(
            r#"{{"submit_s":5,"duration_s":60,"gpus":2,"dag":{{"tasks":[{tasks}],"edges":[{edges}]}}}}"#
        )
    };
    let a = r#"{"work_s":5,"model":"A3C"}"#;
    let cases = [
        (
            dag(&format!("{a},{a}"), "[0,1,10],[1,0,10]"),
            "w.jsonl:2: dag.edges: the DAG has a cycle",
        ),
        (
            dag(&format!(r#"{a},{{"work_s":-3,"model":"A3C"}}"#), ""),
            "w.jsonl:2: dag.tasks[1].work_s: -3 is not a finite work ≥ 0",
        ),
    ];
    for (line, want) in cases {
        let file = dir.join("w.jsonl");
        std::fs::write(&file, format!("{good}\n{line}\n")).unwrap();
        let out = gantry(&[
            "simulate",
            "--trace",
            file.to_str().unwrap(),
            "--format",
            "mixed",
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    let out = gantry(&["simulate", "--gpu-types", "v100:0-15,a100:16-31"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("--gpu-types: a100: GPU type \"a100\" has no throughput entry in gavel_throughputs.csv"),
        "{err}"
    );
    let toml = dir.join("cluster.toml");
    std::fs::write(
        &toml,
        "racks = 2\nmachines_per_rack = 4\ngpu_per_machine = 8\n",
    )
    .unwrap();
    let out = gantry(&["simulate", "--cluster-file", toml.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("cluster.toml:3: gpu_per_machine: unknown field"),
        "{err}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = gantry(&["simulate", "--cluster", "4x8"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected RACKSxMACHINESxGPUS"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
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
    // STG costs are in the file's own unit, not ms (issue 16, item 15).
    assert!(text.contains("time (file units)"), "{text}");
}

/// A diamond STG file in `dir` (entry 0, tasks 1..=4, exit 5).
fn diamond(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let stg = dir.join("diamond.stg");
    std::fs::write(
        &stg,
        "4\n0 0 0\n1 3 1 0\n2 4 1 1\n3 2 1 1\n4 5 2 2 3\n5 0 1 4\n",
    )
    .unwrap();
    stg
}

/// Issue 16, items 9 and 15: the defaults show gantry's planner and the list schedulers, and
/// the units are said (file units for STG; seconds for WORL slices, as in the docs).
#[test]
fn dag_defaults_show_the_methods_and_say_the_units() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-dag-defaults");
    let stg = diamond(&dir);
    let out = gantry(&[
        "dag",
        "--input",
        stg.to_str().unwrap(),
        "--format",
        "stg",
        "--device",
        "cpu",
        "--budget-ms",
        "10",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for planner in ["worl-ls", "heft", "peft", "cpop", "heft-lookahead", "ippts"] {
        assert!(
            text.contains(&format!("| {planner} ")),
            "{planner} missing:\n{text}"
        );
    }
    assert!(text.contains("makespan (file units)"), "{text}");
    assert!(
        text.contains("| 4    |") || text.contains("| 4 "),
        "4 GPUs by default for STG:\n{text}"
    );
    assert!(text.contains("budget 10 ms"), "{text}");
    let help = gantry(&["dag", "--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--budget-ms") && help.contains("worl-ls"),
        "{help}"
    );
    let top = String::from_utf8(gantry(&["--help"]).stdout).unwrap();
    assert!(!top.contains("(HEFT, WOA, random)"), "{top}");
}

/// Issue 16, item 11: a learned planner without its model fails unless --allow-fallback, and
/// then its row says what ran.
#[test]
fn dag_missing_model_fails_or_is_labelled_with_what_ran() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-dag-fallback");
    let stg = diamond(&dir);
    let base = [
        "dag",
        "--input",
        stg.to_str().unwrap(),
        "--format",
        "stg",
        "--device",
        "cpu",
        "--planners",
        "heft,worl,ddqn",
        "--woa-iterations",
        "3",
        "--ddqn-model",
        "/nonexistent/model.onnx",
    ];
    let out = gantry(&base);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--allow-fallback") && err.contains("worl"),
        "{err}"
    );
    let mut allowed = base.to_vec();
    allowed.push("--allow-fallback");
    let out = gantry(&allowed);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("woa (fallback for worl)") && text.contains("woa (fallback for ddqn)"),
        "{text}"
    );
    assert!(
        !text.contains("| worl ") && !text.contains("| ddqn "),
        "{text}"
    );
}

/// Issue 16, item 10: `train dag` writes under `target/` unless `--out` names a path (never
/// over the shipped model by default) and says where it wrote.
#[test]
fn train_dag_writes_under_target_by_default_and_says_where() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-train-dag");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args([
            "train",
            "dag",
            "--episodes",
            "2",
            "--quiet",
            "--worl-traces",
            "/nonexistent",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("written to target/gantry-train/worl_ddqn.onnx"),
        "{err}"
    );
    assert!(dir.join("target/gantry-train/worl_ddqn.onnx").is_file());
    assert!(!dir.join("models").exists());
}

/// A scratch folder for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `../shared/{relative}` beside the repository, or `None` after a "skipped" line.
fn shared(relative: &str) -> Option<std::path::PathBuf> {
    let path = gantry::paths::shared_data(relative);
    if path.is_none() {
        println!("skipped: ../shared/{relative} not found");
    }
    path
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    use std::io::BufRead as _;
    // The reader is gone before gantry writes a byte: every write fails with EPIPE.
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(["simulate", "--limit", "100"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    // `replay --dump | head -1`: the reader leaves after one line of a long dump.
    let file = scratch("cli-pipe").join("run.gantry");
    let rec = gantry(&[
        "simulate",
        "--sample",
        "philly",
        "--order",
        "fifo",
        "--limit",
        "200",
        "--record",
        file.to_str().unwrap(),
    ]);
    assert!(rec.status.success(), "{}", stderr(&rec));
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(["replay", file.to_str().unwrap(), "--dump"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("# gantry recording"), "{first}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

/// Three synthetic jobs in Proximity-DRL's job-sequence layout (work sizes from their
/// formula), so the scenario runs without `../shared`.
fn synthetic_sequences(dir: &std::path::Path) -> std::path::PathBuf {
    use gantry::proximity::jobs::total_work;
    let mut text = String::from(
        "seed,job_id,gpu_request,job_len,gradsize_mb,d_m_tflop,d_f_work,d_f_if_job0_bug_fixed\n",
    );
    let jobs: [(u16, u32, f64, f64); 3] =
        [(2, 5, 100.0, 0.2), (4, 3, 250.0, 0.5), (1, 8, 50.0, 0.1)];
    for (i, &(g, len, grad, d_m)) in jobs.iter().enumerate() {
        let (g0, len0) = (jobs[0].0, jobs[0].1);
        text += &format!(
            "0,{i},{g},{len},{grad},{d_m},{},{}\n",
            total_work(grad, d_m, g0, len0),
            total_work(grad, d_m, g, len)
        );
    }
    let path = dir.join("sequences.csv");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_missing_model_fails_unless_fallback_is_allowed_and_then_labels_the_row() {
    let dir = scratch("cli-fallback");
    let jobs = synthetic_sequences(&dir);
    let args = [
        "compare",
        "--scenario",
        "proximity-drl",
        "--seeds",
        "0",
        "--jobs",
        jobs.to_str().unwrap(),
        "--placements",
        "greedy,ppo",
        "--model",
        "/no/such/model.onnx",
    ];
    let out = gantry(&args);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--allow-fallback"),
        "{}",
        stderr(&out)
    );
    let out = gantry(&[&args[..], &["--allow-fallback"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("| ppo→greedy (fallback: model missing) |"),
        "{text}"
    );
    assert!(!text.contains("| ppo "), "a row labelled plain ppo: {text}");
    // The scenario prints markdown like every other table, and says where episodes came from.
    assert!(text.contains("|-----"), "{text}");
    assert!(
        text.contains("episodes: Proximity-DRL's recorded sequences"),
        "{text}"
    );
    // With the shipped model the row is the learned placer.
    let out = gantry(&args[..args.len() - 2]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("| ppo "), "{}", stdout(&out));
}

#[test]
fn flags_that_do_not_apply_are_refused() {
    let out = gantry(&[
        "compare",
        "--scenario",
        "proximity-drl",
        "--trace",
        "x.csv",
        "--orders",
        "las",
        "--cluster",
        "1x1x8",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("compare --scenario proximity-drl does not use --trace, --cluster, --orders"),
        "{err}"
    );
    let out = gantry(&["compare", "--seeds", "0-3", "--variant", "fixed"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("compare on a trace does not use --seeds, --variant"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn metrics_without_a_population_print_a_dash_and_json_null() {
    let out = gantry(&[
        "simulate", "--sample", "philly", "--order", "fifo", "--limit", "100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let value = |name: &str| {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("no row {name} in {text}"));
        row.split('|').nth(2).unwrap_or("").trim().to_string()
    };
    assert_eq!(value("deadline miss rate"), "—", "{text}");
    assert!(
        value("avg JCT non-deadline / deadline (s)").ends_with(" / —"),
        "{text}"
    );
    assert_eq!(value("arrivals held back (job table full)"), "0", "{text}");
    let out = gantry(&[
        "simulate", "--sample", "philly", "--limit", "100", "--json", "--order", "las",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["avg_jct_deadline_s"].is_null(), "{v}");
    assert!(
        v["avg_jct_dag_s"].is_null() && v["dag_planner"].is_null(),
        "{v}"
    );
    assert_eq!(
        (&v["dag_jobs"], &v["scheduler"]),
        (&0.into(), &"las + first-fit".into())
    );
    assert!(v["deadline_miss_rate"].is_null(), "{v}");
    assert!(v["avg_jct_nondeadline_s"].is_number(), "{v}");
    assert!(v["avg_waiting_s"].is_number() && v["held_back"] == 0, "{v}");
    let run = &v["run"];
    assert_eq!(run["cluster"], "4x8x8", "{v}");
    assert_eq!(run["seed"], 0, "{v}");
    assert_eq!(run["speed_model"], "comm-cost", "{v}");
    assert_eq!(run["gantry_version"], env!("CARGO_PKG_VERSION"), "{v}");
    assert!(
        run["trace"].as_str().unwrap().starts_with("philly_sample"),
        "{v}"
    );
}

#[test]
fn a_bad_output_path_fails_before_anything_runs_in_one_line() {
    // The trace does not exist either: the error must be about --record, checked first.
    let out = gantry(&[
        "simulate",
        "--order",
        "fifo",
        "--trace",
        "/no/such/trace.csv",
        "--record",
        "/no/such/dir/x",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.starts_with("gantry: error: --record /no/such/dir/x: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("Caused by"), "{err}");
    let out = gantry(&[
        "simulate",
        "--order",
        "fifo",
        "--jobs-csv",
        "/no/such/dir/jobs.csv",
    ]);
    assert!(stderr(&out).starts_with("gantry: error: --jobs-csv /no/such/dir/jobs.csv: "));
}

#[test]
fn a_wrong_format_names_the_format_whose_header_matches() {
    let file = scratch("cli-format").join("tiresias.csv");
    std::fs::write(&file, "job_id,num_gpu,submit_time,duration\n1,2,0,60\n").unwrap();
    let out = gantry(&["simulate", "--trace", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "missing column `timestamp` of --format philly; the header matches --format tiresias"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let ok = gantry(&[
        "simulate",
        "--trace",
        file.to_str().unwrap(),
        "--format",
        "tiresias",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn defaults_resolve_against_the_repository_from_another_directory() {
    let elsewhere = scratch("cli-elsewhere");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gantry"))
            .args(args)
            .current_dir(&elsewhere)
            .output()
            .unwrap()
    };
    // The shipped model, from anywhere.
    let out = run(&["simulate", "--limit", "50", "--placement", "ppo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("/ ppo "), "{}", stdout(&out));
    // An input that is nowhere: a clear message naming the flag.
    let out = run(&[
        "tiresias-check",
        "--anchors",
        "no/such/anchors",
        "--inputs",
        "tiny",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--anchors no/such/anchors: not found here nor under the repository"),
        "{}",
        stderr(&out)
    );
    // `../shared` defaults, from anywhere.
    if shared("anchors/tiresias").is_some() {
        let out = run(&["tiresias-check", "--inputs", "tiny"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    if shared("traces/proximity-drl/DNN_properties.csv").is_some() {
        let out = run(&[
            "compare",
            "--scenario",
            "proximity-drl",
            "--seeds",
            "0",
            "--placements",
            "greedy",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("episodes: gantry's own seeded generator"),
            "{}",
            stdout(&out)
        );
    }
}

/// The default main job (the combined scheduler on the bundled mixed sample's three GPU
/// types) records and replays bit for bit; the recording carries what the placer read on
/// mixed hardware, and a replay without it decides differently.
#[test]
fn the_combined_run_on_mixed_gpu_types_records_and_replays() {
    let file = scratch("cli-mixed-record").join("gantry.gantry");
    let out = gantry(&[
        "simulate",
        "--scheduler",
        "gantry",
        "--record",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    replays_with_header_line(
        &file,
        "# mixed GPU types: machine speeds 1000 / 943 / 297 per mille",
    );
    // The same recording with the placement hints left out: the type choice is gone, so
    // the replay must find a difference.
    let bytes = std::fs::read(&file).unwrap();
    let mut recording = gantry::record::decode(&bytes, "test").unwrap();
    assert!(recording.header.placement_hints.is_some());
    recording.header.placement_hints = None;
    let mut stripped = gantry::record::MAGIC.to_vec();
    stripped = postcard::to_extend(&recording.header, stripped).unwrap();
    for entry in &recording.entries {
        stripped = postcard::to_extend(entry, stripped).unwrap();
    }
    let stripped_file = file.with_file_name("no-hints.gantry");
    std::fs::write(&stripped_file, stripped).unwrap();
    let out = gantry(&["replay", stripped_file.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "replayed without hints: {}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("first difference at entry"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn replay_prints_the_runs_metrics_and_a_readable_dump() {
    let file = scratch("cli-replay").join("las.gantry");
    let args = [
        "simulate", "--sample", "philly", "--limit", "300", "--order", "las", "--faults", "0.5",
        "--json", "--record",
    ];
    let out = gantry(&[&args[..], &[file.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let simulated: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        simulated["gpu_failures"].as_u64().unwrap() > 0,
        "{simulated}"
    );
    let out = gantry(&["replay", file.to_str().unwrap(), "--metrics", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replayed, simulated);
    let out = gantry(&["replay", file.to_str().unwrap(), "--dump"]);
    let dump = stdout(&out);
    assert!(
        dump.contains("order las, placer first-fit"),
        "{}",
        &dump[..200]
    );
    assert!(dump.contains(" failed); start job "), "no failure line");
    assert!(
        !dump.contains("GpuId(") && !dump.contains("GpuFailed"),
        "Debug text in the dump"
    );
}

#[test]
fn jobs_csv_has_one_row_per_job() {
    let file = scratch("cli-jobs").join("jobs.csv");
    let out = gantry(&[
        "simulate",
        "--order",
        "fifo",
        "--limit",
        "40",
        "--deadlines",
        "0.5:1.5:3",
        "--jobs-csv",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "job,gpus,submit_s,first_start_s,finish_s,deadline_s,met,jct_s,waiting_s,preemptions,requeues,outcome"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 40);
    let with_deadline = rows.iter().filter(|r| !r[5].is_empty()).count();
    assert!(with_deadline > 0 && with_deadline < 40, "{with_deadline}");
    for r in &rows {
        assert_eq!(
            r[5].is_empty(),
            r[6].is_empty(),
            "met only with a deadline: {r:?}"
        );
        assert_eq!(r[11], "finished", "{r:?}");
    }
}

#[test]
fn train_placement_writes_under_target_and_shows_progress() {
    let Some(_) = shared("traces/proximity-drl/DNN_properties.csv") else {
        return;
    };
    let shipped =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/proximity_ppo.onnx");
    let before = std::fs::read(&shipped).unwrap();
    let out = gantry(&[
        "train",
        "placement",
        "--updates",
        "2",
        "--episodes-per-update",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("target/trained/proximity_ppo.onnx"), "{err}");
    assert!(
        err.contains("flags differ from the shipped recipe"),
        "{err}"
    );
    assert!(
        err.contains("update 1/2") && err.contains("update 2/2"),
        "{err}"
    );
    assert!(stdout(&out).contains("target/trained/proximity_ppo.onnx"));
    assert_eq!(
        std::fs::read(&shipped).unwrap(),
        before,
        "the shipped model changed"
    );
}

#[test]
fn a_tias_config_file_changes_tias_and_travels_with_its_recording() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("reject.toml");
    let file = dir.path().join("tuned.gantry");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--sample",
            "philly",
            "--limit",
            "300",
            "--deadlines",
            "0.3:1.2:2",
            "--cluster",
            "1x2x8",
            "--order",
            "tias",
            "--placement",
            "best-fit",
            "--json",
        ];
        args.extend_from_slice(extra);
        gantry(&args)
    };
    // A typo is refused with the file, line and key, before anything runs.
    std::fs::write(
        &config,
        "# give up on missed deadlines\nhopeles = \"Reject\"\n",
    )
    .unwrap();
    let out = run(&["--tias-config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let want = format!("{}:2: hopeles: unknown field", config.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    // A good file changes TIAS's decisions (hopeless jobs are rejected, not run in the
    // background); the recording replays them.
    std::fs::write(
        &config,
        "# give up on missed deadlines\nhopeless = \"Reject\"\n",
    )
    .unwrap();
    let plain = run(&[]);
    let tuned = run(&[
        "--tias-config",
        config.to_str().unwrap(),
        "--record",
        file.to_str().unwrap(),
    ]);
    assert!(tuned.status.success(), "{}", stderr(&tuned));
    assert!(
        stdout(&plain).contains("\"rejected\":0,"),
        "{}",
        stdout(&plain)
    );
    assert!(
        !stdout(&tuned).contains("\"rejected\":0,"),
        "{}",
        stdout(&tuned)
    );
    // The report says which constants were changed; a run without a file says nothing.
    assert!(
        stdout(&tuned).contains("\"tias_config\":\"hopeless = \\\"Reject\\\"\""),
        "{}",
        stdout(&tuned)
    );
    assert!(!stdout(&plain).contains("tias_config"));
    replays_with_header_line(
        &file,
        "# TIAS constants changed (--tias-config): hopeless = \"Reject\"\n",
    );
}

/// `gantry replay FILE` matches every decision, and `--dump`'s header holds `line`.
fn replays_with_header_line(file: &std::path::Path, line: &str) {
    let out = gantry(&["replay", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("every decision matches"),
        "{}",
        stdout(&out)
    );
    let out = gantry(&["replay", file.to_str().unwrap(), "--dump"]);
    assert!(stdout(&out).contains(line), "{}", &stdout(&out)[..400]);
}
