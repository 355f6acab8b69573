//! The documentation stands on its own: the generated API reference equals the served
//! document, and every link of README.md and docs/ resolves to a file of the repository.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[test]
fn the_api_reference_is_generated_from_the_document() {
    let generated = stablepay_rest::openapi::api_reference::markdown(&stablepay_rest::api::document());
    let committed = std::fs::read_to_string(root().join("docs/api-reference.md")).unwrap();
    assert!(
        generated == committed,
        "docs/api-reference.md is out of date: run `cargo xtask api-reference > docs/api-reference.md`"
    );
}

/// Markdown link targets of `text`: `](target)`.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.trim().to_owned()))
        .collect()
}

#[test]
fn every_link_of_the_documentation_stays_in_the_repository() {
    let root = root();
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if text.contains("../shared") {
            broken.push(format!("{}: mentions ../shared", file.display()));
        }
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() {
                continue; // an anchor in the same file
            }
            let resolved = file.parent().unwrap().join(path);
            match resolved.canonicalize() {
                Ok(p) if p.starts_with(&root) => {}
                Ok(p) => broken.push(format!("{}: {target} leaves the repository ({})", file.display(), p.display())),
                Err(_) => broken.push(format!("{}: {target} does not exist", file.display())),
            }
        }
    }
    assert!(files.len() > 5, "{files:?}");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// docs/api.md's pagination section names every list of the document (every operation that
/// takes `startingAfter`).
#[test]
fn the_pagination_section_names_every_list() {
    let doc = stablepay_rest::api::document();
    let api = std::fs::read_to_string(root().join("docs/api.md")).unwrap();
    let section = api.split("## Pagination").nth(1).unwrap().split("\n## ").next().unwrap();
    let mut missing = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(get) = item.get("get") else { continue };
        let params = get["parameters"].as_array().cloned().unwrap_or_default();
        if params.iter().any(|p| p["name"] == "startingAfter") && !section.contains(&format!("`GET {path}`")) {
            missing.push(path.clone());
        }
    }
    assert!(missing.is_empty(), "docs/api.md's Pagination section does not name: {missing:?}");
}
