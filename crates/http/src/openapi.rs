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
    components(schemas(crate::wire::ErrorEnvelope)),
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
