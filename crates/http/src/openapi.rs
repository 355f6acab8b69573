//! The OpenAPI 3.1 document: generated from the handlers' annotations.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The rendered document, served by `GET /v1/openapi.json`.
pub struct OpenApiJson(pub String);

#[derive(OpenApi)]
#[openapi(
    info(
        title = "stablepay: stablecoin checkout and invoicing API",
        version = "1.0.0",
        description = "Non-custodial USDC/USDT checkout on Polygon. Every response is wrapped in {success, data|error, meta:{requestId}}; amounts are decimal strings with at most 6 fractional digits.",
    ),
    modifiers(&Security),
    components(schemas(
        crate::wire::ErrorEnvelope,
        crate::wire_webhooks::InvoiceEvent,
        crate::wire_webhooks::PaymentEvent,
        crate::wire_webhooks::UnattributedTransferEvent,
        crate::wire_webhooks::PaymentLinkEvent,
    )),
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("API key").build()),
        );
        components.add_security_scheme("apiKey", SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))));
    }
}

/// The document as JSON with its OpenAPI 3.1 `webhooks` section: one entry per event type, the
/// POST a registered endpoint receives, with the event's schema and the signature headers.
pub fn with_webhooks(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
    use serde_json::json;
    let mut value = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    let mut hooks = serde_json::Map::new();
    for t in stablepay_domain::event::EventType::ALL {
        let schema = crate::wire_webhooks::event_schema_name(t);
        hooks.insert(
            t.as_str().to_owned(),
            json!({ "post": {
                "summary": format!("The {} event, delivered to every endpoint that receives it", t.as_str()),
                "parameters": [
                    { "name": "X-Stablepay-Signature", "in": "header", "required": true, "schema": { "type": "string" },
                      "description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of t.body keyed with the signing secret>; one v1 per secret during a rotation" },
                    { "name": "X-Stablepay-Timestamp", "in": "header", "required": true, "schema": { "type": "string" } },
                    { "name": "X-Stablepay-Delivery", "in": "header", "required": true, "schema": { "type": "string" } },
                    { "name": "X-Stablepay-Event", "in": "header", "required": true, "schema": { "type": "string" } },
                    { "name": "webhook-id", "in": "header", "required": true, "schema": { "type": "string" },
                      "description": "Standard Webhooks: the event id" },
                    { "name": "webhook-timestamp", "in": "header", "required": true, "schema": { "type": "string" } },
                    { "name": "webhook-signature", "in": "header", "required": true, "schema": { "type": "string" },
                      "description": "Standard Webhooks: v1,<base64> per secret" },
                ],
                "requestBody": { "required": true, "content": { "application/json": {
                    "schema": { "$ref": format!("#/components/schemas/{schema}") } } } },
                "responses": { "2XX": { "description": "Accepted: return 2xx only after storing the event durably" } },
            }}),
        );
    }
    if let Some(map) = value.as_object_mut() {
        map.insert("webhooks".into(), serde_json::Value::Object(hooks));
    }
    refine_parameters(&mut value);
    refine_bodies(&mut value);
    add_links(&mut value);
    crate::openapi_errors::refine(&mut value);
    value
}

/// The served document, as `GET /v1/openapi.json` answers it.
pub fn document() -> serde_json::Value {
    with_webhooks(&crate::openapi_document())
}

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

fn add_links(doc: &mut serde_json::Value) {
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

/// A positive amount: some digit other than zero, at most 15 integer digits (leading zeros not
/// counted) and 6 fractional ones.
pub const POSITIVE_AMOUNT_PATTERN: &str = concat!(
    r"^(0*[1-9][0-9]{0,14}(\.[0-9]{1,6})?",
    r"|0+\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))$"
);

/// An email address as the service accepts it: one `@`, a non-empty local part, a domain with
/// a dot that neither starts nor ends it, no white space or control characters. (Deliberately
/// not `format: email`: the service takes some addresses RFC 5322 would not, such as `a+b$@x.io`.)
pub const EMAIL_PATTERN: &str = concat!(
    r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@.\s\x00-\x1f\x7f-\x9f][^@\s\x00-\x1f\x7f-\x9f]*",
    r"\.[^@\s\x00-\x1f\x7f-\x9f]*[^@.\s\x00-\x1f\x7f-\x9f]$"
);

/// An absolute http(s) URL as the service parses it: no credentials, a host of letters,
/// digits, dots and hyphens, an optional port, no spaces or control characters.
pub const URL_PATTERN: &str = concat!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]+",
    r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"([/?#][^\s\x00-\x1f\x7f-\x9f]*)?$"
);

