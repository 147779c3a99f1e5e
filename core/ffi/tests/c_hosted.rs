//! Builds the C library as a static library for this host and the C example
//! `examples/c-hosted` against it (`make run`, `-std=c99 -Wall -Wextra -Werror -pedantic`),
//! runs it, and checks what it printed; then compiles the header alone as C99 and as C++17
//! with the same warnings. Outside CI (no `CI` variable) a machine without `make` or `cc`
//! skips with a notice; in CI that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `tool` runs; if not, skips (or fails in CI).
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "{tool} is missing in CI");
        println!("skipped: no {tool} on this machine");
    }
    ok
}

#[test]
fn the_hosted_c_example_builds_and_runs() {
    let example = root().join("examples/c-hosted");
    if !example.exists() {
        // The published package: the example lives in the repository.
        println!("skipped: {} is not here", example.display());
        return;
    }
    if !(have("make") && have("cc")) {
        return;
    }
    let out = Command::new("make")
        .arg("-C")
        .arg(&example)
        .arg("run")
        .output()
        .expect("make runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "make run failed:\n{stdout}\n{stderr}");
    // The build's identity, the first starts, the failed GPU's preemption, the restore.
    for want in [
        "tias + best-fit, 64 GPUs, 256 jobs",
        "0 ms: start job 1 on",
        "0 ms: start job 2 on",
        "60000 ms: preempt job 1",
        "restored ",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    // After the restore, the repaired GPU lets the waiting job start.
    let after = &stdout[stdout.find("restored ").unwrap()..];
    assert!(
        after.contains(": start job "),
        "nothing started after the restore:\n{stdout}"
    );
}

#[test]
fn the_header_is_clean_c99_and_cpp17() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let dir = std::env::temp_dir().join(format!("gantry-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("header.c");
    std::fs::write(
        &source,
        "#include \"gantry.h\"\nint main(void) { GantryScheduler *s = 0; (void)s; return 0; }\n",
    )
    .unwrap();
    for (compiler, flags) in [
        ("cc", &["-std=c99", "-x", "c"][..]),
        ("c++", &["-std=c++17", "-x", "c++"][..]),
    ] {
        if !have(compiler) {
            continue;
        }
        let out = Command::new(compiler)
            .args(flags)
            .args([
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-fsyntax-only",
                "-I",
            ])
            .arg(&include)
            .arg(&source)
            .output()
            .expect("the compiler runs");
        assert!(
            out.status.success(),
            "{compiler} {flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
