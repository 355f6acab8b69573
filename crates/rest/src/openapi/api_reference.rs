//! The API reference in Markdown (`docs/api-reference.md`), generated from the served OpenAPI
//! document so that it cannot drift from it: every route with its authentication, parameters,
//! request fields and their rules, response fields, error codes and a curl example.

use std::fmt::Write;

use serde_json::{Map, Value};

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(&r.replacen('#', "", 1)).unwrap_or(&Value::Null),
        None => schema,
    }
}

/// A schema's non-null alternative (`T | null` is written `oneOf [T, null]`).
fn unwrap_nullable<'a>(doc: &'a Value, schema: &'a Value) -> (&'a Value, bool) {
    let schema = resolve(doc, schema);
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array)
        && options.len() == 2
        && let Some(other) = options.iter().find(|o| o.get("type") != Some(&Value::String("null".into())))
        && options.iter().any(|o| o.get("type") == Some(&Value::String("null".into())))
    {
        return (resolve(doc, other), true);
    }
    let nullable = matches!(schema.get("type"), Some(Value::Array(ts)) if ts.iter().any(|t| t == "null"));
    (schema, nullable)
}

fn type_name(doc: &Value, schema: &Value) -> String {
    let (s, nullable) = unwrap_nullable(doc, schema);
    let base = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" or ")
        }
        _ if s.get("anyOf").is_some() || s.get("oneOf").is_some() => "one of several forms".into(),
        _ => "any".into(),
    };
    let base = if base == "array" {
        let item = s.get("items").map(|i| type_name(doc, i)).unwrap_or_else(|| "any".into());
        format!("array of {item}")
    } else {
        base
    };
    if nullable { format!("{base} or null") } else { base }
}

