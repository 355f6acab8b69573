//! Request body rules the derive cannot state: the validators' limits (the domain's constants)
//! and formats, set on the component schemas by name.

use serde_json::{Value, json};
use stablepay_domain::Mode;
use stablepay_domain::event::EventType;
use stablepay_domain::invoice::input::MAX_REASON_BYTES;
use stablepay_domain::invoice::validate::{
    MAX_BILLING_ADDRESS_BYTES, MAX_CUSTOMER_NAME_BYTES, MAX_EMAIL_BYTES, MAX_EXTERNAL_REFERENCE_BYTES,
    MAX_LINE_DESCRIPTION_BYTES, MAX_LINE_ID_BYTES, MAX_LINES, MAX_MEMO_BYTES, MAX_PAYMENT_TERMS_BYTES,
    MAX_PURCHASE_ORDER_BYTES, MAX_REMINDER_DAYS, MAX_REMINDER_OFFSETS, MAX_SKU_BYTES, MAX_TAX_FIELD_BYTES,
    MAX_TAX_LINES,
};
use stablepay_domain::merchant::{POLYGON_CHAIN_ID, Token};
use stablepay_domain::payment_link::model::{
    AmountType, MAX_DESCRIPTION_BYTES as MAX_LINK_DESCRIPTION_BYTES, MAX_SUCCESS_MESSAGE_BYTES, MAX_TITLE_BYTES, Usage,
};
use stablepay_domain::payment_link::service::MAX_CUSTOMER_FIELD_BYTES;
use stablepay_domain::telemetry::model::Step;
use stablepay_domain::url::MAX_URL_BYTES;
use stablepay_domain::webhook::model::EndpointState;
use stablepay_domain::webhook::service::MAX_DESCRIPTION_BYTES as MAX_ENDPOINT_DESCRIPTION_BYTES;

use crate::openapi::patterns::{AMOUNT_PATTERN, EMAIL_PATTERN, POSITIVE_AMOUNT_PATTERN, URL_PATTERN};

/// One rule: a property of a component schema and the keywords set on it.
type Rule = (&'static str, &'static str, Value);

/// Text of `min` to `max` UTF-8 bytes (`x-max-utf8-bytes` marks limits counted in UTF-8 bytes,
/// which `maxLength`, counted in characters, can only bound from above).
fn bytes(min: usize, max: usize) -> Value {
    json!({ "minLength": min, "maxLength": max, "x-max-utf8-bytes": max })
}

/// A name or reference: one line, no control character.
fn one_line(min: usize, max: usize) -> Value {
    json!({ "minLength": min, "maxLength": max, "x-max-utf8-bytes": max,
            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" })
}

/// Text that must hold something other than white space (it is trimmed).
fn words(max: usize) -> Value {
    json!({ "minLength": 1, "maxLength": max, "x-max-utf8-bytes": max,
            "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$" })
}

fn positive() -> Value {
    json!({ "pattern": *POSITIVE_AMOUNT_PATTERN })
}

fn amount() -> Value {
    json!({ "pattern": *AMOUNT_PATTERN })
}

fn url() -> Value {
    json!({ "pattern": URL_PATTERN, "maxLength": MAX_URL_BYTES })
}

fn email() -> Value {
    json!({ "pattern": EMAIL_PATTERN, "maxLength": MAX_EMAIL_BYTES })
}

fn time() -> Value {
    json!({ "format": "date-time" })
}

fn hash() -> Value {
    json!({ "pattern": "^0x[0-9a-fA-F]{64}$" })
}

/// An optional settlement token.
fn tokens() -> Value {
    let mut names: Vec<Value> = Token::ALL.iter().map(|t| json!(t.symbol())).collect();
    names.push(Value::Null);
    json!({ "enum": names })
}

/// Metadata: a JSON object with no NUL in any key or string, at any depth.
fn metadata() -> Value {
    json!({ "propertyNames": { "pattern": "^[^\\u0000]*$" },
            "additionalProperties": { "$ref": "#/components/schemas/MetadataValue" } })
}

/// Reminder offsets in days.
fn days() -> Value {
    json!({ "items": { "type": "integer", "minimum": 1, "maximum": MAX_REMINDER_DAYS }, "maxItems": MAX_REMINDER_OFFSETS })
}

fn event_types() -> Vec<&'static str> {
    EventType::ALL.iter().map(|t| t.as_str()).collect()
}

/// An optional choice among `names`.
fn one_of_or_null<'a>(names: impl IntoIterator<Item = &'a str>) -> Value {
    let mut values: Vec<Value> = names.into_iter().map(|n| json!(n)).collect();
    values.push(Value::Null);
    json!({ "enum": values })
}

