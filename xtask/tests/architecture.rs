//! The invariants of docs/ARCHITECTURE.md that a reader cannot check at a glance, as tests over
//! the workspace itself:
//!
//! - adapters never depend on each other (read from `cargo metadata`, every kind of dependency);
//! - no crate's module graph has a circle: an edge runs from a file to every file it names
//!   (`crate::`, `super::`, `self::` paths and `use child::`) and from a parent to each child
//!   module it declares (`mod child;`), test code aside;
//! - inside the domain, imports run one way: values, then models, then ports, then use cases,
//!   and never through a facade (`lib.rs`, `ports.rs`, a folder's `mod.rs`);
//! - no function outside tests is longer than 80 lines;
//! - the driving web crates (`rest`, `web`) decide no capability: they never call the
//!   capability check (`Current::require`, `permission::require`, the capability table's
//!   `allows`/`require`); they name actions only to ask the domain;
//! - docs/ARCHITECTURE.md names only paths, tests and Rust items that exist, and every crate
//!   and domain feature folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// What each workspace member is. A new member must be given a role here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The pure core: depends on no other member.
    Domain,
    /// Implements ports (driven) or calls use cases (driving): depends on the domain and on
    /// support libraries only.
    Adapter,
    /// Shared code that implements no port and calls no use case of its own.
    Support,
    /// Wires everything: may depend on any member.
    Composition,
}

fn role(package: &str) -> Option<Role> {
    Some(match package {
        "stablepay-domain" => Role::Domain,
        "stablepay-postgres"
        | "stablepay-chain"
        | "stablepay-webhooks"
        | "stablepay-ratelimit"
        | "stablepay-pdf"
        | "stablepay-email"
        | "stablepay-rest"
        | "stablepay-web" => Role::Adapter,
        "stablepay-http" | "stablepay-test-db" => Role::Support,
        "stablepay" | "stablepay-admin" | "xtask" => Role::Composition,
        _ => return None,
    })
}

