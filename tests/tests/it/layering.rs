//! The layering check (in the manner of rust-analyzer's `tidy` tests): reads every source file
//! of the host crate (`host/src`) and the core (`core/src`), follows each module path it
//! names (`use crate::…`, `crate::…` in code, `super::…`, `self::…` and paths through its own
//! child modules) to the file that defines the item, and fails
//!
//! - on an upward import: a file of one top-level module naming a file of another module in
//!   the same or a higher layer of the table in `ARCHITECTURE.md` (section "Layers"), which
//!   this test reads, so the documentation and the check cannot drift apart;
//! - on an import cycle between files;
//! - on a top-level module that the table does not place, or a table entry with no module;
//! - on a `main.rs` longer than 100 lines (it parses, dispatches and prints the error).
//!
//! Each failure names the file and line. Re-exports (`pub use`) are followed to the file that
//! defines the item, so `crate::JobId` in the core counts as an import of `ids.rs`, not of
//! `lib.rs`. Comments, strings and `$crate` (macro hygiene) are not paths.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The repository root (this crate lives in `tests/`).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// One row of the layer table: a crate, the layer's position (0 = bottom), its name, and its
/// top-level modules.
#[derive(Debug)]
struct Layer {
    krate: String,
    rank: usize,
    name: String,
    modules: Vec<String>,
}

/// The rows of the table under `## Layers` in ARCHITECTURE.md whose header is
/// `| crate | layer | modules | … |`, bottom to top per crate.
fn read_layers(architecture: &str) -> Result<Vec<Layer>, String> {
    let text = format!("\n{architecture}");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .ok_or("ARCHITECTURE.md has no `## Layers` section")?;
    let mut layers: Vec<Layer> = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if !in_table {
            in_table = cells.len() >= 3
                && cells[0] == "crate"
                && cells[1] == "layer"
                && cells[2] == "modules";
            continue;
        }
        if cells.len() < 3 || cells[0].starts_with("---") {
            continue;
        }
        let krate = cells[0].trim_matches('`').to_string();
        let rank = layers.iter().filter(|l| l.krate == krate).count();
        let modules: Vec<String> = cells[2]
            .split(',')
            .map(|m| m.trim().trim_matches('`').trim_end_matches('/').to_string())
            .filter(|m| !m.is_empty())
            .collect();
        layers.push(Layer {
            krate,
            rank,
            name: cells[1].to_string(),
            modules,
        });
    }
    if layers.is_empty() {
        return Err(
            "ARCHITECTURE.md: no `| crate | layer | modules |` table under `## Layers`".into(),
        );
    }
    Ok(layers)
}

