//! The HTTP application of one HTTP worker: the REST API and the hosted pages over the
//! worker's state, inside the request pipeline.

use actix_web::{App, web};
use stablepay_http::body::RequestLimits;
use stablepay_http::factory::AppFactory;
use stablepay_http::middleware::{RequestContext, RouteLabels};
use stablepay_http::state::AppState;

/// The API's routes and fallback, the pages, the state and the body limits, each request in
/// the request pipeline (its id, span, panic guard, body ceiling and metrics, labelled by the
/// API's route template or the page family).
pub fn build(state: web::Data<AppState>, limits: web::Data<RequestLimits>) -> App<impl AppFactory> {
    let stablepay_rest::api::Api { app, known } = stablepay_rest::api::api();
    let labels = RouteLabels::new(move |path| {
        known.label(path).or_else(|| stablepay_web::route_label(path)).unwrap_or("unmatched")
    });
    app.configure(stablepay_web::configure)
        .app_data(state)
        .app_data(limits)
        .app_data(web::Data::new(labels))
        .wrap(RequestContext)
}
