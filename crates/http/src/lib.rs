//! HTTP adapter of stablepay (actix-web): routes, extractors (auth, JSON, query), the envelope,
//! error mapping, the OpenAPI document and the hosted pages.
//!
//! This is the only crate that knows HTTP status codes and JSON shapes. It parses requests into
//! domain types, calls domain use cases through the ports in [`AppState`], and renders results.

pub mod auth;
pub mod deprecation;
pub mod envelope;
pub mod error;
pub mod idempotency;
pub mod json;
pub mod middleware;
pub mod objects;
pub mod openapi;
pub mod openapi_errors;
pub mod pages;
pub mod query;
pub mod ratelimit;
pub mod reference;
pub mod routes;
pub mod state;
pub mod status;
pub mod wire;
pub mod wire_in;
pub mod wire_links;
pub mod wire_out;
pub mod wire_webhooks;

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpRequest, HttpResponse, web};
use utoipa::OpenApi;
use utoipa_actix_web::{AppExt, scope};

pub use error::{ApiError, ErrorCode};
pub use state::AppState;

/// The API's paths (templates split into segments, `{..}` matching any one segment) and the
/// methods each takes, from the OpenAPI document.
pub struct KnownRoutes(Vec<(Vec<String>, Vec<String>)>, Vec<&'static str>);

/// Whether `path` is an instance of the template `segments` (`{..}` matches any one non-empty
/// segment), without allocating.
fn template_matches(segments: &[String], path: &str) -> bool {
    let mut parts = path.split('/');
    segments.iter().all(|s| parts.next().is_some_and(|p| s == p || (s.starts_with('{') && !p.is_empty())))
        && parts.next().is_none()
}

impl KnownRoutes {
    /// The route a path belongs to, as a bounded label for metrics: its OpenAPI template
    /// (`/v1/invoices/{id}`), a customer page family (`/checkout/*`), or `unmatched`.
    pub fn label(&self, path: &str) -> &'static str {
        if let Some(i) = self.0.iter().position(|(segments, _)| template_matches(segments, path)) {
            return self.1[i];
        }
        match path.split('/').nth(1) {
            Some("checkout") => "/checkout/*",
            Some("i") => "/i/*",
            Some("l") => "/l/*",
            Some("assets") => "/assets/*",
            _ => "unmatched",
        }
    }

    fn from_document(doc: &serde_json::Value) -> Self {
        let mut routes = Vec::new();
        let mut labels = Vec::new();
        if let Some(paths) = doc["paths"].as_object() {
            for (template, item) in paths {
                // Metrics labels without an allocation per request: the templates are few and
                // live as long as the process (one copy per HTTP worker).
                labels.push(&*Box::leak(template.clone().into_boxed_str()));
                let segments = template.split('/').map(str::to_owned).collect();
                let methods = item
                    .as_object()
                    .map(|m| {
                        ["get", "post", "put", "patch", "delete"]
                            .iter()
                            .filter(|k| m.contains_key(**k))
                            .map(|k| k.to_uppercase())
                            .collect()
                    })
                    .unwrap_or_default();
                routes.push((segments, methods));
            }
        }
        Self(routes, labels)
    }

    /// The methods `path` takes, if it is a known path.
    fn allowed(&self, path: &str) -> Option<Vec<String>> {
        let mut found: Vec<String> = Vec::new();
        for (segments, methods) in &self.0 {
            if template_matches(segments, path) {
                found.extend(methods.iter().filter(|m| !found.contains(m)).cloned().collect::<Vec<_>>());
            }
        }
        (!found.is_empty()).then_some(found)
    }
}

/// Unknown routes: 404 NOT_FOUND in the envelope; a known path with another method: 405
/// METHOD_NOT_ALLOWED with `Allow`.
async fn not_found(req: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    let known = req.app_data::<web::Data<KnownRoutes>>().and_then(|k| k.allowed(req.path()));
    if let Some(methods) = known {
        let allow = methods.join(", ");
        return ApiError::new(
            ErrorCode::METHOD_NOT_ALLOWED,
            format!("{} does not take {}; it takes {allow}.", req.path(), req.method()),
        )
        .with_header("Allow", allow)
        .error_response();
    }
    ApiError::new(ErrorCode::NOT_FOUND, format!("No route for {} {}.", req.method(), req.path())).error_response()
}

/// The OpenAPI document of every route, with deprecations marked.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = routes_app().split_for_parts();
    deprecation::mark(&mut doc);
    doc
}

