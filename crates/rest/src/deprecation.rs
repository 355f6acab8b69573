//! Deprecated operations (the spec's Versioning rule 5): marked `deprecated` in the OpenAPI
//! document, and answered with `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers.
//!
//! No operation of v1 is deprecated today; [`DEPRECATED`] is where one would be listed.

use std::future::{Ready, ready};
use std::rc::Rc;

use actix_web::Error;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform, forward_ready};
use actix_web::http::Method;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use futures_util::future::LocalBoxFuture;
use utoipa::openapi::{Deprecated as OaDeprecated, OpenApi};

/// One deprecated operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deprecated {
    pub method: &'static str,
    /// The route pattern as registered (`/v1/invoices/{id}`).
    pub path: &'static str,
    /// RFC 9745 value: `@` + Unix seconds of the deprecation date.
    pub deprecation: &'static str,
    /// RFC 8594 value: an HTTP date after which the operation may stop working.
    pub sunset: &'static str,
}

/// The deprecated operations of this build.
pub const DEPRECATED: &[Deprecated] = &[];

static DEPRECATIONS: std::sync::OnceLock<Vec<Deprecated>> = std::sync::OnceLock::new();

fn registry() -> &'static [Deprecated] {
    DEPRECATIONS.get().map_or(DEPRECATED, Vec::as_slice)
}

/// Replaces the registry (once per process; used by the mechanism's test).
pub fn install(list: Vec<Deprecated>) {
    let _ = DEPRECATIONS.set(list);
}

/// Whether any operation is deprecated.
fn any() -> bool {
    !registry().is_empty()
}

fn lookup(method: &Method, pattern: Option<&str>) -> Option<Deprecated> {
    let pattern = pattern?;
    registry().iter().copied().find(|d| d.method.eq_ignore_ascii_case(method.as_str()) && d.path == pattern)
}

fn apply(d: Deprecated, headers: &mut HeaderMap) {
    headers.insert(HeaderName::from_static("deprecation"), HeaderValue::from_static(d.deprecation));
    headers.insert(HeaderName::from_static("sunset"), HeaderValue::from_static(d.sunset));
}

/// Marks the registered operations deprecated in the document.
pub fn mark(doc: &mut OpenApi) {
    for d in registry() {
        if let Some(item) = doc.paths.paths.get_mut(d.path) {
            let op = match d.method.to_ascii_uppercase().as_str() {
                "GET" => item.get.as_mut(),
                "POST" => item.post.as_mut(),
                "PATCH" => item.patch.as_mut(),
                "PUT" => item.put.as_mut(),
                "DELETE" => item.delete.as_mut(),
                _ => None,
            };
            if let Some(op) = op {
                op.deprecated = Some(OaDeprecated::True);
            }
        }
    }
}

/// Adds the `Deprecation` and `Sunset` headers to the answers of deprecated operations.
pub struct Deprecations;

impl<S, B> Transform<S, ServiceRequest> for Deprecations
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = Error;
    type Transform = DeprecationsService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(DeprecationsService { service: Rc::new(service) }))
    }
}

/// The service [`Deprecations`] wraps.
pub struct DeprecationsService<S> {
    service: Rc<S>,
}

impl<S, B> Service<ServiceRequest> for DeprecationsService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        // Matching the route again costs a regex pass; only do it when something is deprecated.
        let deprecated = if any() { lookup(req.method(), req.match_pattern().as_deref()) } else { None };
        let service = Rc::clone(&self.service);
        Box::pin(async move {
            let mut res = service.call(req).await?;
            if let Some(d) = deprecated {
                apply(d, res.headers_mut());
            }
            Ok(res)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use actix_web::{App, HttpResponse, get, test, web};

    use super::Deprecations;
    use stablepay_http::envelope;
    use stablepay_http::middleware::RequestContext;
    use stablepay_http::state::AppState;
    use stablepay_http::status::WorkerStatus;

    use crate::deprecation;

    fn state() -> web::Data<AppState> {
        web::Data::new(AppState {
            use_cases: stablepay_domain::testing::idle_use_cases(),
            worker: Arc::new(WorkerStatus::off(chrono::Utc::now())),
            trusted_proxies: Default::default(),
        })
    }

    #[get("/v1/old-thing")]
    async fn old_thing() -> HttpResponse {
        HttpResponse::Ok().json(envelope::success_body(&"old"))
    }

    #[get("/v1/boom")]
    async fn boom() -> HttpResponse {
        panic!("handler bug")
    }

    #[actix_web::test]
    async fn deprecation_marks_the_document_and_adds_headers() {
        deprecation::install(vec![deprecation::Deprecated {
            method: "GET",
            path: "/v1/old-thing",
            deprecation: "@1893456000",
            sunset: "Sat, 01 Jan 2031 00:00:00 GMT",
        }]);
        let app = test::init_service(
            App::new().app_data(state()).service(old_thing).service(boom).wrap(Deprecations).wrap(RequestContext),
        )
        .await;
        let res = test::call_service(&app, test::TestRequest::get().uri("/v1/old-thing").to_request()).await;
        assert_eq!(res.headers().get("deprecation").unwrap(), "@1893456000");
        assert_eq!(res.headers().get("sunset").unwrap(), "Sat, 01 Jan 2031 00:00:00 GMT");
        // The document marks the operation.
        let mut doc = utoipa::openapi::OpenApiBuilder::new()
            .paths(utoipa::openapi::PathsBuilder::new().path(
                "/v1/old-thing",
                utoipa::openapi::PathItem::new(
                    utoipa::openapi::HttpMethod::Get,
                    utoipa::openapi::path::Operation::new(),
                ),
            ))
            .build();
        deprecation::mark(&mut doc);
        let op = doc.paths.paths["/v1/old-thing"].get.as_ref().unwrap();
        assert!(matches!(op.deprecated, Some(utoipa::openapi::Deprecated::True)));
        // Nothing of the real API is deprecated today.
        assert!(deprecation::DEPRECATED.is_empty());

        // A panic becomes a 500 in the envelope, with the request id in header and body.
        // (actix renders an Err from the service exactly like this; the test does it by hand.)
        let err =
            test::try_call_service(&app, test::TestRequest::get().uri("/v1/boom").to_request()).await.unwrap_err();
        let res = err.error_response();
        assert_eq!(res.status().as_u16(), 500);
        let id = res.headers().get("x-request-id").unwrap().to_str().unwrap().to_owned();
        let bytes = actix_web::body::to_bytes(res.into_body()).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "INTERNAL_SERVER_ERROR");
        assert_eq!(body["meta"]["requestId"], id.as_str());
        assert!(!body.to_string().contains("handler bug"), "no internals leak");
    }
}