/// Source text with comments, string and character literals blanked out (lines kept), so
/// only code is scanned for paths.
fn strip(src: &str) -> Vec<char> {
    let s: Vec<char> = src.chars().collect();
    let mut out = s.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..s.len()).find(|&j| s[j] == '\n').unwrap_or(s.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !ident(s[i - 1]) || (s[i - 1] == 'b' && (i < 2 || !ident(s[i - 2]))))
        {
            let hashes = s[i + 1..].iter().take_while(|&&h| h == '#').count();
            if s.get(i + 1 + hashes) != Some(&'"') {
                i += 1; // a raw identifier `r#name`
                continue;
            }
            let mut j = i + 2 + hashes;
            while j < s.len() {
                if s[j] == '"'
                    && s[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), else a lifetime or label.
            let end = if next == Some('\\') {
                (i + 2..s.len().min(i + 12)).find(|&j| s[j] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end + 1);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// A module of a crate: the file it lives in, its child modules, what it defines and what it
/// re-exports.
#[derive(Debug, Default)]
struct Module {
    file: String,
    /// Compiled only for tests (`#[cfg(test)] mod …`).
    test: bool,
    children: BTreeSet<String>,
    /// Items defined here (struct, enum, fn, …), to tell a local item from a glob import.
    items: BTreeSet<String>,
    /// `pub use a::b::Name` → "Name" ↦ the absolute path `a::b::Name`.
    reexports: BTreeMap<String, Vec<String>>,
    /// `pub use a::b::*` → `a::b`.
    globs: Vec<Vec<String>>,
}

/// A path named in code, made absolute (from the crate root).
#[derive(Debug)]
struct Named {
    file: String,
    line: usize,
    path: Vec<String>,
    /// Named by test code (`#[cfg(test)]`).
    test: bool,
}

/// One source file: where it is, the module it is, its code with comments and literals
/// blanked.
struct Source {
    file: String,
    module: Vec<String>,
    /// Compiled only for tests (`#[cfg(test)] mod x;`).
    test: bool,
    code: Vec<char>,
}

/// One crate: its module tree and every path its files name.
#[derive(Default)]
struct CrateMap {
    /// Module path (`a::b`; "" = the root) → module.
    modules: BTreeMap<String, Module>,
    sources: Vec<Source>,
    named: Vec<Named>,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier starting at `i`, if any, and the index after it.
fn ident_at(s: &[char], i: usize) -> Option<(String, usize)> {
    if i >= s.len() || !(s[i].is_alphabetic() || s[i] == '_') {
        return None;
    }
    let end = (i..s.len())
        .find(|&j| !is_ident_char(s[j]))
        .unwrap_or(s.len());
    Some((s[i..end].iter().collect(), end))
}

fn skip_ws(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i].is_whitespace() {
        i += 1;
    }
    i
}

fn key(module: &[String]) -> String {
    module.join("::")
}

/// Parses the rest of a path after its first segment (`prefix`), starting at `i`:
/// `::segment` repeated, then optionally `::{group}` or `::*`. Returns the paths it names
/// (a group names several; `self` in a group and `*` name the prefix), whether it ended in
/// a glob, and the index after it.
fn path_tail(s: &[char], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, bool, usize) {
    loop {
        let j = skip_ws(s, i);
        if !(s.get(j) == Some(&':') && s.get(j + 1) == Some(&':')) {
            return (vec![prefix], false, i);
        }
        let k = skip_ws(s, j + 2);
        match s.get(k) {
            Some('{') => {
                let (paths, end) = group(s, k + 1, &prefix);
                return (paths, false, end);
            }
            Some('*') => return (vec![prefix], true, k + 1),
            _ => match ident_at(s, k) {
                Some((segment, end)) => {
                    prefix.push(segment);
                    i = end;
                }
                None => return (vec![prefix], false, i), // `::<T>`
            },
        }
    }
}

/// The items of a `{…}` use group whose `{` is just before `i`, each under `prefix`.
fn group(s: &[char], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut paths = Vec::new();
    loop {
        i = skip_ws(s, i);
        match s.get(i) {
            None => return (paths, i),
            Some('}') => return (paths, i + 1),
            Some('*') => {
                paths.push(prefix.to_vec());
                i += 1;
            }
            Some('{') => {
                let (inner, end) = group(s, i + 1, prefix);
                paths.extend(inner);
                i = end;
            }
            _ => match ident_at(s, i) {
                Some((word, end)) if word == "as" => {
                    let k = skip_ws(s, end);
                    i = ident_at(s, k).map_or(k + 1, |(_, e)| e);
                }
                Some((word, end)) => {
                    let mut start = prefix.to_vec();
                    if word != "self" {
                        start.push(word);
                    }
                    let (inner, _, end) = path_tail(s, end, start);
                    paths.extend(inner);
                    i = end;
                }
                None => i += 1,
            },
        }
    }
}

/// The file of `mod name;` declared in `file` (relative to `root`).
fn child_file(root: &Path, file: &str, name: &str, path_attr: Option<&str>) -> Option<String> {
    let rel = Path::new(file);
    let dir = rel.parent().unwrap_or(Path::new(""));
    if let Some(p) = path_attr {
        return Some(dir.join(p).to_string_lossy().into_owned());
    }
    let stem = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if matches!(stem, "mod" | "lib" | "main") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    [
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| root.join(p).is_file())
    .map(|p| p.to_string_lossy().into_owned())
}

/// Where the item starting at `i` ends: after its first `;`, or after the `}` matching its
/// first `{`, whichever comes first.
fn item_end(s: &[char], i: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in s.iter().enumerate().skip(i) {
        match c {
            ';' if depth == 0 => return j + 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// A visit of one identifier by [`walk`].
struct Visit<'a> {
    /// The (inline) module the identifier is in.
    module: &'a [String],
    word: &'a str,
    start: usize,
    end: usize,
    line: usize,
    /// How many inline `mod x { … }` enclose it.
    inline: usize,
    /// Whether it is inside an item marked `#[cfg(test)]`.
    test: bool,
}

/// Calls `f` for every identifier of `s` that starts a token; `f` returns where to continue.
/// Tracks inline modules (`mod x { … }`) and items marked `#[cfg(test)]`.
fn walk(s: &[char], module: &[String], mut f: impl FnMut(&Visit<'_>) -> usize) {
    let mut stack: Vec<(Vec<String>, usize)> = vec![(module.to_vec(), 0)];
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut pending_inline: Option<String> = None;
    let mut test_until = 0usize;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == '#' && s.get(i + 1) == Some(&'[') {
            let close = (i..s.len()).find(|&j| s[j] == ']').unwrap_or(s.len());
            let attr: String = s[i + 2..close]
                .iter()
                .filter(|c| !c.is_whitespace())
                .collect();
            if attr == "cfg(test)" {
                test_until = test_until.max(item_end(s, close + 1));
            }
        }
        match c {
            '\n' => line += 1,
            '{' => {
                depth += 1;
                if let Some(name) = pending_inline.take() {
                    let mut inner = stack.last().map(|(m, _)| m.clone()).unwrap_or_default();
                    inner.push(name);
                    stack.push((inner, depth));
                }
            }
            '}' => {
                if stack.len() > 1 && stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            ';' => pending_inline = None,
            _ => {}
        }
        let starts = (c.is_alphabetic() || c == '_')
            && (i == 0
                || !(is_ident_char(s[i - 1])
                    || s[i - 1] == '$'
                    || s[i - 1] == ':'
                    || s[i - 1] == '\''));
        if !starts {
            i += 1;
            continue;
        }
        let Some((word, end)) = ident_at(s, i) else {
            i += 1;
            continue;
        };
        let current = stack.last().map(|(m, _)| m.clone()).unwrap_or_default();
        if word == "mod" {
            let k = skip_ws(s, end);
            if let Some((name, e)) = ident_at(s, k)
                && s.get(skip_ws(s, e)) == Some(&'{')
            {
                pending_inline = Some(name);
            }
        }
        let visit = Visit {
            module: &current,
            word: &word,
            start: i,
            end,
            line,
            inline: stack.len() - 1,
            test: i < test_until,
        };
        let next = f(&visit);
        line += s[i..next.max(i)].iter().filter(|&&c| c == '\n').count();
        i = next.max(end);
    }
}

const DEFINERS: [&str; 9] = [
    "struct",
    "enum",
    "fn",
    "trait",
    "type",
    "const",
    "static",
    "union",
    "macro_rules",
];

impl CrateMap {
    /// Reads the crate whose root file is `root_file` (relative to `repo`): every module file,
    /// what each module declares, and every path named.
    fn read(repo: &Path, root_file: &str) -> Result<Self, String> {
        let mut map = CrateMap::default();
        let mut queue = vec![(root_file.to_string(), Vec::<String>::new(), false)];
        while let Some((file, module, test)) = queue.pop() {
            let text =
                std::fs::read_to_string(repo.join(&file)).map_err(|e| format!("{file}: {e}"))?;
            let orig: Vec<char> = text.chars().collect();
            let code = strip(&text);
            map.modules.entry(key(&module)).or_default().file = file.clone();
            walk(&code, &module, |v| {
                let (current, word, start, end, inline) =
                    (v.module, v.word, v.start, v.end, v.inline);
                if word == "mod" {
                    let k = skip_ws(&code, end);
                    if let Some((name, e)) = ident_at(&code, k) {
                        let mut child = current.to_vec();
                        child.push(name.clone());
                        map.modules
                            .entry(key(current))
                            .or_default()
                            .children
                            .insert(name.clone());
                        let m = map.modules.entry(key(&child)).or_default();
                        m.test = test || v.test;
                        if code.get(skip_ws(&code, e)) == Some(&'{') {
                            m.file = file.clone();
                        } else if inline == 0 {
                            let attr = path_attribute(&orig, start);
                            if let Some(f) = child_file(repo, &file, &name, attr.as_deref()) {
                                queue.push((f, child, test || v.test));
                            }
                        }
                        return e;
                    }
                }
                if DEFINERS.contains(&word) {
                    let k = skip_ws(&code, if word == "macro_rules" { end + 1 } else { end });
                    if let Some((name, e)) = ident_at(&code, k) {
                        map.modules
                            .entry(key(current))
                            .or_default()
                            .items
                            .insert(name);
                        return e;
                    }
                }
                end
            });
            map.sources.push(Source {
                file,
                module,
                test,
                code,
            });
        }
        let sources = std::mem::take(&mut map.sources);
        for source in &sources {
            map.scan_paths(source);
        }
        map.sources = sources;
        Ok(map)
    }

    /// Records every module path `source` names, and its re-exports.
    fn scan_paths(&mut self, source: &Source) {
        let s = &source.code;
        let mut named = Vec::new();
        let mut reexports = Vec::new();
        walk(s, &source.module, |v| {
            let (current, word, end, line) = (v.module, v.word, v.end, v.line);
            let mut at = end;
            let mut public_use = false;
            if word == "pub" {
                let mut k = skip_ws(s, end);
                if s.get(k) == Some(&'(') {
                    k = (k..s.len()).find(|&j| s[j] == ')').map_or(k, |j| j + 1);
                }
                let k = skip_ws(s, k);
                match ident_at(s, k) {
                    Some((w, e)) if w == "use" => {
                        public_use = true;
                        at = e;
                    }
                    _ => return end,
                }
            }
            let (first, first_end) = if public_use || word == "use" {
                match ident_at(s, skip_ws(s, at)) {
                    Some(found) => found,
                    None => return at,
                }
            } else {
                (word.to_string(), end)
            };
            let k = skip_ws(s, first_end);
            let colons = s.get(k) == Some(&':') && s.get(k + 1) == Some(&':');
            let module = self.modules.get(&key(current));
            let relative = matches!(first.as_str(), "crate" | "super" | "self")
                || module.is_some_and(|m| m.children.contains(&first));
            if !relative || !(colons || public_use) {
                return first_end;
            }
            let (paths, glob, stop) = path_tail(s, first_end, vec![first]);
            for p in paths {
                let Some(abs) = absolute(current, &p) else {
                    continue;
                };
                if public_use {
                    reexports.push((key(current), abs.clone(), glob));
                }
                named.push(Named {
                    file: source.file.clone(),
                    line,
                    path: abs,
                    test: source.test || v.test,
                });
            }
            stop
        });
        for (module, target, glob) in reexports {
            let m = self.modules.entry(module).or_default();
            if glob {
                m.globs.push(target);
            } else if let Some(last) = target.last() {
                m.reexports.insert(last.clone(), target.clone());
            }
        }
        self.named.extend(named);
    }

    /// The file that defines what the absolute path `segments` names.
    fn resolve(&self, segments: &[String], depth: usize) -> String {
        let mut module: Vec<String> = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            let Some(m) = self.modules.get(&key(&module)) else {
                break;
            };
            if m.children.contains(segment) {
                module.push(segment.clone());
                continue;
            }
            if depth < 8 && !m.items.contains(segment) {
                if let Some(target) = m.reexports.get(segment) {
                    let mut t = target.clone();
                    t.extend_from_slice(&segments[i + 1..]);
                    return self.resolve(&t, depth + 1);
                }
                for glob in &m.globs {
                    let Some(g) = self.modules.get(&key(glob)) else {
                        continue;
                    };
                    if g.children.contains(segment)
                        || g.items.contains(segment)
                        || g.reexports.contains_key(segment)
                    {
                        let mut t = glob.clone();
                        t.extend_from_slice(&segments[i..]);
                        return self.resolve(&t, depth + 1);
                    }
                }
            }
            return m.file.clone();
        }
        self.modules
            .get(&key(&module))
            .map(|m| m.file.clone())
            .unwrap_or_default()
    }
}

/// The value of a `#[path = "…"]` attribute right before position `at` (a `mod`), if any.
fn path_attribute(orig: &[char], at: usize) -> Option<String> {
    let before: String = orig[..at].iter().collect();
    let attrs = before.trim_end();
    let attr_start = attrs.rfind("#[path")?;
    let attr = &attrs[attr_start..];
    // Only attributes (and whitespace or other attributes) between it and the `mod`.
    if attr.lines().skip(1).any(|l| {
        !l.trim().starts_with("#[") && !l.trim().is_empty() && !l.trim().starts_with("pub")
    }) {
        return None;
    }
    let value = attr.split('"').nth(1)?;
    Some(value.to_string())
}

/// `path` (as written in `module`) from the crate root, or `None` if it climbs above it.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut out = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        out.pop()?;
        rest = &rest[1..];
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// One import between two files: from `file:line`, naming `path`, defined in `target`.
#[derive(Clone, Debug)]
struct Import {
    file: String,
    line: usize,
    path: String,
    target: String,
}

/// Every import between two different files of one crate (first occurrence per pair),
/// except those of test code, and those of a module's root file into the modules it
/// declares (it owns them: `mod.rs` re-exports and calls its children, they use its types).
fn imports(map: &CrateMap) -> Vec<Import> {
    let module_of: BTreeMap<&str, &Vec<String>> = map
        .sources
        .iter()
        .map(|s| (s.file.as_str(), &s.module))
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for n in &map.named {
        if n.test {
            continue;
        }
        let target = map.resolve(&n.path, 0);
        if target.is_empty() || target == n.file {
            continue;
        }
        if let (Some(from), Some(to)) = (
            module_of.get(n.file.as_str()),
            module_of.get(target.as_str()),
        ) && to.len() > from.len()
            && to.starts_with(from)
        {
            continue;
        }
        if !seen.insert((n.file.clone(), target.clone())) {
            continue;
        }
        out.push(Import {
            file: n.file.clone(),
            line: n.line,
            path: format!("crate::{}", n.path.join("::")),
            target,
        });
    }
    out
}

/// The layering problems of one crate (`krate`, root file `root_file` under `repo`) against
/// `layers`: upward imports, cycles, modules the table misses or names wrongly.
fn problems(
    repo: &Path,
    krate: &str,
    root_file: &str,
    layers: &[Layer],
) -> Result<Vec<String>, String> {
    let map = CrateMap::read(repo, root_file)?;
    let mut out = Vec::new();
    let mut placed: BTreeMap<&str, &Layer> = BTreeMap::new();
    for layer in layers.iter().filter(|l| l.krate == krate) {
        for m in &layer.modules {
            if placed.insert(m.as_str(), layer).is_some() {
                out.push(format!(
                    "ARCHITECTURE.md: `{krate}` module `{m}` is in two layers"
                ));
            }
            if !map.modules.contains_key(m) {
                out.push(format!(
                    "ARCHITECTURE.md: `{krate}` layer \"{}\" names `{m}`, which is no module of {root_file}",
                    layer.name
                ));
            }
        }
    }
    let top_level = map
        .modules
        .get("")
        .map(|m| m.children.clone())
        .unwrap_or_default();
    for m in &top_level {
        let test_only = map.modules.get(m.as_str()).is_some_and(|m| m.test);
        if !placed.contains_key(m.as_str()) && !test_only {
            out.push(format!(
                "{root_file}: module `{m}` is in no layer of ARCHITECTURE.md's `{krate}` table"
            ));
        }
    }
    let module_of: BTreeMap<&str, &Vec<String>> = map
        .sources
        .iter()
        .map(|s| (s.file.as_str(), &s.module))
        .collect();
    // The table's deepest module that holds `file`, and its layer.
    let owner = |file: &str| {
        let module = module_of.get(file)?;
        (1..=module.len())
            .rev()
            .find_map(|k| placed.get_key_value(key(&module[..k]).as_str()))
            .map(|(m, l)| (m.to_string(), *l))
    };
    let imports = imports(&map);
    for i in &imports {
        let (Some((from, lf)), Some((to, lt))) = (owner(&i.file), owner(&i.target)) else {
            continue;
        };
        if from != to && lt.rank >= lf.rank {
            out.push(format!(
                "{}:{}: `{}` is defined in {}, in `{to}` (layer {}, \"{}\"), which is not below `{from}` (layer {}, \"{}\"): a module imports only from itself and from lower layers (ARCHITECTURE.md, Layers)",
                i.file,
                i.line,
                i.path,
                i.target,
                lt.rank + 1,
                lt.name,
                lf.rank + 1,
                lf.name
            ));
        }
    }
    for cycle in cycles(&imports, root_file) {
        let mut text = format!("import cycle between {} files:", {
            let files: BTreeSet<&str> = cycle.iter().map(|i| i.file.as_str()).collect();
            files.len()
        });
        for i in &cycle {
            let _ = write!(
                text,
                "\n    {}:{}: `{}` → {}",
                i.file, i.line, i.path, i.target
            );
        }
        out.push(text);
    }
    Ok(out)
}

/// The imports inside each strongly connected group of two or more files (Tarjan), the
/// crate root left out: it only declares modules and re-exports.
fn cycles(imports: &[Import], root_file: &str) -> Vec<Vec<Import>> {
    let mut nodes: Vec<&str> = imports
        .iter()
        .flat_map(|i| [i.file.as_str(), i.target.as_str()])
        .filter(|f| *f != root_file)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index_of = |f: &str| nodes.binary_search(&f).ok();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for i in imports {
        if let (Some(a), Some(b)) = (index_of(&i.file), index_of(&i.target)) {
            next[a].push(b);
        }
    }
    // Iterative Tarjan.
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut counter, mut groups) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on[root] = true;
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k < next[v].len() {
                let w = next[v][*k];
                *k += 1;
                if index[w] == usize::MAX {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on[w] = true;
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = BTreeSet::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    group.insert(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    groups.push(group);
                }
            }
        }
    }
    groups
        .into_iter()
        .map(|g| {
            imports
                .iter()
                .filter(|i| {
                    index_of(&i.file).is_some_and(|a| g.contains(&a))
                        && index_of(&i.target).is_some_and(|b| g.contains(&b))
                })
                .cloned()
                .collect()
        })
        .collect()
}

fn architecture() -> Vec<Layer> {
    let text =
        std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("reading ARCHITECTURE.md");
    read_layers(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// The host crate and the core: every import points down the layer table, and no files
/// import each other in a circle.
#[test]
fn imports_point_down_and_form_no_cycle() {
    let layers = architecture();
    let mut all = Vec::new();
    for (krate, root) in [
        ("gantry-core", "core/src/lib.rs"),
        ("gantry", "host/src/lib.rs"),
    ] {
        all.extend(problems(&repo(), krate, root, &layers).unwrap_or_else(|e| panic!("{e}")));
    }
    assert!(
        all.is_empty(),
        "{} layering problems:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// `main.rs` parses, dispatches and prints the error; each subcommand is its own module.
#[test]
fn main_is_thin() {
    let main =
        std::fs::read_to_string(repo().join("host/src/main.rs")).expect("reading host/src/main.rs");
    let lines = main.lines().count();
    assert!(
        lines <= 100,
        "host/src/main.rs has {lines} lines: it parses, dispatches and prints the error in at most 100 (command logic goes in host/src/commands/)"
    );
}

/// The check itself, on a small crate written for it: an upward import and a cycle are each
/// named by file and line; a path in a comment and one in test code are not imports.
#[test]
fn the_check_names_an_upward_import_and_a_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = [
        ("src/lib.rs", "pub mod high;\npub mod low;\n"),
        ("src/low/mod.rs", "pub mod a;\npub mod b;\npub use a::A;\n"),
        ("src/low/a.rs", "use super::b::B;\npub struct A(pub B);\n"),
        (
            "src/low/b.rs",
            "pub struct B;\n\npub fn f() -> crate::high::H {\n    crate::high::H\n}\nfn g(_: &super::A) {}\n",
        ),
        (
            "src/high.rs",
            "/// `crate::low::b` in a comment is no import.\npub struct H;\n#[cfg(test)]\nmod tests {\n    use crate::low::A;\n}\n",
        ),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating a folder");
        std::fs::write(&path, text).expect("writing a file");
    }
    let table = "## Layers\n\n| crate | layer | modules |\n|---|---|---|\n| `t` | bottom | `low` |\n| `t` | top | `high` |\n";
    let found = problems(
        dir,
        "t",
        "src/lib.rs",
        &read_layers(table).expect("the table"),
    )
    .expect("reading the crate");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with("src/low/b.rs:3: `crate::high::H` is defined in src/high.rs, in `high` (layer 2, \"top\"), which is not below `low` (layer 1, \"bottom\")"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("import cycle between 2 files:")
            && found[1].contains("src/low/a.rs:1: `crate::low::b::B` → src/low/b.rs")
            && found[1].contains("src/low/b.rs:6: `crate::low::A` → src/low/a.rs"),
        "{}",
        found[1]
    );
}
