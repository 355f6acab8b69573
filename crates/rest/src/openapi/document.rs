//! The OpenAPI 3.1 document: generated from the handlers' annotations, then made as strict as
//! the validators (`parameters`, `bodies`), with its `links` and each operation's error codes
//! (`errors`), and the `webhooks` section of the events a registered endpoint receives.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::openapi::bodies::refine_bodies;
use crate::openapi::links::add_links;
use crate::openapi::parameters::refine_parameters;

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
        crate::wire::common::ErrorEnvelope,
        crate::wire::webhooks::InvoiceEvent,
        crate::wire::webhooks::PaymentEvent,
        crate::wire::webhooks::UnattributedTransferEvent,
        crate::wire::webhooks::PaymentLinkEvent,
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
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::session::COOKIE,
                "A dashboard session (POST /v1/dashboard/sessions sets it); changes also send X-CSRF-Token",
            ))),
        );
    }
}

/// The document as JSON with its OpenAPI 3.1 `webhooks` section: one entry per event type, the
/// POST a registered endpoint receives, with the event's schema and the signature headers.
pub fn with_webhooks(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
    use serde_json::json;
    let mut value = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    let mut hooks = serde_json::Map::new();
    for t in stablepay_domain::event::EventType::ALL {
        let schema = crate::wire::webhooks::event_schema_name(t);
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
    crate::openapi::errors::refine(&mut value);
    value
}