/// The checkout's creation body and the legacy amount-only invoice.
fn checkout_rules() -> Vec<Rule> {
    vec![
        ("CheckoutCreate", "amount", positive()),
        ("CheckoutCreate", "externalReference", bytes(0, MAX_EXTERNAL_REFERENCE_BYTES)),
        ("CheckoutCreate", "customerEmail", email()),
        ("CheckoutCreate", "successUrl", url()),
        ("CheckoutCreate", "cancelUrl", url()),
        ("CheckoutCreate", "metadata", metadata()),
        ("AmountOnlyIn", "metadata", metadata()),
        ("PaymentLinkIn", "metadata", metadata()),
    ]
}

/// An itemized invoice's parts.
fn invoice_part_rules() -> Vec<Rule> {
    vec![
        ("LineIn", "id", bytes(0, MAX_LINE_ID_BYTES)),
        ("LineIn", "sku", bytes(0, MAX_SKU_BYTES)),
        ("LineIn", "description", bytes(1, MAX_LINE_DESCRIPTION_BYTES)),
        ("LineIn", "quantity", positive()),
        ("LineIn", "unitAmount", amount()),
        ("CustomerIn", "name", one_line(0, MAX_CUSTOMER_NAME_BYTES)),
        ("CustomerIn", "company", one_line(0, MAX_CUSTOMER_NAME_BYTES)),
        ("CustomerIn", "email", email()),
        ("CustomerIn", "billingAddress", bytes(0, MAX_BILLING_ADDRESS_BYTES)),
        ("DiscountIn", "type", json!({ "enum": ["fixed", "percentage"] })),
        ("DiscountIn", "amount", amount()),
        ("DiscountIn", "percentage", json!({ "pattern": r"^(0*[0-9]{1,2}(\.[0-9]{1,6})?|0*100(\.0{1,6})?)$" })),
        ("TaxIn", "id", bytes(0, MAX_TAX_FIELD_BYTES)),
        ("TaxIn", "label", bytes(1, MAX_TAX_FIELD_BYTES)),
        ("TaxIn", "amount", amount()),
        ("TaxIn", "jurisdiction", bytes(0, MAX_TAX_FIELD_BYTES)),
        ("TaxIn", "registrationReference", bytes(0, MAX_TAX_FIELD_BYTES)),
        ("ReminderIn", "daysBeforeDue", days()),
        ("ReminderIn", "daysAfterDue", days()),
        ("AmountOnlyIn", "amount", positive()),
        ("AmountOnlyIn", "externalReference", bytes(0, MAX_EXTERNAL_REFERENCE_BYTES)),
    ]
}

/// The invoice actions and the test helper's payment.
fn action_rules() -> Vec<Rule> {
    vec![
        ("IssueIn", "version", json!({ "minimum": 1 })),
        ("ReasonIn", "reason", words(MAX_REASON_BYTES)),
        ("RefundIn", "paymentId", json!({ "pattern": "^pay_[0-9A-Za-z]{1,64}$" })),
        ("RefundIn", "amount", positive()),
        ("RefundIn", "reason", words(MAX_REASON_BYTES)),
        ("RefundIn", "externalTransactionHash", hash()),
        ("RefundIn", "chainId", json!({ "enum": [POLYGON_CHAIN_ID] })),
        ("RefundIn", "tokenContract", json!({ "pattern": "^0x[0-9a-fA-F]{40}$" })),
        ("TestPaymentIn", "amount", positive()),
        ("TestPaymentIn", "transactionHash", hash()),
        ("TestPaymentIn", "outcome", json!({ "enum": ["confirmed", "failed", null] })),
        ("TelemetryIn", "step", json!({ "enum": Step::ALL.map(Step::as_str) })),
    ]
}

