//! The served document against the last published one (`docs/openapi.baseline.json`): every
//! change that removes or narrows something (an operation, a response field, a request form the
//! server accepted) must be acknowledged in `docs/CHANGELOG.md` by naming it (or a prefix of it)
//! in backticks. Additions need no note: the spec's versioning rules let v1 grow compatibly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::Value;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// What clients send: the server must go on accepting it.
    Request,
    /// What clients read: it must go on being there, in the same shape.
    Response,
}

struct Walk<'a> {
    base: &'a Value,
    current: &'a Value,
    findings: Vec<String>,
    seen: BTreeSet<(String, String)>,
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> (&'a Value, Option<String>) {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => (doc.pointer(&r.replacen('#', "", 1)).unwrap_or(&Value::Null), Some(r.to_owned())),
        None => (schema, None),
    }
}

fn types(schema: &Value) -> BTreeSet<String> {
    match schema.get("type") {
        Some(Value::String(t)) => [t.clone()].into(),
        Some(Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
        _ => BTreeSet::new(),
    }
}

fn num(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

impl Walk<'_> {
    fn note(&mut self, at: &str, what: String) {
        self.findings.push(format!("{at} {what}"));
    }

    fn schema(&mut self, base: &Value, current: &Value, at: &str, side: Side) {
        let (b, b_ref) = resolve(self.base, base);
        let (c, c_ref) = resolve(self.current, current);
        if let (Some(x), Some(y)) = (&b_ref, &c_ref)
            && !self.seen.insert((format!("{x}{at}"), y.clone()))
        {
            return;
        }
        if at.matches('.').count() > 8 {
            return;
        }
        let (bt, ct) = (types(b), types(c));
        if !bt.is_empty() && !ct.is_empty() {
            match side {
                Side::Request if !bt.is_subset(&ct) => self.note(at, format!("type {bt:?} → {ct:?}")),
                Side::Response if !ct.is_subset(&bt) => self.note(at, format!("type {bt:?} → {ct:?}")),
                _ => {}
            }
        }
        if side == Side::Request {
            self.request_limits(b, c, at);
        }
        // Properties.
        let (bp, cp) = (b.get("properties").and_then(Value::as_object), c.get("properties").and_then(Value::as_object));
        if let Some(bp) = bp {
            for (name, bs) in bp {
                let path = format!("{at}.{name}");
                match cp.and_then(|cp| cp.get(name)) {
                    Some(cs) => self.schema(bs, cs, &path, side),
                    None => self.note(&path, "removed".into()),
                }
            }
        }
        let required = |s: &Value| -> BTreeSet<String> {
            s.get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let (br, cr) = (required(b), required(c));
        match side {
            Side::Request => {
                for name in cr.difference(&br) {
                    self.note(&format!("{at}.{name}"), "newly required".into());
                }
                if b.get("additionalProperties") != Some(&Value::Bool(false))
                    && c.get("additionalProperties") == Some(&Value::Bool(false))
                    && bp.is_some()
                {
                    self.note(at, "additionalProperties now false".into());
                }
            }
            Side::Response => {
                for name in br.difference(&cr) {
                    self.note(&format!("{at}.{name}"), "no longer always present".into());
                }
            }
        }
        if let (Some(bi), Some(ci)) = (b.get("items"), c.get("items")) {
            self.schema(bi, ci, &format!("{at}[]"), side);
        }
        for key in ["oneOf", "anyOf"] {
            if let (Some(bs), Some(cs)) = (b.get(key).and_then(Value::as_array), c.get(key).and_then(Value::as_array)) {
                for (i, (x, y)) in bs.iter().zip(cs).enumerate() {
                    self.schema(x, y, &format!("{at}<{key} {i}>"), side);
                }
                if cs.len() < bs.len() {
                    self.note(at, format!("{key} has fewer forms"));
                }
            }
        }
    }

    /// A request rule that accepts less than before.
    fn request_limits(&mut self, b: &Value, c: &Value, at: &str) {
        for key in ["maxLength", "maxItems", "maximum"] {
            match (num(b, key), num(c, key)) {
                (None, Some(v)) => self.note(at, format!("{key} {v} added")),
                (Some(x), Some(y)) if y < x => self.note(at, format!("{key} {x} → {y}")),
                _ => {}
            }
        }
        for key in ["minLength", "minItems", "minimum"] {
            match (num(b, key), num(c, key)) {
                (None, Some(v)) if v > 0.0 => self.note(at, format!("{key} {v} added")),
                (Some(x), Some(y)) if y > x => self.note(at, format!("{key} {x} → {y}")),
                _ => {}
            }
        }
        if b.get("pattern") != c.get("pattern") && c.get("pattern").is_some() {
            self.note(at, "pattern changed".into());
        }
        if b.get("uniqueItems") != c.get("uniqueItems") && c.get("uniqueItems") == Some(&Value::Bool(true)) {
            self.note(at, "uniqueItems added".into());
        }
        if let Some(ce) = c.get("enum").and_then(Value::as_array) {
            match b.get("enum").and_then(Value::as_array) {
                None => self.note(at, "enum added".into()),
                Some(be) => {
                    for v in be.iter().filter(|v| !ce.contains(v)) {
                        self.note(at, format!("enum value {v} removed"));
                    }
                }
            }
        }
    }
}

/// The acknowledged prefixes: backticked texts of the changelog.
fn acknowledged(changelog: &str) -> Vec<String> {
    changelog.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn findings(base: &Value, current: &Value) -> Vec<String> {
    let mut walk = Walk { base, current, findings: Vec::new(), seen: BTreeSet::new() };
    let empty = serde_json::Map::new();
    for (path, ops) in base["paths"].as_object().unwrap_or(&empty) {
        for (method, op) in ops.as_object().unwrap_or(&empty) {
            let name = format!("{} {path}", method.to_uppercase());
            let Some(now) = current["paths"].get(path).and_then(|p| p.get(method)) else {
                walk.note(&name, "removed".into());
                continue;
            };
            // Parameters: none newly required, and each one's schema accepts what it accepted.
            let params = |o: &Value| -> Vec<Value> {
                o.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default()
            };
            let (bp, cp) = (params(op), params(now));
            for p in &cp {
                let known = bp.iter().any(|q| q["name"] == p["name"] && q["in"] == p["in"]);
                if !known && p["required"] == Value::Bool(true) {
                    walk.note(
                        &format!("{name} parameter {}", p["name"].as_str().unwrap_or("")),
                        "newly required".into(),
                    );
                }
            }
            for q in &bp {
                let at = format!("{name} parameter {}", q["name"].as_str().unwrap_or(""));
                match cp.iter().find(|p| p["name"] == q["name"] && p["in"] == q["in"]) {
                    Some(p) => walk.schema(&q["schema"], &p["schema"], &at, Side::Request),
                    None => walk.note(&at, "removed".into()),
                }
            }
            let body = |o: &Value| o.pointer("/requestBody/content/application~1json/schema").cloned();
            if let (Some(b), Some(c)) = (body(op), body(now)) {
                walk.schema(&b, &c, &format!("{name} request"), Side::Request);
            }
            for (status, response) in op["responses"].as_object().unwrap_or(&empty) {
                if !status.starts_with('2') {
                    continue;
                }
                let at = format!("{name} response {status}");
                match now["responses"].get(status) {
                    None => walk.note(&at, "removed".into()),
                    Some(r) => {
                        let schema = |r: &Value| r.pointer("/content/application~1json/schema").cloned();
                        if let (Some(b), Some(c)) = (schema(response), schema(r)) {
                            walk.schema(&b, &c, &at, Side::Response);
                        }
                    }
                }
            }
        }
    }
    walk.findings
}

#[test]
fn no_narrowing_without_a_changelog_note() {
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/openapi.baseline.json")).unwrap()).unwrap();
    let current = stablepay_rest::api::document();
    let changelog = std::fs::read_to_string(root().join("docs/CHANGELOG.md")).unwrap();
    let notes = acknowledged(&changelog);
    let open: Vec<String> = findings(&base, &current)
        .into_iter()
        .filter(|f| !notes.iter().any(|n| !n.is_empty() && f.starts_with(n.as_str())))
        .collect();
    assert!(
        open.is_empty(),
        "{} change(s) remove or narrow the published contract; name each (or a prefix) in backticks \
         in docs/CHANGELOG.md with its compatibility:\n{}",
        open.len(),
        open.join("\n")
    );
}

#[test]
fn the_checker_sees_removals_and_narrowings() {
    let base = serde_json::json!({ "paths": {
        "/v1/x": { "post": {
            "requestBody": { "content": { "application/json": { "schema": { "type": "object",
                "properties": { "a": { "type": "string", "maxLength": 10 }, "e": { "enum": ["p", "q"] } } } } } },
            "responses": { "200": { "content": { "application/json": { "schema": { "type": "object",
                "required": ["id"], "properties": { "id": { "type": "string" }, "gone": { "type": "string" } } } } } } } } },
        "/v1/y": { "get": { "responses": {} } } } });
    let current = serde_json::json!({ "paths": {
        "/v1/x": { "post": {
            "requestBody": { "content": { "application/json": { "schema": { "type": "object", "required": ["b"],
                "properties": { "a": { "type": "string", "maxLength": 5 }, "b": { "type": "string" }, "e": { "enum": ["p"] } } } } } },
            "responses": { "200": { "content": { "application/json": { "schema": { "type": "object",
                "properties": { "id": { "type": ["string", "null"] }, "new": { "type": "string" } } } } } } } } } } });
    let found = findings(&base, &current);
    for want in [
        "POST /v1/x request.a maxLength 10 → 5",
        "POST /v1/x request.b newly required",
        "POST /v1/x request.e enum value \"q\" removed",
        "POST /v1/x response 200.gone removed",
        "POST /v1/x response 200.id no longer always present",
        "GET /v1/y removed",
    ] {
        assert!(found.iter().any(|f| f == want), "missing {want:?} in {found:#?}");
    }
    assert!(found.iter().any(|f| f.starts_with("POST /v1/x response 200.id type")), "{found:#?}");
    assert_eq!(found.len(), 7, "{found:#?}");
    // A backticked prefix acknowledges.
    let notes = acknowledged("- `POST /v1/x request` narrowed on purpose\n- `GET /v1/y` removed");
    assert_eq!(notes, ["POST /v1/x request", "GET /v1/y"]);
}
