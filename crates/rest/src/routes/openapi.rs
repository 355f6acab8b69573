//! `GET /v1/openapi.json`: the machine-readable description, generated from the code.

use actix_web::{HttpResponse, get, web};

/// The OpenAPI 3.1 document of this API (not wrapped in the envelope).
#[utoipa::path(tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
#[get("/openapi.json")]
pub async fn openapi_json(doc: web::Data<crate::openapi::document::OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(doc.0.clone())
}