fn rules(doc: &Value, schema: &Value) -> String {
    let (s, _) = unwrap_nullable(doc, schema);
    let mut out = Vec::new();
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        let listed: Vec<String> = values.iter().filter(|v| !v.is_null()).map(|v| format!("`{}`", plain(v))).collect();
        out.push(format!("one of {}", listed.join(", ")));
    }
    match (s.get("minLength").and_then(Value::as_u64), s.get("maxLength").and_then(Value::as_u64)) {
        (Some(min), Some(max)) if min > 0 => out.push(format!("{min}-{max} characters")),
        (_, Some(max)) => out.push(format!("at most {max} characters")),
        (Some(min), None) if min > 0 => out.push(format!("at least {min} characters")),
        _ => {}
    }
    if let Some(bytes) = s.get("x-max-utf8-bytes").and_then(Value::as_u64) {
        out.push(format!("at most {bytes} UTF-8 bytes"));
    }
    match (s.get("minimum").and_then(Value::as_i64), s.get("maximum").and_then(Value::as_i64)) {
        (Some(min), Some(max)) => out.push(format!("{min} to {max}")),
        (Some(min), None) => out.push(format!("at least {min}")),
        (None, Some(max)) => out.push(format!("at most {max}")),
        _ => {}
    }
    match (s.get("minItems").and_then(Value::as_u64), s.get("maxItems").and_then(Value::as_u64)) {
        (Some(min), Some(max)) => out.push(format!("{min}-{max} items")),
        (None, Some(max)) => out.push(format!("at most {max} items")),
        (Some(min), None) => out.push(format!("at least {min} item(s)")),
        _ => {}
    }
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        out.push("no duplicates".into());
    }
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !format.starts_with("int")
    {
        out.push(format!("format `{format}`"));
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        out.push(match pattern {
            p if p == *crate::openapi::patterns::POSITIVE_AMOUNT_PATTERN => {
                "positive decimal string, at most 6 decimals".into()
            }
            p if p == *crate::openapi::patterns::AMOUNT_PATTERN => {
                "decimal string (0 or more), at most 6 decimals".into()
            }
            p if p == crate::openapi::patterns::URL_PATTERN => "absolute http(s) URL without credentials".into(),
            p if p == crate::openapi::patterns::EMAIL_PATTERN => "email address".into(),
            p if p.starts_with("^[^\\u0000]*$") => "no NUL character".into(),
            p if p.starts_with("^[^\\u0000]*[^\\s") => "not blank, no NUL character".into(),
            p => format!("pattern `{}`", p.replace('|', "\\|")),
        });
    }
    out.join("; ")
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// Rows of `| field | type | required | rules | description |` for an object's properties, one
/// level into nested objects and arrays of objects.
fn field_rows(doc: &Value, schema: &Value, prefix: &str, depth: usize, out: &mut String) {
    let (s, _) = unwrap_nullable(doc, schema);
    let Some(props) = s.get("properties").and_then(Value::as_object) else { return };
    let required: Vec<&str> =
        s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    for (name, prop) in props {
        let path = format!("{prefix}{name}");
        let description = prop
            .get("description")
            .or_else(|| unwrap_nullable(doc, prop).0.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let _ = writeln!(
            out,
            "| `{path}` | {} | {} | {} | {} |",
            cell(&type_name(doc, prop)),
            if required.contains(&name.as_str()) { "yes" } else { "no" },
            cell(&rules(doc, prop)),
            cell(description)
        );
        if depth >= 1 {
            continue;
        }
        let (inner, _) = unwrap_nullable(doc, prop);
        if inner.get("properties").is_some() && inner.get("additionalProperties").is_some() {
            field_rows(doc, inner, &format!("{path}."), depth + 1, out);
        } else if let Some(items) = inner.get("items") {
            let (item, _) = unwrap_nullable(doc, items);
            if item.get("properties").is_some() {
                field_rows(doc, item, &format!("{path}[]."), depth + 1, out);
            }
        }
    }
}

/// A value for a curl example: the schema's example, or one that satisfies its rules.
fn example(doc: &Value, schema: &Value, name: &str, depth: usize) -> Value {
    let (s, _) = unwrap_nullable(doc, schema);
    if let Some(e) = s.get("example") {
        return e.clone();
    }
    if let Some(first) = s.get("enum").and_then(Value::as_array).and_then(|v| v.iter().find(|x| !x.is_null())) {
        return first.clone();
    }
    let pattern = s.get("pattern").and_then(Value::as_str).unwrap_or("");
    match s.get("type").map(plain).unwrap_or_default().as_str() {
        t if t.contains("integer") => Value::from(s.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        t if t.contains("boolean") => Value::Bool(false),
        t if t.contains("array") => {
            let item = s.get("items").map(|i| example(doc, i, name, depth + 1)).unwrap_or(Value::Null);
            Value::Array(vec![item])
        }
        t if t.contains("object") && depth < 3 => {
            let mut map = Map::new();
            let required = s.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            for key in required.iter().filter_map(Value::as_str) {
                if let Some(p) = s.pointer(&format!("/properties/{key}")) {
                    map.insert(key.to_owned(), example(doc, p, key, depth + 1));
                }
            }
            Value::Object(map)
        }
        _ if pattern == *crate::openapi::patterns::POSITIVE_AMOUNT_PATTERN
            || pattern == *crate::openapi::patterns::AMOUNT_PATTERN =>
        {
            Value::String("10.00".into())
        }
        _ if pattern == crate::openapi::patterns::URL_PATTERN => Value::String("https://shop.example/return".into()),
        _ if pattern == crate::openapi::patterns::EMAIL_PATTERN => Value::String("buyer@example.com".into()),
        _ if pattern.starts_with("^0x[0-9a-fA-F]{64}") => Value::String(format!("0x{}", "ab".repeat(32))),
        _ => Value::String(match name {
            "reason" => "Ordered by mistake".into(),
            "title" => "Workshop ticket".into(),
            "description" => "Consulting, 2 hours".into(),
            _ => "text".into(),
        }),
    }
}

/// What authenticates `op`: `None` for nothing (no `security`, or only empty requirements),
/// else the names of its schemes.
fn schemes(op: &Value) -> Option<Vec<String>> {
    let names: Vec<String> =
        op.get("security")?.as_array()?.iter().filter_map(Value::as_object).flat_map(|r| r.keys().cloned()).collect();
    (!names.is_empty()).then_some(names)
}

fn auth_of(op: &Value, path: &str) -> &'static str {
    let Some(schemes) = schemes(op) else {
        return "none (public)";
    };
    if schemes.iter().any(|s| s == "session") {
        return "a dashboard session (the `stablepay_session` cookie; a change also sends `X-CSRF-Token`)";
    }
    if path.starts_with("/v1/test-helpers") {
        return "a secret test key (`sk_test_...`)";
    }
    if path == "/v1/checkout-sessions" || path == "/v1/checkout-sessions/{id}" {
        return "a secret or publishable key (`Authorization: Bearer` or `X-API-Key`)";
    }
    "a secret key (`Authorization: Bearer sk_...` or `X-API-Key`)"
}

/// The reference of every operation of `doc`.
pub fn markdown(doc: &Value) -> String {
    let mut out = String::new();
    out.push_str(
        "# API reference\n\n\
         Generated from the OpenAPI document (`docs/openapi.json`, served at `GET /v1/openapi.json`)\n\
         by `cargo xtask api-reference`; a test keeps this file equal to the document. The choices\n\
         behind the routes (envelopes, pagination, idempotency, states, events, limits) are explained\n\
         in `docs/api.md`.\n\n\
         Every JSON answer is an envelope: `{\"success\": true, \"data\": ..., \"meta\": {\"requestId\"}}`,\n\
         or `{\"success\": false, \"error\": {\"code\", \"message\", \"details\"}, \"meta\": {\"requestId\"}}`.\n\
         Amounts are decimal strings with at most 6 decimals, never JSON numbers. Times are RFC 3339\n\
         in UTC with milliseconds. The tables list each operation's own fields; `data` fields of\n\
         answers are those of the named schema in the document.\n\n",
    );
    let empty = Map::new();
    let paths = doc.get("paths").and_then(Value::as_object).unwrap_or(&empty);
    // Contents.
    out.push_str("## Routes\n\n");
    for (path, ops) in paths {
        for method in ops.as_object().unwrap_or(&empty).keys() {
            let _ = writeln!(out, "- [`{} {path}`](#{})", method.to_uppercase(), anchor(method, path));
        }
    }
    out.push('\n');
    for (path, ops) in paths {
        for (method, op) in ops.as_object().unwrap_or(&empty) {
            operation(doc, path, method, op, &mut out);
        }
    }
    out
}

fn anchor(method: &str, path: &str) -> String {
    format!("{method}-{path}")
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

fn operation(doc: &Value, path: &str, method: &str, op: &Value, out: &mut String) {
    let _ = writeln!(out, "## {} {path}\n", method.to_uppercase());
    let _ = writeln!(out, "<a id=\"{}\"></a>\n", anchor(method, path));
    for key in ["summary", "description"] {
        if let Some(text) = op.get(key).and_then(Value::as_str) {
            let _ = writeln!(out, "{}\n", text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        out.push_str("**Deprecated**: answers carry `Deprecation` and `Sunset` headers.\n\n");
    }
    let _ = writeln!(out, "Authentication: {}.\n", auth_of(op, path));
    parameters(doc, op, out);
    let body = op.pointer("/requestBody/content/application~1json/schema");
    if let Some(body) = body {
        request_body(doc, body, out);
    }
    answers(doc, op, out);
    curl(doc, path, method, op, body, out);
}

/// The operation's parameters as a table.
fn parameters(doc: &Value, op: &Value, out: &mut String) {
    let Some(params) = op.get("parameters").and_then(Value::as_array).filter(|p| !p.is_empty()) else { return };
    out.push_str("| parameter | in | required | rules | description |\n|---|---|---|---|---|\n");
    for p in params {
        let schema = p.get("schema").cloned().unwrap_or(Value::Null);
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            plain(&p["name"]),
            plain(&p["in"]),
            if p["required"] == Value::Bool(true) { "yes" } else { "no" },
            cell(&rules(doc, &schema)),
            cell(p.get("description").and_then(Value::as_str).unwrap_or(""))
        );
    }
    out.push('\n');
}

/// The request body's fields, a table per form.
fn request_body(doc: &Value, body: &Value, out: &mut String) {
    let schema = resolve(doc, body);
    let forms: Vec<&Value> = match schema.get("oneOf").and_then(Value::as_array) {
        Some(forms) => forms.iter().map(|f| resolve(doc, f)).collect(),
        None => vec![schema],
    };
    for (i, form) in forms.iter().enumerate() {
        if forms.len() > 1 {
            let _ = writeln!(
                out,
                "Request body, form {} of {}: {}\n",
                i + 1,
                forms.len(),
                cell(form.get("description").and_then(Value::as_str).unwrap_or(""))
            );
        } else {
            out.push_str("Request body (JSON; unknown fields are refused):\n\n");
        }
        out.push_str("| field | type | required | rules | description |\n|---|---|---|---|---|\n");
        field_rows(doc, form, "", 0, out);
        out.push('\n');
    }
}

/// The successful answers with their `data` fields, then the error statuses with their codes.
fn answers(doc: &Value, op: &Value, out: &mut String) {
    let responses = op.get("responses").and_then(Value::as_object).cloned().unwrap_or_default();
    for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
        let schema = response.pointer("/content/application~1json/schema");
        let name = schema
            .and_then(|s| s.get("$ref"))
            .and_then(Value::as_str)
            .map(|r| r.rsplit('/').next().unwrap_or(r).to_owned());
        let described = cell(response.get("description").and_then(Value::as_str).unwrap_or(""));
        let Some(name) = name else {
            let _ = writeln!(out, "Answer: **{status}** {described}.\n");
            continue;
        };
        let _ = writeln!(out, "Answer: **{status}** {described} (schema `{name}`).\n");
        if let Some(data) = schema.map(|s| resolve(doc, s)).and_then(|s| s.pointer("/properties/data")) {
            let mut rows = String::new();
            field_rows(doc, data, "", 1, &mut rows);
            if !rows.is_empty() {
                out.push_str("| `data` field | type | always | rules | description |\n|---|---|---|---|---|\n");
                out.push_str(&rows);
                out.push('\n');
            }
        }
    }
    let errors: Vec<(&String, &Value)> = responses.iter().filter(|(s, _)| !s.starts_with('2')).collect();
    if !errors.is_empty() {
        out.push_str("| error status | codes |\n|---|---|\n");
        for (status, response) in errors {
            let _ = writeln!(
                out,
                "| {status} | {} |",
                cell(response.get("description").and_then(Value::as_str).unwrap_or(""))
            );
        }
        out.push('\n');
    }
}

/// A curl example with the required fields.
fn curl(doc: &Value, path: &str, method: &str, op: &Value, body: Option<&Value>, out: &mut String) {
    let params = op.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
    // Required query parameters, with their examples.
    let query: Vec<String> = params
        .iter()
        .filter(|p| p["in"] == "query" && p["required"] == true)
        .filter_map(|p| {
            let value = p.get("example").or_else(|| p["schema"].get("example"))?.as_str()?;
            Some(format!("{}={}", p["name"].as_str()?, value.replace(':', "%3A").replace('+', "%2B")))
        })
        .collect();
    let path = if query.is_empty() { path.to_owned() } else { format!("{path}?{}", query.join("&")) };
    let mut curl = format!("curl -X {} \"$STABLEPAY_URL{path}\"", method.to_uppercase());
    match schemes(op) {
        Some(s) if s.iter().any(|s| s == "session") => {
            curl.push_str(" \\\n  -H \"Cookie: stablepay_session=$STABLEPAY_SESSION\"");
        }
        Some(_) => curl.push_str(" \\\n  -H \"Authorization: Bearer $STABLEPAY_KEY\""),
        None => {}
    }
    if params.iter().any(|p| p["name"] == "X-CSRF-Token") {
        curl.push_str(" \\\n  -H \"X-CSRF-Token: $STABLEPAY_CSRF\"");
    }
    if params.iter().any(|p| p["name"] == "Idempotency-Key") {
        curl.push_str(" \\\n  -H \"Idempotency-Key: order-1042-attempt-1\"");
    }
    if let Some(body) = body {
        let schema = resolve(doc, body);
        let first =
            schema.get("oneOf").and_then(Value::as_array).and_then(|f| f.first()).map_or(schema, |f| resolve(doc, f));
        let value = example(doc, first, "", 0);
        curl.push_str(&format!(" \\\n  -H \"Content-Type: application/json\" \\\n  -d '{value}'"));
    }
    let _ = writeln!(out, "```sh\n{curl}\n```\n");
}