#[test]
fn adapters_never_depend_on_each_other() {
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    let mut wrong = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap();
        let Some(mine) = role(name) else {
            wrong.push(format!("{name} has no role in this test: say what it is"));
            continue;
        };
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            if !members.contains(dep) || dep == name {
                continue;
            }
            let theirs = role(dep).unwrap_or(Role::Composition);
            let allowed = match mine {
                Role::Domain => false,
                Role::Adapter | Role::Support => matches!(theirs, Role::Domain | Role::Support),
                Role::Composition => true,
            };
            if !allowed {
                let kind = d["kind"].as_str().unwrap_or("normal");
                wrong.push(format!("{name} ({mine:?}) depends on {dep} ({theirs:?}) as a {kind} dependency"));
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies against the architecture:\n{}", wrong.join("\n"));
    assert!(members.len() >= 10, "too few members found: {members:?}");
}

// ---------------------------------------------------------------------------------------------
// Module graphs.

/// One source file of a crate: its module path and its production code.
struct SourceFile {
    path: Vec<String>,
    shown: String,
    code: String,
    children: BTreeSet<String>,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Module path (`["invoice", "model"]`) of a file under `src`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// The non-test part of a file (comments removed), and the child modules it declares for
/// tests only.
fn production_code(text: &str) -> (String, BTreeSet<String>) {
    let mut code = String::new();
    let mut test_children = BTreeSet::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map(|l| l.trim()).unwrap_or("");
            if let Some(rest) = next.strip_prefix("mod ") {
                if let Some(name) = rest.strip_suffix(';') {
                    test_children.insert(name.trim().to_owned());
                    lines.next();
                    continue;
                }
                // An inline test module runs to the end of the file.
                break;
            }
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    (code, test_children)
}

/// Child modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn declared_children(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')).map(|n| n.trim().to_owned())
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands a path (after its root keyword and `::`) into the segment lists it names:
/// `a::b::{c, d::e}` gives `[a,b,c]` and `[a,b,d,e]`. Answers how many characters it read.
fn expand(text: &[char], prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix;
    let mut i = 0;
    loop {
        while i < text.len() && text[i].is_whitespace() {
            i += 1;
        }
        if i < text.len() && text[i] == '{' {
            i += 1;
            loop {
                while i < text.len() && (text[i].is_whitespace() || text[i] == ',') {
                    i += 1;
                }
                if i >= text.len() || text[i] == '}' {
                    return i + 1;
                }
                i += expand(&text[i..], segs.clone(), out);
            }
        }
        let start = i;
        while i < text.len() && is_ident(text[i]) {
            i += 1;
        }
        if start == i {
            out.push(segs);
            return i;
        }
        segs.push(text[start..i].iter().collect());
        if text.get(i) == Some(&':') && text.get(i + 1) == Some(&':') {
            i += 2;
            continue;
        }
        out.push(segs);
        while i < text.len() && !matches!(text[i], ',' | '}' | ';') {
            i += 1;
        }
        return i;
    }
}

/// Every module path a file's code names, as absolute segment lists.
fn references(file: &SourceFile) -> Vec<Vec<String>> {
    let code: Vec<char> = file.code.chars().collect();
    let here = &file.path;
    let mut out = Vec::new();
    let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
    for (root, base) in [("crate::", Vec::new()), ("super::", parent), ("self::", here.clone())] {
        let root: Vec<char> = root.chars().collect();
        let mut i = 0;
        while i + root.len() <= code.len() {
            if code[i..i + root.len()] == root[..] && (i == 0 || !is_ident(code[i - 1])) {
                expand(&code[i + root.len()..], base.clone(), &mut out);
                i += root.len();
            } else {
                i += 1;
            }
        }
    }
    for stmt in file.code.split(';') {
        let t = stmt.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let Some(path) = t.strip_prefix("use ") else { continue };
        let first: String = path.chars().take_while(|c| is_ident(*c)).collect();
        if file.children.contains(&first) {
            let chars: Vec<char> = path.chars().collect();
            expand(&chars, here.clone(), &mut out);
        }
    }
    out
}

/// A crate's files and the edges between them (module path to module paths).
struct Graph {
    files: BTreeMap<Vec<String>, SourceFile>,
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn graph(src: &Path) -> Graph {
    let mut paths = Vec::new();
    walk(src, &mut paths);
    paths.sort();
    let has_lib = src.join("lib.rs").exists();
    let mut files = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for file in &paths {
        // A binary beside a library is another crate that uses the library by name.
        if has_lib && file == &src.join("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let path = module_path(src, file);
        let (code, test_children) = production_code(&text);
        for child in test_children {
            let mut p = path.clone();
            p.push(child);
            test_only.insert(p);
        }
        let children = declared_children(&code);
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        files.insert(path.clone(), SourceFile { path, shown, code, children });
    }
    files.retain(|p, _| !test_only.contains(p));
    let resolve = |segments: &[String]| -> Option<Vec<String>> {
        (0..=segments.len()).rev().map(|n| segments[..n].to_vec()).find(|p| files.contains_key(p))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (path, file) in &files {
        let entry = edges.entry(path.clone()).or_default();
        for child in &file.children {
            let mut p = path.clone();
            p.push(child.clone());
            if files.contains_key(&p) {
                entry.insert(p);
            }
        }
        for reference in references(file) {
            if let Some(target) = resolve(&reference)
                && &target != path
            {
                entry.insert(target);
            }
        }
    }
    Graph { files, edges }
}

/// Strongly connected components of more than one file.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        next: usize,
        components: Vec<Vec<Vec<String>>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Vec<String>) {
            self.index.insert(v.clone(), self.next);
            self.low.insert(v.clone(), self.next);
            self.next += 1;
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            for w in self.edges.get(v).cloned().unwrap_or_default() {
                if !self.index.contains_key(&w) {
                    self.visit(&w);
                    let lw = self.low[&w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(&w) {
                    let iw = self.index[&w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = &w == v;
                    component.push(w);
                    if done {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut t = Tarjan {
        edges: &g.edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in g.edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    // Each circle as the edges between its files, so a reader sees what ties them.
    t.components
        .iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut ties = Vec::new();
            for from in c {
                for to in g.edges[from].iter().filter(|t| c.contains(t)) {
                    ties.push(format!("{} -> {}", g.files[from].shown, g.files[to].shown));
                }
            }
            ties
        })
        .collect()
}

/// Every crate's `src` and xtask's.
fn source_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    roots.push(root().join("xtask/src"));
    roots.sort();
    roots
}

#[test]
fn no_module_graph_has_a_circle() {
    let mut found = Vec::new();
    let mut edges = 0;
    for src in source_roots() {
        let g = graph(&src);
        edges += g.edges.values().map(BTreeSet::len).sum::<usize>();
        found.extend(circles(&g));
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
    // The parser is not trivially finding nothing.
    assert!(edges > 300, "too few imports found: {edges}");
}

// ---------------------------------------------------------------------------------------------
// The domain's layers.

/// The domain's layers, in the order imports may run (a module imports its own layer or one
/// before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    /// Shared values and the two capabilities they use (`clock`, `crypto`).
    Value,
    /// A feature's entities, values, rules and state machines.
    Model,
    /// A feature's `ports.rs`.
    Port,
    /// A feature's `service.rs` or `service/`, and `use_cases.rs` (all of them over the ports).
    UseCase,
}

/// The layer of a domain module, or `None` for a facade (`lib.rs`, the root `ports.rs`, a
/// folder's `mod.rs`) or test support.
fn layer(path: &[String], is_folder: bool) -> Option<Layer> {
    match path {
        [] => None,
        [one] if one == "ports" || one == "testing" => None,
        [one] if one == "use_cases" => Some(Layer::UseCase),
        [_] if is_folder => None,
        [_] => Some(Layer::Value),
        [_, rest @ ..] if rest.first().is_some_and(|r| r == "service") => Some(Layer::UseCase),
        [_, last] if last == "ports" => Some(Layer::Port),
        _ if is_folder => None,
        _ => Some(Layer::Model),
    }
}

#[test]
fn domain_imports_run_one_way_and_never_through_a_facade() {
    let src = root().join("crates/domain/src");
    let g = graph(&src);
    let folder = |p: &Vec<String>| g.files[p].shown.ends_with("mod.rs") || g.files[p].shown.ends_with("lib.rs");
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (from, targets) in &g.edges {
        let Some(from_layer) = layer(from, folder(from)) else { continue };
        for to in targets {
            let shown = (&g.files[from].shown, &g.files[to].shown);
            match layer(to, folder(to)) {
                None if to.first().is_some_and(|t| t == "testing") => {}
                None => wrong.push(format!("{} imports the facade {}", shown.0, shown.1)),
                Some(to_layer) if to_layer > from_layer => {
                    wrong.push(format!("{} ({from_layer:?}) imports {} ({to_layer:?})", shown.0, shown.1));
                }
                Some(_) => checked += 1,
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the domain's layers:\n{}", wrong.join("\n"));
    assert!(checked > 100, "too few imports checked: {checked}");
}

#[test]
fn the_layers_are_what_the_file_names_say() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(layer(&s(&["money"]), false), Some(Layer::Value));
    assert_eq!(layer(&s(&["invoice", "model"]), false), Some(Layer::Model));
    assert_eq!(layer(&s(&["invoice", "ports"]), false), Some(Layer::Port));
    assert_eq!(layer(&s(&["invoice", "service"]), true), Some(Layer::UseCase));
    assert_eq!(layer(&s(&["invoice", "service", "decide"]), false), Some(Layer::UseCase));
    assert_eq!(layer(&s(&["chain", "service"]), false), Some(Layer::UseCase));
    assert_eq!(layer(&s(&["use_cases"]), false), Some(Layer::UseCase));
    assert_eq!(layer(&s(&["invoice"]), true), None);
    assert_eq!(layer(&s(&["ports"]), false), None);
    assert_eq!(layer(&[], true), None);
}

// ---------------------------------------------------------------------------------------------
// Function length.

/// Functions longer than `max` lines outside tests in `text`: (line, name, length).
fn long_functions(text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(k) = lines.iter().position(|l| l.trim() == "#[cfg(test)]") {
        lines.truncate(k);
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        let words: Vec<&str> = line.split_whitespace().collect();
        let fn_at = words.iter().position(|w| *w == "fn");
        let is_fn = fn_at.is_some_and(|k| {
            words[..k]
                .iter()
                .all(|w| matches!(*w, "pub" | "const" | "async" | "unsafe" | "extern") || w.starts_with("pub("))
        });
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = words[fn_at.unwrap_or(0) + 1].chars().take_while(|c| is_ident(*c)).collect();
        let mut k = i;
        while k < lines.len() && !lines[k].trim_end().ends_with('{') && !lines[k].trim_end().ends_with(';') {
            k += 1;
        }
        if k >= lines.len() || lines[k].trim_end().ends_with(';') {
            i = k + 1;
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        let mut j = k + 1;
        while j < lines.len() && lines[j].trim_end() != close {
            j += 1;
        }
        if j - i + 1 > max {
            out.push((i + 1, name, j - i + 1));
        }
        i = k + 1;
    }
    out
}

#[test]
fn the_driving_web_crates_decide_no_capability() {
    // The capability checks, and a key type compared by hand (what a publishable key may send,
    // see or spend is `KeyType`'s to answer).
    let calls = [
        ".require(",
        "permission::require",
        "capability::require",
        "capability::allows",
        ".permitted(",
        "key_type ==",
        "key_type !=",
        "== KeyType::",
        "!= KeyType::",
    ];
    let mut found = Vec::new();
    for krate in ["rest", "web"] {
        let mut files = Vec::new();
        walk(&root().join("crates").join(krate).join("src"), &mut files);
        for file in files {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let (code, _) = production_code(&std::fs::read_to_string(&file).unwrap());
            for call in calls {
                if code.contains(call) {
                    found.push(format!("{} calls {call}", file.strip_prefix(root()).unwrap().display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "a driving adapter decides a capability itself: {found:#?}");
}

#[test]
fn no_function_outside_tests_is_longer_than_80_lines() {
    let mut found = Vec::new();
    let mut functions = 0;
    for src in source_roots() {
        let mut files = Vec::new();
        walk(&src, &mut files);
        for file in files {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            functions += text.matches("fn ").count();
            for (line, name, length) in long_functions(&text, 80) {
                found.push(format!("{}:{line} {name} ({length} lines)", file.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(found.is_empty(), "functions over 80 lines:\n{}", found.join("\n"));
    assert!(functions > 500, "too few functions found: {functions}");
}

#[test]
fn the_length_check_measures_bodies() {
    let body = |n: usize| format!("pub async fn f() {{\n{}}}\n", "    x();\n".repeat(n));
    assert_eq!(long_functions(&body(78), 80), vec![]);
    assert_eq!(long_functions(&body(79), 80), vec![(1, "f".to_owned(), 81)]);
    let in_tests = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", body(100));
    assert_eq!(long_functions(&in_tests, 80), vec![]);
    assert_eq!(long_functions("fn g();\n", 80), vec![]);
}

/// The spans of `text` between backticks on one line.
fn code_spans(text: &str) -> Vec<&str> {
    text.lines().flat_map(|line| line.split('`').skip(1).step_by(2)).filter(|s| !s.is_empty()).collect()
}

/// The files of the tree (tracked, or new and not ignored), as paths from the root.
fn tracked_files() -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

/// Every name declared in `code`: items, modules, enum variants and fields (roughly: an
/// identifier after a keyword that declares one, or before a `:`, `(`, `{` or `,` that opens or
/// ends one).
fn declared_names(code: &str, out: &mut BTreeSet<String>) {
    let words: Vec<&str> = code.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).collect();
    for pair in words.windows(2) {
        if ["fn", "struct", "enum", "trait", "mod", "const", "type", "static", "macro_rules"].contains(&pair[0]) {
            out.insert(pair[1].to_owned());
        }
    }
    for line in code.lines() {
        let line = line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub(super) ");
        let line = line.trim_start_matches("pub ");
        let name: String = line.chars().take_while(|c| is_ident(*c)).collect();
        let rest = line[name.len()..].trim_start();
        if !name.is_empty() && [":", "(", "{", ","].iter().any(|p| rest.starts_with(p)) && !rest.starts_with("::") {
            out.insert(name);
        }
    }
}

/// docs/ARCHITECTURE.md names only what exists: every path in backticks is a tracked file or
/// folder (given from the root or from any folder: `crates/web/src/`, `postgres/src/emails.rs`
/// and `service/decide.rs` all resolve by their ending), every test an invariant names is a
/// function of the workspace (or a constraint, index or function of the migrations), and every
/// Rust path (`Invoice::check_sendable`, `clock::time_in_mode`) names, segment by segment, a
/// crate, module, item, variant or field that is declared; and every crate and every feature
/// folder of the domain is in the map. A rename that leaves the map behind fails here until
/// the map follows.
#[test]
fn the_architecture_map_names_only_what_exists() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let files = tracked_files();
    let mut folders = BTreeSet::new();
    for f in &files {
        let mut at = f.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            folders.insert(parent.to_owned());
            at = parent;
        }
    }
    let ends = |set: &[&String], want: &str| set.iter().any(|p| *p == want || p.ends_with(&format!("/{want}")));
    let (file_list, folder_list): (Vec<&String>, Vec<&String>) = (files.iter().collect(), folders.iter().collect());
    let mut rust = String::new();
    let mut names = BTreeSet::new();
    for f in files.iter().filter(|f| f.ends_with(".rs")) {
        let text = std::fs::read_to_string(root().join(f)).unwrap_or_default();
        declared_names(&text, &mut names);
        if let Some(stem) = f.rsplit('/').next().and_then(|n| n.strip_suffix(".rs")) {
            names.insert(stem.to_owned());
        }
        if let Some((dir, _)) = f.rsplit_once('/') {
            names.insert(dir.rsplit('/').next().unwrap_or(dir).replace('-', "_"));
        }
        rust.push_str(&text);
    }
    let sql: String = files
        .iter()
        .filter(|f| f.ends_with(".sql"))
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap_or_default())
        .collect();
    // Spans that look like paths but are not files of the tree.
    let not_paths = ["LISTEN/NOTIFY", "multipart/related", "target/screenshots/"];
    let external = ["std", "crate", "self", "super", "web", "http", "postgres", "rest", "stablepay_http"];
    let mut wrong = Vec::new();
    for span in code_spans(&doc) {
        let pathlike = span.contains('/')
            && !span.starts_with('/')
            && !not_paths.contains(&span)
            && span.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c));
        if pathlike {
            let want = span.trim_end_matches('/');
            let is_file = !span.ends_with('/') && want.rsplit('/').next().is_some_and(|n| n.contains('.'));
            let found = if is_file { ends(&file_list, want) } else { ends(&folder_list, want) };
            if !found {
                wrong.push(format!("`{span}`: no such file or folder"));
            }
            continue;
        }
        let test_like = span.matches('_').count() >= 3 && span.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        if test_like && !rust.contains(&format!("fn {span}(")) && !sql.contains(span) {
            wrong.push(format!("`{span}`: no such test or database object"));
            continue;
        }
        let path = span.split('(').next().unwrap_or(span);
        if path.contains("::") && path.chars().all(|c| is_ident(c) || c == ':') {
            for segment in path.split("::").filter(|s| !external.contains(s)) {
                if !names.contains(segment) {
                    wrong.push(format!("`{span}`: `{segment}` is declared nowhere"));
                    break;
                }
            }
        }
    }
    // And it names every crate and every feature folder of the domain.
    for f in &folders {
        let parts: Vec<&str> = f.split('/').collect();
        let named = match parts.as_slice() {
            ["crates", krate] => doc.contains(&format!("`crates/{krate}")),
            ["crates", "domain", "src", feature] => doc.contains(&format!("`{feature}`")),
            _ => true,
        };
        if !named {
            wrong.push(format!("`{f}` is not in the code map"));
        }
    }
    assert!(wrong.is_empty(), "docs/ARCHITECTURE.md names what does not exist:\n{}", wrong.join("\n"));
}
