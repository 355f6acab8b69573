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
        &["get_checkout_session", "simulate_payment", "get_public_checkout", "submit_payment"],
    ));
    table.push(by_id("create_checkout_session", "201", "$response.body#/data/invoiceId", &INVOICE_ACTIONS));
    table.push(by_id("create_invoice", "201", "$response.body#/data/id", &INVOICE_ACTIONS));
    table.push(by_id("duplicate_invoice", "201", "$response.body#/data/id", &INVOICE_ACTIONS));
    table.push(by_id("open_checkout", "201", "$response.body#/data/id", &["get_checkout_session", "simulate_payment"]));
    table.push(by_id("simulate_payment", "201", "$response.body#/data/id", &["get_payment"]));
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
