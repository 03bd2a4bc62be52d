//! The shape of the code: no import circle between the files of `src/`.
//!
//! A file that names another (`use crate::service::accounts::…`,
//! `super::strikes::…`, `conn::Batch` from the file declaring `mod conn`,
//! a path written inline) depends on it; a folder's `mod.rs` naming its own
//! files is the folder, not a use. Where two
//! files depend on each other, directly or round a longer loop, neither can
//! be read, moved or tested without the other: a helper both need belongs
//! in a file below both. Test modules (`#[cfg(test)] mod tests { … }` at a
//! file's end) are left out: they may reach anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path: `src/service/exports/mod.rs` is
/// `["service", "exports"]`, `src/lib.rs` is `[]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text a file contributes to the graph: without comments, string
/// literals and its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

/// Expands `use` trees (`a::{b, c::{d, self}}`) to whole paths.
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        let path = path.trim_end_matches("::self").trim_end_matches("::*");
        if path == "self" {
            out.push(prefix.to_string());
        } else {
            out.push(join(prefix, path));
        }
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// The modules a file declares (`mod conn;`): paths may start at them.
fn children_of(code: &str) -> Vec<String> {
    let declared = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    declared
        .captures_iter(code)
        .map(|m| m[1].to_string())
        .collect()
}

/// Every path the code names that starts at `crate`, `super`, `self` or
/// one of the file's own modules (`children`).
fn paths_named(code: &str, children: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let uses = regex::Regex::new(r"(?s)\buse\s+([^;]+);").unwrap();
    for m in uses.captures_iter(code) {
        expand_use(&m[1], "", &mut out);
    }
    let mut starts = vec!["crate".to_string(), "super".into(), "self".into()];
    starts.extend(children.iter().cloned());
    let inline = regex::Regex::new(&format!(r"\b(?:{})(?:::\w+)+", starts.join("|"))).unwrap();
    for m in inline.find_iter(&uses.replace_all(code, "")) {
        // Not the tail of a longer path (`a::conn::x`, `x.conn::y`).
        let before = code_before(code, m.start());
        if before != Some(':') && before != Some('.') {
            out.push(m.as_str().to_string());
        }
    }
    out
}

fn code_before(code: &str, at: usize) -> Option<char> {
    code[..at].chars().next_back()
}

/// The module a path names from inside `here` (a file's module; `is_dir`
/// when the file is a `mod.rs` or `lib.rs`, whose `self` is itself).
fn resolve(here: &[String], children: &[String], path: &str) -> Option<Vec<String>> {
    let mut parts = path.split("::");
    let mut at: Vec<String> = match parts.next()? {
        "crate" => Vec::new(),
        "super" => {
            let mut m = here.to_vec();
            m.pop()?;
            m
        }
        "self" => here.to_vec(),
        child if children.iter().any(|c| c == child) => {
            let mut m = here.to_vec();
            m.push(child.to_string());
            m
        }
        _ => return None,
    };
    for p in parts {
        if p == "super" {
            at.pop()?;
        } else {
            at.push(p.to_string());
        }
    }
    Some(at)
}

/// The file holding the longest prefix of `module` that is a file.
fn file_of(files: &BTreeMap<Vec<String>, String>, module: &[String]) -> Option<String> {
    (0..=module.len())
        .rev()
        .find_map(|n| files.get(&module[..n]).cloned())
}

/// Files that depend on each other, round a loop: each strongly connected
/// group of more than one file (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w.as_str()]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w.as_str()) {
                    let low = self.low[v].min(self.index[w.as_str()]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_file_of_the_service_is_in_an_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: BTreeMap<Vec<String>, String> = paths
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&src).unwrap().display().to_string();
            (module_of(&src, p), name)
        })
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &paths {
        let here = module_of(&src, path);
        let name = files[&here].clone();
        // `self` in a `mod.rs` is the folder's module; elsewhere, the file.
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        let edges = graph.entry(name.clone()).or_default();
        let children = children_of(&code);
        for named in paths_named(&code, &children) {
            let Some(module) = resolve(&here, &children, &named) else {
                continue;
            };
            if let Some(target) = file_of(&files, &module) {
                // A folder's `mod.rs` names the files it is made of (it
                // declares them, and re-exports what they hold): that is
                // the folder, not a use of them, and its files may use
                // what it holds. Between files, every use counts.
                let into_own_folder =
                    name.ends_with("mod.rs") && target.starts_with(name.trim_end_matches("mod.rs"));
                if target != name && target != "lib.rs" && !into_own_folder {
                    edges.insert(target);
                }
            }
        }
    }
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(
        edges > 300,
        "only {edges} imports found: is the scan still right?"
    );
    let found = circles(&graph);
    // Each group with the imports that tie it, to cut one of.
    let said: Vec<String> = found
        .iter()
        .map(|group| {
            let ties: Vec<String> = group
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| group.contains(to))
                        .map(move |to| format!("    {from} -> {to}"))
                })
                .collect();
            format!("  {}\n{}", group.join(" "), ties.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "files in import circles (each group depends on itself through the others):\n{}",
        said.join("\n")
    );
}