fn routes_app() -> utoipa_actix_web::UtoipaApp<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .into_utoipa_app()
        .openapi(openapi::ApiDoc::openapi())
        .service(routes::health::healthz)
        .service(routes::health::readyz)
        .service(
            scope::scope("/v1")
                .service(routes::openapi::openapi_json)
                .service(routes::checkout::create_checkout_session)
                .service(routes::checkout::get_checkout_session)
                .service(routes::checkout::get_payment)
                .service(routes::invoices::create_invoice)
                .service(routes::invoices::list_invoices)
                .service(routes::invoices::get_invoice)
                .service(routes::invoices::update_invoice)
                .service(routes::invoices::issue_invoice)
                .service(routes::invoices::open_checkout)
                .service(routes::invoices::void_invoice)
                .service(routes::invoices::void_remaining)
                .service(routes::invoices::mark_uncollectible)
                .service(routes::invoices::refund_reference)
                .service(routes::invoices::duplicate_invoice)
                .service(routes::invoices::send_invoice)
                .service(routes::invoices::remind_invoice)
                .service(routes::invoices::invoice_pdf)
                .service(routes::test_helpers::simulate_payment)
                .service(routes::test_helpers::advance_clock)
                .service(routes::test_helpers::reset_clock)
                .service(routes::test_helpers::get_clock)
                .service(routes::events::list_events)
                .service(routes::events::get_event)
                .service(routes::events::list_unattributed)
                .service(routes::public::get_public_checkout)
                .service(routes::public::submit_payment)
                .service(routes::public::get_public_invoice)
                .service(routes::public::public_invoice_checkout)
                .service(routes::links::create_link)
                .service(routes::links::list_links)
                .service(routes::links::get_link)
                .service(routes::links::update_link)
                .service(routes::links::link_payments)
                .service(routes::links::pause_link)
                .service(routes::links::resume_link)
                .service(routes::links::archive_link)
                .service(routes::links::duplicate_link)
                .service(routes::links::get_public_link)
                .service(routes::links::public_link_checkout)
                .service(routes::webhooks::create_endpoint)
                .service(routes::webhooks::list_endpoints)
                .service(routes::webhooks::get_endpoint)
                .service(routes::webhooks::update_endpoint)
                .service(routes::webhooks::delete_endpoint)
                .service(routes::webhooks::rotate_secret)
                .service(routes::webhooks::end_secret_overlap)
                .service(routes::webhooks::list_incidents)
                .service(routes::webhooks::get_incident)
                .service(routes::webhooks::list_deliveries)
                .service(routes::webhooks::get_delivery)
                .service(routes::webhooks::replay_delivery)
                .service(routes::webhooks::send_test),
        )
}

/// The whole application: routes, state, middleware and the unknown-route fallback.
pub fn build_app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let (app, mut doc) = routes_app().split_for_parts();
    deprecation::mark(&mut doc);
    let document = openapi::with_webhooks(&doc);
    let known = KnownRoutes::from_document(&document);
    let json = document.to_string();
    app.app_data(state)
        .app_data(web::Data::new(known))
        .service(pages::checkout::checkout_page)
        .service(pages::checkout::simulate_from_page)
        .service(pages::checkout::submit_from_page)
        .service(pages::invoice::invoice_page)
        .service(pages::invoice::pay_invoice)
        .service(pages::link::link_page)
        .service(pages::link::submit_link_page)
        .service(pages::styles)
        .service(pages::script)
        .app_data(web::Data::new(openapi::OpenApiJson(json)))
        .app_data(
            web::PathConfig::default().error_handler(|err, _| ApiError::validation("path", err.to_string()).into()),
        )
        .default_service(web::to(not_found))
        .wrap(middleware::RequestContext)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use actix_web::{App, HttpResponse, get, test, web};
    use stablepay_domain::ports::{
        MockApiKeyStore, MockClock, MockEventStore, MockHealth, MockIdempotencyStore, MockInvoiceStore,
    };
    use stablepay_domain::testing::SeqCrypto;

    use super::*;

    fn state() -> web::Data<AppState> {
        web::Data::new(AppState {
            keys: Arc::new(MockApiKeyStore::new()),
            crypto: Arc::new(SeqCrypto::default()),
            clock: Arc::new(MockClock::new()),
            health: Arc::new(MockHealth::new()),
            events: Arc::new(MockEventStore::new()),
            invoices: Arc::new(MockInvoiceStore::new()),
            idempotency: Arc::new(MockIdempotencyStore::new()),
            chain: Arc::new(stablepay_domain::ports::MockChain::new()),
            worker: Arc::new(status::WorkerStatus::off(chrono::Utc::now())),
            limits: Arc::default(),
            watch: Arc::new(stablepay_domain::ports::MockFollowerStore::new()),
            webhooks: Arc::new(stablepay_domain::webhook::ports::MockWebhookStore::new()),
            links: Arc::new(stablepay_domain::payment_link::ports::MockPaymentLinkStore::new()),
            merchants: Arc::new(stablepay_domain::ports::MockMerchantStore::new()),
            renderer: Arc::new(stablepay_domain::ports::MockInvoiceRenderer::new()),
            emails: Arc::new(stablepay_domain::email::ports::MockEmailStore::new()),
            mailer: Arc::new(stablepay_domain::email::ports::MockMailer::new()),
            limiter: Arc::new(stablepay_domain::ports::MockRateLimiter::new()),
            trusted_proxies: Default::default(),
            secret_box: Arc::new(stablepay_domain::webhook::ports::MockSecretBox::new()),
            webhook_settings: Default::default(),
            chain_settings: stablepay_domain::merchant::ChainSettings::default(),
            public_base_url: "http://test".into(),
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
            App::new().app_data(state()).service(old_thing).service(boom).wrap(middleware::RequestContext),
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
