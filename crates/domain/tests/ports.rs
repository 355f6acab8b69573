//! The list of ports is true: every trait an adapter implements is defined in a feature's
//! `ports.rs` (or is one of the two capabilities of the values, `clock` and `crypto`), and each
//! is re-exported with its mock by `src/ports.rs`, named in that file's table, and named in
//! docs/ARCHITECTURE.md. A port added, moved or removed without its list fails here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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

/// `pub trait Name` items of a file's production code.
fn traits(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    code.lines()
        .filter_map(|l| l.strip_prefix("pub trait "))
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect()
}

#[test]
fn every_port_is_listed_once_in_ports_rs_and_in_the_architecture() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut ports = BTreeSet::new();
    let mut misplaced = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let found = traits(&std::fs::read_to_string(file).unwrap());
        let is_port_file = rel.ends_with("/ports.rs") || rel == "clock.rs" || rel == "crypto.rs";
        for name in found {
            if is_port_file {
                assert!(ports.insert(name.clone()), "{name} is defined twice");
            } else {
                misplaced.push(format!("{name} in {rel}"));
            }
        }
    }
    assert!(misplaced.is_empty(), "traits outside a feature's ports.rs: {misplaced:?}");
    assert!(ports.len() >= 18, "too few ports found: {ports:?}");

    let list = std::fs::read_to_string(src.join("ports.rs")).unwrap();
    let (exports, mocks) = list.split_once("#[cfg(any(test, feature = \"mocks\"))]").unwrap();
    let architecture =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md")).unwrap();
    let word = |text: &str, name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric()) && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    let mut missing = Vec::new();
    for port in &ports {
        let code: String = exports.lines().filter(|l| !l.starts_with("//")).collect::<Vec<_>>().join("\n");
        if !word(&code, port) {
            missing.push(format!("{port}: not re-exported by src/ports.rs"));
        }
        if !exports.contains(&format!("//! | [`{port}`] |")) {
            missing.push(format!("{port}: not in the table of src/ports.rs"));
        }
        if !word(mocks, &format!("Mock{port}")) {
            missing.push(format!("{port}: its mock is not re-exported by src/ports.rs"));
        }
        if !word(&architecture, port) {
            missing.push(format!("{port}: not named in docs/ARCHITECTURE.md"));
        }
    }
    assert!(missing.is_empty(), "the list of ports is not true:\n{}", missing.join("\n"));

    // And nothing is listed that is not a port.
    let listed: BTreeSet<String> = exports
        .lines()
        .filter(|l| l.starts_with("//! | [`"))
        .map(|l| l["//! | [`".len()..].split('`').next().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ports, "the table of src/ports.rs lists exactly the ports");
}
