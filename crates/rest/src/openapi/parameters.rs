//! Query and header parameters as strict as the server, and the parameters many operations
//! share, described once.

use crate::openapi::patterns::POSITIVE_AMOUNT_PATTERN;

/// A list's paging (read by `QueryParams::page`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Paging {
    /// Page size 1-100, default 25
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// nextCursor of the previous page, with the list's filters unchanged
    starting_after: Option<String>,
}

/// The CSRF header of a signed-in change (checked by the dashboard session).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct Csrf {
    /// The session's csrfToken
    #[param(rename = "X-CSRF-Token")]
    csrf_token: String,
}

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> serde_json::Value {
    serde_json::Value::Array(values.into_iter().map(|v| serde_json::Value::String(v.to_owned())).collect())
}

/// The schema of a query or header parameter as strict as the server: the annotations name
/// parameters and describe them; their exact rules (enums from the domain's own lists, patterns,
/// lengths) are set here, in one place, for every operation that takes them.
fn parameter_schema(path: &str, location: &str, name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    use stablepay_domain::event::EventType;
    use stablepay_domain::export::{ExportStatus, ExportType};
    use stablepay_domain::idempotency::MAX_KEY_CHARS;
    use stablepay_domain::invoice::collection::CollectionState;
    use stablepay_domain::merchant::Token;
    use stablepay_domain::page::MAX_CURSOR_CHARS;
    use stablepay_domain::payment_link::model::{AmountType, Lifecycle, MAX_SEARCH_TEXT_BYTES, Usage};
    use stablepay_domain::reconciliation::{RunOutcome, RunStatus};
    use stablepay_domain::webhook::model::{DeliveryStatus, MIN_REPLAY_KEY_CHARS};
    let event_types = || strings(EventType::ALL.iter().map(|t| t.as_str()));
    Some(match (location, name) {
        ("header", "Idempotency-Key") => {
            // Webhook replays need a longer key.
            let min = if path.ends_with("/replay") { MIN_REPLAY_KEY_CHARS } else { 1 };
            json!({ "type": "string", "minLength": min, "maxLength": MAX_KEY_CHARS, "pattern": "^[!-~]+$" })
        }
        ("query", "startingAfter") => json!({ "type": "string", "minLength": 1, "maxLength": MAX_CURSOR_CHARS }),
        ("query", "type") if path == "/v1/exports" => {
            json!({ "type": "string", "enum": strings(ExportType::ALL.map(ExportType::as_str)) })
        }
        ("query", "status") if path == "/v1/exports" => {
            json!({ "type": "string", "enum": strings(ExportStatus::ALL.map(ExportStatus::as_str)) })
        }
        ("query", "status") if path == "/v1/reconciliation-runs" => {
            json!({ "type": "string", "enum": strings(RunStatus::ALL.map(RunStatus::as_str)) })
        }
        ("query", "outcome") => json!({ "type": "string", "enum": strings(RunOutcome::ALL.map(RunOutcome::as_str)) }),
        ("query", "from" | "to") => json!({ "type": "string", "format": "date-time" }),
        ("query", "type" | "eventType") => json!({ "type": "string", "enum": event_types() }),
        ("query", "collectionState") => {
            json!({ "type": "string", "enum": strings(CollectionState::ALL.iter().map(|s| s.as_str())) })
        }
        ("query", "status") if path.starts_with("/v1/payment-links") => {
            let mut all: Vec<&str> = Lifecycle::ALL.iter().map(|s| s.as_str()).collect();
            all.extend(["completed", "expired"]);
            json!({ "type": "string", "enum": strings(all) })
        }
        ("query", "status") => {
            json!({ "type": "string", "enum": strings(DeliveryStatus::ALL.iter().map(|s| s.as_str())) })
        }
        ("query", "amountType") => {
            json!({ "type": "string", "enum": strings(AmountType::ALL.map(AmountType::as_str)) })
        }
        ("query", "usage") => json!({ "type": "string", "enum": strings(Usage::ALL.iter().map(|u| u.as_str())) }),
        ("query", "token") => json!({ "type": "string", "enum": strings(Token::ALL.map(Token::symbol)) }),
        ("query", "amount") => json!({ "type": "string", "pattern": *POSITIVE_AMOUNT_PATTERN }),
        ("query", "text") => {
            json!({ "type": "string", "maxLength": MAX_SEARCH_TEXT_BYTES, "x-max-utf8-bytes": MAX_SEARCH_TEXT_BYTES })
        }
        ("query", "createdAfter" | "createdBefore") => json!({ "type": "string", "format": "date-time" }),
        ("query", "endpointId") => json!({ "type": "string", "pattern": "^we_[0-9A-Za-z]{1,64}$" }),
        ("query", "eventId") => json!({ "type": "string", "pattern": "^evt_[0-9A-Za-z]{1,64}$" }),
        _ => return None,
    })
}

pub fn refine_parameters(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(serde_json::Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(ops) = item.as_object_mut() else { continue };
        for op in ops.values_mut() {
            let Some(params) = op.get_mut("parameters").and_then(serde_json::Value::as_array_mut) else { continue };
            for param in params {
                let location = param.get("in").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
                let name = param.get("name").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
                if let Some(schema) = parameter_schema(path, &location, &name) {
                    param["schema"] = schema;
                }
            }
        }
    }
}