/// A payment link's configuration and a customer's submission.
fn link_rules() -> Vec<Rule> {
    vec![
        ("PaymentLinkIn", "amountType", json!({ "enum": AmountType::ALL.map(AmountType::as_str) })),
        ("PaymentLinkIn", "amount", positive()),
        ("PaymentLinkIn", "minimumAmount", positive()),
        ("PaymentLinkIn", "maximumAmount", positive()),
        ("PaymentLinkIn", "currencyCode", tokens()),
        ("PaymentLinkIn", "mode", one_of_or_null(Mode::ALL.map(Mode::as_str))),
        ("PaymentLinkIn", "usageType", one_of_or_null(Usage::ALL.map(Usage::as_str))),
        ("PaymentLinkIn", "activeAt", time()),
        ("PaymentLinkIn", "expiresAt", time()),
        ("PaymentLinkIn", "title", words(MAX_TITLE_BYTES)),
        ("PaymentLinkIn", "description", bytes(0, MAX_LINK_DESCRIPTION_BYTES)),
        ("PaymentLinkIn", "successUrl", url()),
        ("PaymentLinkIn", "cancelUrl", url()),
        ("PaymentLinkIn", "successMessage", bytes(0, MAX_SUCCESS_MESSAGE_BYTES)),
        ("LinkCheckoutIn", "amount", positive()),
        ("LinkCheckoutIn", "email", email()),
        ("LinkCheckoutIn", "name", one_line(0, MAX_CUSTOMER_FIELD_BYTES)),
        ("LinkCheckoutIn", "customerReference", one_line(0, MAX_CUSTOMER_FIELD_BYTES)),
    ]
}

/// Webhook endpoints and test events.
fn webhook_rules() -> Vec<Rule> {
    let subscriptions = || json!({ "items": { "enum": event_types() }, "minItems": 1, "uniqueItems": true });
    vec![
        ("WebhookEndpointCreate", "url", url()),
        ("WebhookEndpointCreate", "description", bytes(0, MAX_ENDPOINT_DESCRIPTION_BYTES)),
        ("WebhookEndpointCreate", "eventTypes", subscriptions()),
        ("WebhookEndpointPatch", "url", url()),
        ("WebhookEndpointPatch", "description", bytes(0, MAX_ENDPOINT_DESCRIPTION_BYTES)),
        ("WebhookEndpointPatch", "eventTypes", subscriptions()),
        ("WebhookEndpointPatch", "state", one_of_or_null(EndpointState::ALL.map(EndpointState::as_str))),
        ("WebhookTestIn", "type", json!({ "enum": event_types() })),
        ("WebhookTestIn", "endpointId", json!({ "pattern": "^we_[0-9A-Za-z]{1,64}$" })),
    ]
}

/// The fields the itemized forms (creation and the draft's PATCH) share.
fn itemized_rules(form: &'static str) -> Vec<Rule> {
    vec![
        (form, "lines", json!({ "minItems": 1, "maxItems": MAX_LINES })),
        (form, "taxes", json!({ "maxItems": MAX_TAX_LINES })),
        (form, "currencyCode", tokens()),
        (form, "dueAt", time()),
        (form, "paymentTerms", bytes(0, MAX_PAYMENT_TERMS_BYTES)),
        (form, "memo", bytes(0, MAX_MEMO_BYTES)),
        (form, "footer", bytes(0, MAX_MEMO_BYTES)),
        (form, "purchaseOrderNumber", bytes(0, MAX_PURCHASE_ORDER_BYTES)),
        (form, "externalReference", bytes(0, MAX_EXTERNAL_REFERENCE_BYTES)),
        (form, "successUrl", url()),
        (form, "cancelUrl", url()),
        (form, "metadata", metadata()),
    ]
}

/// Request body rules the derive cannot state: the validators' limits (the domain's constants)
/// and formats, set on the component schemas by name.
/// An export's body: its type, schema, range and filters.
fn export_rules() -> Vec<Rule> {
    use stablepay_domain::event::EventType;
    use stablepay_domain::export::ExportType;
    use stablepay_domain::invoice::collection::CollectionState;
    use stablepay_domain::invoice::payment::PaymentStatus;
    use stablepay_domain::merchant::Token;
    use stablepay_domain::payment_link::model::{AmountType, Usage};
    use stablepay_domain::reconciliation::RunOutcome;
    use stablepay_domain::webhook::model::DeliveryStatus;
    let schemas = ExportType::ALL.iter().flat_map(|t| t.schemas().iter().copied());
    // A payment's status (`payments`) or a delivery's (`webhook_deliveries`).
    let mut statuses: Vec<&str> = PaymentStatus::ALL.iter().map(|s| s.as_str()).collect();
    statuses.extend(
        DeliveryStatus::ALL.iter().map(|s| s.as_str()).filter(|s| !PaymentStatus::ALL.iter().any(|p| p.as_str() == *s)),
    );
    vec![
        ("ExportIn", "type", json!({ "enum": ExportType::ALL.map(ExportType::as_str) })),
        ("ExportIn", "schema", one_of_or_null(schemas)),
        ("ExportIn", "from", time()),
        ("ExportIn", "to", time()),
        ("ExportFiltersIo", "collectionState", one_of_or_null(CollectionState::ALL.iter().map(|s| s.as_str()))),
        ("ExportFiltersIo", "status", one_of_or_null(statuses.iter().copied())),
        ("ExportFiltersIo", "paymentLink", json!({ "pattern": "^plink_[0-9A-Za-z]{1,64}$" })),
        ("ExportFiltersIo", "runId", json!({ "pattern": "^rcr_[0-9A-Za-z]{1,64}$" })),
        ("ExportFiltersIo", "outcome", one_of_or_null(RunOutcome::ALL.map(RunOutcome::as_str))),
        ("ExportFiltersIo", "amountType", one_of_or_null(AmountType::ALL.map(AmountType::as_str))),
        ("ExportFiltersIo", "usage", one_of_or_null(Usage::ALL.map(Usage::as_str))),
        ("ExportFiltersIo", "token", one_of_or_null(Token::ALL.map(Token::symbol))),
        ("ExportFiltersIo", "endpointId", json!({ "pattern": "^we_[0-9A-Za-z]{1,64}$" })),
        ("ExportFiltersIo", "eventType", one_of_or_null(EventType::ALL.map(EventType::as_str))),
    ]
}

