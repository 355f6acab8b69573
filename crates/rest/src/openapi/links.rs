//! OpenAPI `links`: where a response's ids lead.

/// OpenAPI `links`: where a response's ids lead (a created checkout to its reads, its test
/// payment and its invoice; a created invoice to every action on it; and so on), so stateful
/// generators and readers follow real ids instead of guessing them.
/// (source operation, status, runtime expression, [(target operation, its parameter)]).
type LinkRow = (&'static str, &'static str, &'static str, Vec<(&'static str, &'static str)>);

fn links_table() -> Vec<LinkRow> {
    const INVOICE_ACTIONS: [&str; 12] = [
        "get_invoice",
        "update_invoice",
        "issue_invoice",
        "void_invoice",
        "void_remaining",
        "mark_uncollectible",
        "send_invoice",
        "remind_invoice",
        "duplicate_invoice",
        "open_checkout",
        "invoice_pdf",
        "refund_reference",
    ];
    let mut table = Vec::new();
    let by_id = |source: &'static str, status: &'static str, expr: &'static str, targets: &[&'static str]| {
        (source, status, expr, targets.iter().map(|t| (*t, "id")).collect::<Vec<_>>())
    };
    table.push(by_id(
        "create_checkout_session",
        "201",
        "$response.body#/data/id",
        &["get_checkout_session", "simulate_payment", "get_public_checkout", "submit_payment", "checkout_diagnostics"],
    ));
    table.push(by_id("create_checkout_session", "201", "$response.body#/data/invoiceId", &INVOICE_ACTIONS));
    table.push(by_id("create_invoice", "201", "$response.body#/data/id", &INVOICE_ACTIONS));
    table.push(by_id("duplicate_invoice", "201", "$response.body#/data/id", &INVOICE_ACTIONS));
    table.push(by_id(
        "open_checkout",
        "201",
        "$response.body#/data/checkoutSessionId",
        &["get_checkout_session", "simulate_payment", "get_public_checkout", "submit_payment", "checkout_diagnostics"],
    ));
    table.push(by_id("simulate_payment", "201", "$response.body#/data/id", &["get_payment", "payment_diagnostics"]));
    table.push(by_id(
        "create_link",
        "201",
        "$response.body#/data/id",
        &["get_link", "update_link", "pause_link", "resume_link", "archive_link", "duplicate_link", "link_payments"],
    ));
    table.push((
        "create_link",
        "201",
        "$response.body#/data/publicId",
        vec![("get_public_link", "publicId"), ("public_link_checkout", "publicId")],
    ));
    table.push(by_id(
        "create_export",
        "202",
        "$response.body#/data/id",
        &["get_export", "cancel_export", "export_file"],
    ));
    table.push(by_id("create_run", "202", "$response.body#/data/id", &["get_run", "run_items"]));
    table.push(by_id(
        "create_endpoint",
        "201",
        "$response.body#/data/id",
        &[
            "get_endpoint",
            "update_endpoint",
            "delete_endpoint",
            "rotate_secret",
            "end_secret_overlap",
            "list_incidents",
        ],
    ));
    table.push(by_id("send_test", "202", "$response.body#/data/deliveries/0/id", &["get_delivery", "replay_delivery"]));
    table.push(by_id("list_events", "200", "$response.body#/data/items/0/id", &["get_event"]));
    let unattributed = ["get_unattributed", "attribute_transfer"];
    table.push(by_id("list_unattributed", "200", "$response.body#/data/items/0/id", &unattributed));
    table.push(by_id(
        "list_deliveries",
        "200",
        "$response.body#/data/items/0/id",
        &["get_delivery", "replay_delivery"],
    ));
    table.push(by_id("list_incidents", "200", "$response.body#/data/items/0/id", &["get_incident"]));
    table
}

pub fn add_links(doc: &mut serde_json::Value) {
    use serde_json::json;
    // Where each operation id lives.
    let mut where_is = std::collections::HashMap::new();
    if let Some(paths) = doc.get("paths").and_then(serde_json::Value::as_object) {
        for (path, ops) in paths {
            for (method, op) in ops.as_object().into_iter().flatten() {
                if let Some(id) = op.get("operationId").and_then(serde_json::Value::as_str) {
                    where_is.insert(id.to_owned(), (path.clone(), method.clone()));
                }
            }
        }
    }
    for (source, status, expr, targets) in links_table() {
        let Some((path, method)) = where_is.get(source).cloned() else { continue };
        let pointer = format!("/paths/{}/{method}/responses/{status}", path.replace('~', "~0").replace('/', "~1"));
        let Some(response) = doc.pointer_mut(&pointer) else { continue };
        for (target, parameter) in targets {
            if !where_is.contains_key(target) {
                continue;
            }
            let field = expr.rsplit('/').next().unwrap_or("id");
            let name = format!("{target}_by_{field}");
            response["links"][name] = json!({
                "operationId": target,
                "parameters": { parameter: expr },
                "description": format!("{target} for the {field} of this response"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Resolves `$ref`s of the document.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => doc.pointer(r.trim_start_matches('#')).map_or(schema, |s| resolve(doc, s)),
            None => schema,
        }
    }

    /// The schema at `pointer` (`/data/items/0/id`) inside `schema`, through objects and arrays.
    fn at<'a>(doc: &'a Value, schema: &'a Value, pointer: &str) -> Option<&'a Value> {
        let Some((part, rest)) = pointer.trim_start_matches('/').split_once('/').or_else(|| {
            let p = pointer.trim_start_matches('/');
            (!p.is_empty()).then_some((p, ""))
        }) else {
            return Some(schema);
        };
        let schema = resolve(doc, schema);
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            return parts.iter().find_map(|s| at(doc, s, pointer));
        }
        let next = if part.parse::<usize>().is_ok() {
            schema.get("items")?
        } else {
            schema.pointer(&format!("/properties/{part}"))?
        };
        at(doc, next, rest)
    }

    /// Every link's runtime expression names a property the source response has: a link to a
    /// field the answer lacks leaves the generator that follows it with nothing.
    #[test]
    fn every_link_names_a_field_of_its_response() {
        let doc = crate::api::document();
        let mut broken = Vec::new();
        let mut count = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (status, response) in op["responses"].as_object().into_iter().flatten() {
                    let Some(links) = response.get("links").and_then(Value::as_object) else { continue };
                    let schema = &response["content"]["application/json"]["schema"];
                    for (name, link) in links {
                        for expr in link["parameters"].as_object().unwrap().values() {
                            count += 1;
                            let pointer = expr.as_str().unwrap().trim_start_matches("$response.body#");
                            if at(&doc, schema, pointer).is_none() {
                                broken.push(format!("{method} {path} {status} {name}: {pointer}"));
                            }
                        }
                    }
                }
            }
        }
        assert!(count > 30, "{count} link parameters");
        assert!(broken.is_empty(), "links to fields the answer does not have:\n{}", broken.join("\n"));
    }
}