/// Request body rules the derive cannot state: the validators' exact limits and formats, set
/// on the component schemas by name (`x-max-utf8-bytes` marks limits counted in UTF-8 bytes,
/// which `maxLength`, counted in characters, can only bound from above).
fn body_rules() -> Vec<(&'static str, &'static str, serde_json::Value)> {
    use serde_json::json;
    use stablepay_domain::event::EventType;
    let bytes = |min: u32, max: u32| json!({ "minLength": min, "maxLength": max, "x-max-utf8-bytes": max });
    let positive = || json!({ "pattern": POSITIVE_AMOUNT_PATTERN });
    let amount = || json!({ "pattern": AMOUNT_PATTERN });
    let url = || json!({ "pattern": URL_PATTERN, "maxLength": 2048 });
    let email = || json!({ "pattern": EMAIL_PATTERN, "maxLength": 320 });
    let time = || json!({ "format": "date-time" });
    let hash = || json!({ "pattern": "^0x[0-9a-fA-F]{64}$" });
    let tokens = || json!({ "enum": ["USDC", "USDT", null] });
    let event_types: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
    let days = || json!({ "items": { "type": "integer", "minimum": 1, "maximum": 30 }, "maxItems": 6 });
    // Text that must hold something other than white space (it is trimmed).
    let words = |max: u32| {
        json!({ "minLength": 1, "maxLength": max, "x-max-utf8-bytes": max,
                "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$" })
    };
    // Metadata: a JSON object with no NUL in any key or string, at any depth.
    let metadata = || {
        json!({ "propertyNames": { "pattern": "^[^\\u0000]*$" },
                "additionalProperties": { "$ref": "#/components/schemas/MetadataValue" } })
    };
    let mut rules = vec![
        ("CheckoutCreate", "amount", positive()),
        ("CheckoutCreate", "externalReference", bytes(0, 255)),
        ("CheckoutCreate", "customerEmail", email()),
        ("CheckoutCreate", "successUrl", url()),
        ("CheckoutCreate", "cancelUrl", url()),
        ("CheckoutCreate", "metadata", metadata()),
        ("AmountOnlyIn", "metadata", metadata()),
        ("PaymentLinkIn", "metadata", metadata()),
        ("LineIn", "id", bytes(0, 100)),
        ("LineIn", "sku", bytes(0, 100)),
        ("LineIn", "description", bytes(1, 500)),
        ("LineIn", "quantity", positive()),
        ("LineIn", "unitAmount", amount()),
        ("CustomerIn", "name", bytes(0, 200)),
        ("CustomerIn", "company", bytes(0, 200)),
        ("CustomerIn", "email", email()),
        ("CustomerIn", "billingAddress", bytes(0, 1000)),
        ("DiscountIn", "type", json!({ "enum": ["fixed", "percentage"] })),
        ("DiscountIn", "amount", amount()),
        ("DiscountIn", "percentage", json!({ "pattern": r"^(0*[0-9]{1,2}(\.[0-9]{1,6})?|0*100(\.0{1,6})?)$" })),
        ("TaxIn", "id", bytes(0, 120)),
        ("TaxIn", "label", bytes(1, 120)),
        ("TaxIn", "amount", amount()),
        ("TaxIn", "jurisdiction", bytes(0, 120)),
        ("TaxIn", "registrationReference", bytes(0, 120)),
        ("ReminderIn", "daysBeforeDue", days()),
        ("ReminderIn", "daysAfterDue", days()),
        ("AmountOnlyIn", "amount", positive()),
        ("AmountOnlyIn", "externalReference", bytes(0, 255)),
        ("IssueIn", "version", json!({ "minimum": 1 })),
        ("ReasonIn", "reason", words(500)),
        ("RefundIn", "paymentId", json!({ "pattern": "^pay_[0-9A-Za-z]{1,64}$" })),
        ("RefundIn", "amount", positive()),
        ("RefundIn", "reason", words(500)),
        ("RefundIn", "externalTransactionHash", hash()),
        ("RefundIn", "chainId", json!({ "enum": [137] })),
        ("RefundIn", "tokenContract", json!({ "pattern": "^0x[0-9a-fA-F]{40}$" })),
        ("TestPaymentIn", "amount", positive()),
        ("TestPaymentIn", "transactionHash", hash()),
        ("TestPaymentIn", "outcome", json!({ "enum": ["confirmed", "failed", null] })),
        ("PaymentLinkIn", "amountType", json!({ "enum": ["fixed", "customer_entered"] })),
        ("PaymentLinkIn", "amount", positive()),
        ("PaymentLinkIn", "minimumAmount", positive()),
        ("PaymentLinkIn", "maximumAmount", positive()),
        ("PaymentLinkIn", "currencyCode", tokens()),
        ("PaymentLinkIn", "mode", json!({ "enum": ["test", "live", null] })),
        ("PaymentLinkIn", "usageType", json!({ "enum": ["single_use", "reusable", null] })),
        ("PaymentLinkIn", "activeAt", time()),
        ("PaymentLinkIn", "expiresAt", time()),
        ("PaymentLinkIn", "title", words(120)),
        ("PaymentLinkIn", "description", bytes(0, 1000)),
        ("PaymentLinkIn", "successUrl", url()),
        ("PaymentLinkIn", "cancelUrl", url()),
        ("PaymentLinkIn", "successMessage", bytes(0, 500)),
        ("LinkCheckoutIn", "amount", positive()),
        ("LinkCheckoutIn", "email", email()),
        ("LinkCheckoutIn", "name", bytes(0, 200)),
        ("LinkCheckoutIn", "customerReference", bytes(0, 200)),
        ("WebhookEndpointCreate", "url", url()),
        ("WebhookEndpointCreate", "description", bytes(0, 500)),
        (
            "WebhookEndpointCreate",
            "eventTypes",
            json!({ "items": { "enum": event_types }, "minItems": 1, "uniqueItems": true }),
        ),
        ("WebhookEndpointPatch", "url", url()),
        ("WebhookEndpointPatch", "description", bytes(0, 500)),
        (
            "WebhookEndpointPatch",
            "eventTypes",
            json!({ "items": { "enum": event_types }, "minItems": 1, "uniqueItems": true }),
        ),
        ("WebhookEndpointPatch", "state", json!({ "enum": ["enabled", "disabled", null] })),
        ("WebhookTestIn", "type", json!({ "enum": event_types })),
        ("WebhookTestIn", "endpointId", json!({ "pattern": "^we_[0-9A-Za-z]{1,64}$" })),
    ];
    // The itemized forms share the invoice fields.
    for form in ["ItemizedCreateIn", "InvoicePatch"] {
        rules.extend([
            (form, "lines", json!({ "minItems": 1, "maxItems": 100 })),
            (form, "taxes", json!({ "maxItems": 100 })),
            (form, "currencyCode", tokens()),
            (form, "dueAt", time()),
            (form, "paymentTerms", bytes(0, 4000)),
            (form, "memo", bytes(0, 2000)),
            (form, "footer", bytes(0, 2000)),
            (form, "purchaseOrderNumber", bytes(0, 100)),
            (form, "externalReference", bytes(0, 255)),
            (form, "successUrl", url()),
            (form, "cancelUrl", url()),
            (form, "metadata", metadata()),
        ]);
    }
    rules.push(("InvoicePatch", "version", json!({ "minimum": 1 })));
    rules.push(("LinkCheckoutIn", "version", json!({ "minimum": 1 })));
    rules
}

