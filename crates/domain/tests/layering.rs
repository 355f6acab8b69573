//! The domain's modules import one another in one direction only: values, then models and
//! state machines, then ports, then use cases. This test reads the crate's own source, builds
//! the graph of which file imports which (every `crate::` and `super::` path outside test
//! code, and `use child::...` of a declared child module), and fails on any circle, naming the
//! files in it. Re-exports (`pub use`) count as imports, so a facade module (`lib.rs`,
//! `ports.rs`, `invoice/mod.rs`) must never be imported from inside the crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (e.g. `["invoice", "model"]`) of a source file.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
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

/// The non-test part of a file, and the names of child modules it declares as test-only.
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
        // Comments may mention paths; they are not imports.
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    (code, test_children)
}

/// Child modules a file declares (`mod x;` / `pub mod x;`).
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

/// Expands a path expression starting at `text` (after its root keyword and `::`) into the
/// full segment lists it names: `a::b::{c, d::e}` gives `[a,b,c]` and `[a,b,d,e]`.
fn expand(text: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix;
    let mut i = 0;
    let bytes: Vec<char> = text.chars().collect();
    loop {
        while i < bytes.len() && bytes[i].is_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == '{' {
            i += 1;
            loop {
                while i < bytes.len() && (bytes[i].is_whitespace() || bytes[i] == ',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == '}' {
                    return i + 1;
                }
                let rest: String = bytes[i..].iter().collect();
                i += expand(&rest, segs.clone(), out);
            }
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if start == i {
            out.push(segs);
            return i;
        }
        segs.push(bytes[start..i].iter().collect());
        if bytes.get(i) == Some(&':') && bytes.get(i + 1) == Some(&':') {
            i += 2;
            continue;
        }
        // `as alias` or the end of the path.
        out.push(segs);
        while i < bytes.len() && !matches!(bytes[i], ',' | '}' | ';') {
            i += 1;
        }
        return i;
    }
}

/// Every module path a file's code refers to, as absolute segment lists.
fn references(code: &str, here: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // The module `super` names: the parent of a non-mod file's module.
    let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
    for (root, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(root) {
            let at = from + pos;
            let preceded_by_ident = code[..at].chars().next_back().is_some_and(is_ident);
            from = at + root.len();
            if preceded_by_ident {
                continue;
            }
            expand(&code[from..], base.clone(), &mut out);
        }
    }
    // `use child::...` of a declared child module.
    for stmt in code.split(';') {
        let t = stmt.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let Some(path) = t.strip_prefix("use ") else { continue };
        let first: String = path.chars().take_while(|c| is_ident(*c)).collect();
        if children.contains(&first) {
            expand(path, here.to_vec(), &mut out);
        }
    }
    out
}

#[test]
fn domain_imports_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();

    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut code_of: BTreeMap<Vec<String>, (String, BTreeSet<String>)> = BTreeMap::new();
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let path = module_path(&src, file);
        let (code, test_children) = production_code(&text);
        for child in test_children {
            let mut p = path.clone();
            p.push(child);
            test_only.insert(p);
        }
        let children = declared_children(&code);
        modules.insert(path.clone(), file.strip_prefix(&src).unwrap().display().to_string());
        code_of.insert(path, (code, children));
    }

    let resolve = |segments: &[String]| -> Option<Vec<String>> {
        (0..=segments.len()).rev().map(|n| segments[..n].to_vec()).find(|p| modules.contains_key(p))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (path, (code, children)) in &code_of {
        if test_only.contains(path) {
            continue;
        }
        let entry = edges.entry(path.clone()).or_default();
        for reference in references(code, path, children) {
            if let Some(target) = resolve(&reference)
                && &target != path
                && !test_only.contains(&target)
            {
                entry.insert(target);
            }
        }
    }

    // Tarjan's strongly connected components.
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
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    let circles: Vec<Vec<&String>> =
        t.components.iter().filter(|c| c.len() > 1).map(|c| c.iter().map(|m| &modules[m]).collect()).collect();
    assert!(circles.is_empty(), "import circles in the domain crate: {circles:#?}");
    // The graph is not trivially empty: the check would notice a parser that finds nothing.
    assert!(edges.values().map(BTreeSet::len).sum::<usize>() > 40, "too few imports found: {edges:?}");
}