/// The dashboard's account bodies: emails, passwords under the policy, names on one line with
/// something in them, link tokens, roles, settlement wallets.
fn account_rules() -> Vec<Rule> {
    use stablepay_domain::account::Role;
    use stablepay_domain::account::model::{MAX_PASSWORD_CHARS, MAX_USER_NAME_BYTES, MIN_PASSWORD_CHARS};
    let password = || json!({ "minLength": MIN_PASSWORD_CHARS, "maxLength": MAX_PASSWORD_CHARS });
    let name = || {
        json!({ "minLength": 1, "maxLength": MAX_USER_NAME_BYTES, "x-max-utf8-bytes": MAX_USER_NAME_BYTES,
                "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$" })
    };
    let token = || json!({ "pattern": "^[0-9A-Za-z]{43}$" });
    let roles = || json!({ "enum": Role::ALL.map(Role::as_str) });
    vec![
        ("SignupIn", "email", email()),
        ("SignupIn", "password", password()),
        ("SignupIn", "name", name()),
        ("SignupIn", "businessName", name()),
        ("ResetRequestIn", "email", email()),
        ("ResetConfirmIn", "token", token()),
        ("ResetConfirmIn", "password", password()),
        ("TokenIn", "token", token()),
        ("AcceptIn", "token", token()),
        ("AcceptIn", "password", password()),
        ("AcceptIn", "name", name()),
        ("PasswordChangeIn", "newPassword", password()),
        ("InvitationIn", "email", email()),
        ("InvitationIn", "role", roles()),
        ("RoleIn", "role", roles()),
        ("WalletIn", "wallet", json!({ "pattern": "^0x[0-9a-fA-F]{40}$" })),
        ("WalletIn", "token", json!({ "enum": Token::ALL.map(Token::symbol) })),
    ]
}

fn body_rules() -> Vec<Rule> {
    let mut rules = checkout_rules();
    rules.extend(invoice_part_rules());
    rules.extend(action_rules());
    rules.extend(link_rules());
    rules.extend(webhook_rules());
    rules.extend(itemized_rules("ItemizedCreateIn"));
    rules.extend(itemized_rules("InvoicePatch"));
    rules.extend(export_rules());
    rules.extend(account_rules());
    rules.push(("ReconciliationRunIn", "from", time()));
    rules.push(("ReconciliationRunIn", "to", time()));
    rules.push(("InvoicePatch", "version", json!({ "minimum": 1 })));
    rules.push(("LinkCheckoutIn", "version", json!({ "minimum": 1 })));
    rules
}

pub fn refine_bodies(doc: &mut serde_json::Value) {
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
    // A fixed link needs its amount: the example the reference shows must be accepted as it is.
    create["example"] = json!({ "title": "Workshop ticket", "amountType": "fixed", "amount": "25.00" });
    let mut patch = link;
    patch["properties"]["version"] = json!({ "type": "integer", "format": "int64", "minimum": 1,
        "description": "The link's current version." });
    if let Some(required) = patch.get_mut("required").and_then(serde_json::Value::as_array_mut) {
        required.push(json!("version"));
    }
    patch["description"] =
        json!("`PATCH /v1/payment-links/{id}`: the current version and the whole new configuration.");
    patch["example"] = json!({ "version": 1, "title": "Workshop ticket", "amountType": "fixed", "amount": "30.00" });
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
