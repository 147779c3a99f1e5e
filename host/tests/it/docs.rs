//! The docs are checked like code: every relative Markdown link (and its `#anchor`) resolves,
//! every repository path a doc names in a code span exists, and every `gantry …` command the
//! README shows still parses.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// Every Markdown file of the repository, build outputs and fuzz corpora left out.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "corpus" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown file defines (outside code fences), with GitHub's `-1`, `-2`
/// suffixes for repeated headings.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        if !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// `(line number, line)` of every line outside code fences.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut prose = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            prose.push((index + 1, line));
        }
    }
    prose
}

/// `(line, target)` of every inline link `[text](target)` outside code fences and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(text) {
        // Drop code spans, whose brackets are not links.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            found.push((number, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// A Markdown file of the repository: its path, that path from the repository's root (as
/// messages show it) and its text.
struct Doc {
    path: PathBuf,
    shown: String,
    text: String,
}

/// Every Markdown file of the repository under `root`, read.
fn markdown_docs(root: &Path) -> Vec<Doc> {
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    files
        .into_iter()
        .map(|path| Doc {
            shown: path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string(),
            text: std::fs::read_to_string(&path).expect("readable Markdown"),
            path,
        })
        .collect()
}

#[test]
fn relative_markdown_links_resolve() {
    let docs = markdown_docs(&repo_root());
    assert!(docs.len() > 5, "found only {} Markdown files", docs.len());
    let mut broken = Vec::new();
    for Doc {
        path: file,
        shown,
        text,
    } in &docs
    {
        for (line, target) in links(text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let linked = if path_part.is_empty() {
                file.clone()
            } else {
                file.parent().expect("a file has a folder").join(path_part)
            };
            // Links may leave the repository only for the shared data beside it.
            if path_part.starts_with("../shared") || path_part.contains("/shared/") {
                continue;
            }
            if !linked.exists() {
                broken.push(format!("{shown}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor
                && linked.extension().is_some_and(|e| e == "md")
            {
                let linked_text = std::fs::read_to_string(&linked).expect("readable Markdown");
                if !anchors(&linked_text).contains(anchor) {
                    broken.push(format!(
                        "{shown}:{line}: {target}: no heading with that anchor"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The repository's top-level folders: a code span whose first word starts with one of them
/// names a path in the repository.
const REPO_FOLDERS: [&str; 10] = [
    ".ci/",
    "core/",
    "docs/",
    "examples/",
    "fuzz/",
    "host/",
    "kernels/",
    "models/",
    "scripts/",
    "tests/",
];

/// `(line, path)` of every repository path named in a code span outside code fences: the
/// span's first word, when it starts with a top-level folder, without a `:line` suffix or an
/// `#anchor`. Spans with placeholders or globs (`*`, `…`, `<`, `{`, `$`) are left out.
fn repo_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(text) {
        for span in line.split('`').skip(1).step_by(2) {
            let Some(word) = span.split_whitespace().next() else {
                continue;
            };
            if !REPO_FOLDERS.iter().any(|folder| word.starts_with(folder))
                || word.contains(['*', '…', '<', '{', '$'])
            {
                continue;
            }
            let path = word.split([':', '#']).next().unwrap_or(word);
            found.push((number, path.to_string()));
        }
    }
    found
}

/// The docs name files as evidence (a test, a script, a module); a renamed or removed file
/// must take its mentions along. CHANGELOG.md is history: it names files as they were.
#[test]
fn repository_paths_in_docs_exist() {
    let root = repo_root();
    let mut missing = Vec::new();
    let mut checked = 0;
    let docs = markdown_docs(&root);
    for Doc { shown, text, .. } in docs.iter().filter(|d| !d.path.ends_with("CHANGELOG.md")) {
        for (line, path) in repo_paths(text) {
            checked += 1;
            if !root.join(&path).exists() {
                missing.push(format!("{shown}:{line}: `{path}`: no such file or folder"));
            }
        }
    }
    assert!(
        checked > 50,
        "found only {checked} repository paths in the docs"
    );
    assert!(
        missing.is_empty(),
        "docs name paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The arguments of every `gantry …` command in the README's shell blocks (the first
/// command's `cargo run --release -p gantry --` prefix counts as `gantry`).
fn readme_commands(readme: &str) -> Vec<(usize, Vec<String>)> {
    let mut commands = Vec::new();
    let mut in_shell = false;
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in readme.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("```") {
            in_shell = !in_shell && (line == "```sh" || line == "```bash" || line == "```shell");
            continue;
        }
        if !in_shell {
            continue;
        }
        let code = line.split(" #").next().unwrap_or("").trim();
        let (start, text) = match pending.take() {
            Some((start, mut text)) => {
                text.push(' ');
                text.push_str(code);
                (start, text)
            }
            None => (index + 1, code.to_string()),
        };
        if let Some(joined) = text.strip_suffix('\\') {
            pending = Some((start, joined.trim_end().to_string()));
            continue;
        }
        let args = text
            .strip_prefix("cargo run --release -p gantry -- ")
            .or_else(|| text.strip_prefix("gantry "));
        if let Some(args) = args {
            commands.push((start, args.split_whitespace().map(str::to_string).collect()));
        }
    }
    commands
}

#[test]
fn readme_commands_parse() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let commands = readme_commands(&readme);
    assert!(
        commands.len() >= 4,
        "README shows only {} gantry commands",
        commands.len()
    );
    for (line, args) in commands {
        // Pipes and redirections belong to the shell, not to gantry.
        let args: Vec<&String> = args
            .iter()
            .take_while(|a| !matches!(a.as_str(), "|" | ">" | "&&" | ";"))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_gantry"))
            .args(&args)
            .arg("--help")
            .current_dir(repo_root())
            .output()
            .expect("run gantry");
        assert!(
            out.status.success(),
            "README.md:{line}: `gantry {}` no longer parses:\n{}",
            args.iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug(" Set-up: two commands"), "set-up-two-commands");
    assert_eq!(
        slug(" Measured on the Cortex-M4F (QEMU `mps2-an386`)"),
        "measured-on-the-cortex-m4f-qemu-mps2-an386"
    );
    let anchors = anchors("# A\n## A\n```\n# not a heading\n```\n");
    assert_eq!(anchors.into_iter().collect::<Vec<_>>(), ["a", "a-1"]);
}

#[test]
fn links_skip_code() {
    let found = links("see [x](a.md#b) and `[y](z.md)`\n```\n[q](r.md)\n```\n");
    assert_eq!(found, vec![(1, "a.md#b".to_string())]);
}

#[test]
fn repo_paths_take_the_first_word_of_a_span_and_skip_placeholders() {
    let text = "run `scripts/x.sh --seed S`, see `host/src/a.rs:12` and `core/src/b.rs#L3`;\n\
                not `gantry slurm`, `DIR/job.end`, `host/src/*.rs` or `docs/…`\n\
                ```\nscripts/in-a-fence.sh\n```\n";
    let found: Vec<String> = repo_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(found, ["scripts/x.sh", "host/src/a.rs", "core/src/b.rs"]);
}