fn refine_bodies(doc: &mut serde_json::Value) {
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(serde_json::Value::as_object_mut) else {
        return;
    };
    schemas.insert(
        "MetadataValue".into(),
        serde_json::json!({
            "description": "Any JSON value whose strings and keys hold no NUL (U+0000), at any depth.",
            "anyOf": [
                { "type": ["number", "boolean", "null"] },
                { "type": "string", "pattern": "^[^\\u0000]*$" },
                { "type": "array", "items": { "$ref": "#/components/schemas/MetadataValue" } },
                { "type": "object", "propertyNames": { "pattern": "^[^\\u0000]*$" },
                  "additionalProperties": { "$ref": "#/components/schemas/MetadataValue" } }
            ]
        }),
    );
    for (schema, property, rule) in body_rules() {
        let Some(target) = schemas.get_mut(schema).and_then(|s| s.pointer_mut(&format!("/properties/{property}")))
        else {
            continue;
        };
        if let (Some(target), Some(rule)) = (target.as_object_mut(), rule.as_object()) {
            for (k, v) in rule {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    split_link_bodies(doc);
    // No text of a request may hold NUL (PostgreSQL's text cannot store it): every free-text
    // string of a request body says so (patterned ones exclude it already).
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(serde_json::Value::as_object_mut) {
        for (name, schema) in schemas.iter_mut() {
            let request = name.ends_with("In") || name.ends_with("Create") || name.ends_with("Patch");
            let Some(props) = schema.get_mut("properties").and_then(serde_json::Value::as_object_mut) else { continue };
            for prop in props.values_mut().filter(|_| request) {
                let is_text = match prop.get("type") {
                    Some(serde_json::Value::String(t)) => t == "string",
                    Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                    _ => false,
                };
                if is_text && prop.get("pattern").is_none() && prop.get("enum").is_none() {
                    prop["pattern"] = serde_json::json!("^[^\\u0000]*$");
                }
            }
        }
    }
}

/// `PaymentLinkIn` is one struct for creation and replacement; the document states each: the
/// creation without `version`, the replacement with it required.
fn split_link_bodies(doc: &mut serde_json::Value) {
    use serde_json::json;
    let Some(link) = doc.pointer("/components/schemas/PaymentLinkIn").cloned() else { return };
    let mut create = link.clone();
    if let Some(props) = create.get_mut("properties").and_then(serde_json::Value::as_object_mut) {
        props.remove("version");
    }
    create["description"] = json!("`POST /v1/payment-links`: a new link's configuration.");
    let mut patch = link;
    patch["properties"]["version"] = json!({ "type": "integer", "format": "int64", "minimum": 1,
        "description": "The link's current version." });
    if let Some(required) = patch.get_mut("required").and_then(serde_json::Value::as_array_mut) {
        required.push(json!("version"));
    }
    patch["description"] =
        json!("`PATCH /v1/payment-links/{id}`: the current version and the whole new configuration.");
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(serde_json::Value::as_object_mut) {
        schemas.remove("PaymentLinkIn");
        schemas.insert("PaymentLinkCreate".into(), create);
        schemas.insert("PaymentLinkPatch".into(), patch);
    }
    for (method, name) in [("post", "PaymentLinkCreate"), ("patch", "PaymentLinkPatch")] {
        let path = if method == "post" { "/v1/payment-links" } else { "/v1/payment-links/{id}" };
        if let Some(body) = doc.pointer_mut(&format!(
            "/paths/{}/{method}/requestBody/content/application~1json/schema",
            path.replace('~', "~0").replace('/', "~1")
        )) {
            *body = json!({ "$ref": format!("#/components/schemas/{name}") });
        }
    }
}

/// A non-negative amount: at most 15 integer digits (leading zeros not counted) and 6
/// fractional ones.
pub const AMOUNT_PATTERN: &str = r"^0*[0-9]{1,15}(\.[0-9]{1,6})?$";

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> serde_json::Value {
    serde_json::Value::Array(values.into_iter().map(|v| serde_json::Value::String(v.to_owned())).collect())
}

/// The schema of a query or header parameter as strict as the server: the annotations name
/// parameters and describe them; their exact rules (enums from the domain's own lists, patterns,
/// lengths) are set here, in one place, for every operation that takes them.
fn parameter_schema(path: &str, location: &str, name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    use stablepay_domain::event::EventType;
    use stablepay_domain::invoice::collection::CollectionState;
    use stablepay_domain::payment_link::model::{Lifecycle, Usage};
    use stablepay_domain::webhook::model::DeliveryStatus;
    let event_types = || strings(EventType::ALL.iter().map(|t| t.as_str()));
    Some(match (location, name) {
        ("header", "Idempotency-Key") => {
            // Webhook replays need a longer key.
            let min = if path.ends_with("/replay") { 8 } else { 1 };
            json!({ "type": "string", "minLength": min, "maxLength": 255, "pattern": "^[!-~]+$" })
        }
        ("query", "startingAfter") => json!({ "type": "string", "minLength": 1, "maxLength": 128 }),
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
        ("query", "amountType") => json!({ "type": "string", "enum": ["fixed", "customer_entered"] }),
        ("query", "usage") => json!({ "type": "string", "enum": strings(Usage::ALL.iter().map(|u| u.as_str())) }),
        ("query", "token") => json!({ "type": "string", "enum": ["USDC", "USDT"] }),
        ("query", "amount") => json!({ "type": "string", "pattern": POSITIVE_AMOUNT_PATTERN }),
        ("query", "text") => json!({ "type": "string", "maxLength": 200, "x-max-utf8-bytes": 200 }),
        ("query", "createdAfter" | "createdBefore") => json!({ "type": "string", "format": "date-time" }),
        ("query", "endpointId") => json!({ "type": "string", "pattern": "^we_[0-9A-Za-z]{1,64}$" }),
        ("query", "eventId") => json!({ "type": "string", "pattern": "^evt_[0-9A-Za-z]{1,64}$" }),
        _ => return None,
    })
}

fn refine_parameters(doc: &mut serde_json::Value) {
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
