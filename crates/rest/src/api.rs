//! The REST API as an actix application: its routes (`/healthz`, `/readyz` and everything under
//! `/v1`), its fallback, its document and the deprecation headers. The application that serves
//! it (the `stablepay` binary) adds the state, the hosted pages and the request pipeline.

use actix_web::{App, web};
use stablepay_http::error::ApiError;
use stablepay_http::factory::AppFactory;
use utoipa::OpenApi;
use utoipa_actix_web::service_config::ServiceConfig;
use utoipa_actix_web::{AppExt, scope};

use crate::deprecation::{self, Deprecations};
use crate::known_routes::{KnownRoutes, not_found};
use crate::openapi::document::{ApiDoc, OpenApiJson, with_webhooks};
use crate::routes;

/// The REST API as an actix application, and its known routes (which label its requests in the
/// metrics).
pub struct Api<T> {
    /// The routes with what they need (the served document, the known routes, the answer to a
    /// malformed path), the fallback and the deprecation headers.
    pub app: App<T>,
    /// The API's paths and methods.
    pub known: web::Data<KnownRoutes>,
}

/// The REST API, ready for the state, the pages and the request pipeline.
pub fn api() -> Api<impl AppFactory> {
    let (app, mut doc) = routes_app().split_for_parts();
    deprecation::mark(&mut doc);
    let document = with_webhooks(&doc);
    let known = web::Data::new(KnownRoutes::from_document(&document));
    let app = app
        .app_data(known.clone())
        .app_data(web::Data::new(OpenApiJson(document.to_string())))
        .app_data(
            web::PathConfig::default().error_handler(|err, _| ApiError::validation("path", err.to_string()).into()),
        )
        .default_service(web::to(not_found))
        .wrap(Deprecations);
    Api { app, known }
}

/// The served document, as `GET /v1/openapi.json` answers it.
pub fn document() -> serde_json::Value {
    with_webhooks(&openapi_document())
}

/// The OpenAPI document of every route, with deprecations marked.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = routes_app().split_for_parts();
    deprecation::mark(&mut doc);
    doc
}

fn routes_app() -> utoipa_actix_web::UtoipaApp<impl AppFactory> {
    App::new()
        .into_utoipa_app()
        .openapi(ApiDoc::openapi())
        .service(routes::health::healthz)
        .service(routes::health::readyz)
        .service(
            scope::scope("/v1")
                .service(routes::openapi::openapi_json)
                .service(routes::checkout::create_checkout_session)
                .service(routes::checkout::get_checkout_session)
                .service(routes::checkout::get_payment)
                .service(routes::checkout::checkout_diagnostics)
                .service(routes::checkout::payment_diagnostics)
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
                .configure(books)
                .service(routes::events::list_events)
                .service(routes::events::get_event)
                .service(routes::events::list_unattributed)
                .service(routes::events::get_unattributed)
                .service(routes::events::attribute_transfer)
                .service(routes::public::get_public_checkout)
                .service(routes::public::submit_payment)
                .service(routes::public::wallet_payment_attempt)
                .service(routes::public::relay_authorization)
                .service(routes::public::get_relayed_authorization)
                .service(routes::public::checkout_telemetry)
                .service(routes::public::get_public_invoice)
                .service(routes::public::public_invoice_pdf)
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
                .service(routes::dashboard::sessions::create_session)
                .service(routes::dashboard::sessions::get_session)
                .service(routes::dashboard::sessions::reauthenticate)
                .service(routes::dashboard::sessions::end_session)
                .service(routes::dashboard::sessions::end_all_sessions)
                .configure(accounts)
                .configure(webhooks),
        )
}

/// The dashboard's account routes: sign-up, emailed links, password, two-factor login, and a
/// merchant's team.
fn accounts(cfg: &mut ServiceConfig) {
    use routes::dashboard::{account, settings, team, two_factor};
    cfg.service(account::signup)
        .service(account::request_reset)
        .service(account::confirm_reset)
        .service(account::confirm_verification)
        .service(account::resend_verification)
        .service(account::accept_invitation)
        .service(account::change_password)
        .service(two_factor::get_two_factor)
        .service(two_factor::start_two_factor)
        .service(two_factor::confirm_two_factor)
        .service(two_factor::disable_two_factor)
        .service(team::list_members)
        .service(team::change_member)
        .service(team::remove_member)
        .service(team::create_invitation)
        .service(team::list_invitations)
        .service(team::revoke_invitation)
        .service(team::set_security)
        .service(team::audit_log)
        .service(settings::get_settlement)
        .service(settings::set_settlement_wallet)
        .service(settings::request_live_activation)
        .service(settings::set_notifications)
        .service(settings::set_unique_amounts)
        .service(settings::dashboard_unattributed)
        .service(settings::dashboard_attribute);
}

/// The routes of the merchant's books and support: exports, reconciliation, readiness.
fn books(cfg: &mut ServiceConfig) {
    cfg.service(routes::exports::create_export)
        .service(routes::exports::sync_export)
        .service(routes::exports::list_exports)
        .service(routes::exports::get_export)
        .service(routes::exports::cancel_export)
        .service(routes::exports::export_file)
        .service(routes::reconciliation::reconciliation)
        .service(routes::reconciliation::create_run)
        .service(routes::reconciliation::list_runs)
        .service(routes::reconciliation::get_run)
        .service(routes::reconciliation::run_items)
        .service(routes::checkout::merchant_diagnostics);
}

/// The webhook routes: endpoints, incidents, deliveries and test events.
fn webhooks(cfg: &mut ServiceConfig) {
    cfg.service(routes::webhooks::create_endpoint)
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
        .service(routes::webhooks::send_test);
}
