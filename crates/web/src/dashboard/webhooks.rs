//! Webhooks in the dashboard: the endpoints (create with the signing secret shown once on the
//! form's answer, disable and enable, send a test event), and the delivery log, newest first,
//! filtered by delivery status, each with its latest attempt (the answer's status, the error's
//! category and message, the start of the answer) and a replay: why a webhook fails, as support
//! reads it, and what a developer does about it. The same `Webhooks` use cases as the API.

use std::cell::RefCell;
use std::rc::Rc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::ids::{WebhookDeliveryId, WebhookEndpointId};
use stablepay_domain::url::HttpUrl;
use stablepay_domain::webhook::model::{DeliveryStatus, EndpointState, SigningSecret, Subscription, WebhookDelivery};
use stablepay_domain::webhook::ports::DeliveryFilter;
use stablepay_domain::webhook::service::{EndpointInput, EndpointPatch};
use stablepay_domain::{Error, Resource};
use stablepay_http::state::AppState;

use super::form::{ActionPost, Failed, Posted, Refusal, Work, alert, form, input, once, posted};
use super::frame::{Filter, FilterKind, Pairs, Place, filter_form, next_link, place, refused, render};
use crate::page::{see_other, when};

const LIST: &str = "/dashboard/webhooks";

/// The endpoints and the delivery log.
#[get("/dashboard/webhooks")]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    page(&state, &p, &Pairs::query(&req), (StatusCode::OK, None, None)).await
}

async fn page(
    state: &AppState,
    p: &Place,
    q: &Pairs,
    (status, secret, failed): (StatusCode, Option<Option<SigningSecret>>, Failed<'_>),
) -> HttpResponse {
    match sections(state, p, q, (secret, failed)).await {
        Ok(main) => render(p, (LIST, "Webhooks"), status, main),
        Err(e) => refused(e),
    }
}

async fn sections(
    state: &AppState,
    p: &Place,
    q: &Pairs,
    (secret, failed): (Option<Option<SigningSecret>>, Failed<'_>),
) -> Result<Markup, Error> {
    let filter = q.get("status").and_then(DeliveryStatus::parse);
    let hooks = state.use_cases.webhooks();
    let endpoints = hooks.list_endpoints(&p.scope, &Pairs::query_empty().page()).await?;
    let listed = hooks
        .list_deliveries(&p.scope, &DeliveryFilter { status: filter, ..DeliveryFilter::default() }, &q.page())
        .await?;
    let last = listed.has_more.then(|| listed.items.last().map(|d| d.id.as_str())).flatten();
    let options = DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect();
    let manage = p.can(Action::ManageWebhooks);
    Ok(html! {
        h1 { "Webhooks" }
        @match &secret {
            Some(Some(s)) => section.state.warn role="status" {
                h2 { "The endpoint's signing secret" }
                p { "Copy it now: it is shown once. Verify each delivery's signature with it." }
                code.secret #new-secret { (s.as_str()) }
            },
            Some(None) => p.state role="status" { "This form already made its endpoint, whose secret was shown then." },
            None => {},
        }
        (alert(failed.filter(|f| f.0 != "create").map(|f| f.1), &[]))
        h2 { "Endpoints" }
        @if endpoints.items.is_empty() { p { "No endpoint: events are only in the events list." } }
        ul.endpoints {
            @for e in &endpoints.items {
                li {
                    code.hash { (e.url.as_str()) } " · " (e.state.as_str())
                    @if let Subscription::Only(types) = &e.subscription { " · " (types.len()) " event types" } @else { " · every event" }
                    @if manage {
                        @let at = |tail: &str| p.url(&format!("{LIST}/endpoints/{}/{tail}", e.id), &[]);
                        div.buttons {
                            @if e.state == EndpointState::Enabled {
                                (form(p, state, &at("disable"), html! { button type="submit" aria-label=(format!("Disable {}", e.url.as_str())) { "Disable" } }))
                                (form(p, state, &at("test"), html! { button type="submit" aria-label=(format!("Send a test event to {}", e.url.as_str())) { "Send a test event" } }))
                            } @else {
                                (form(p, state, &at("enable"), html! { button type="submit" aria-label=(format!("Enable {}", e.url.as_str())) { "Enable" } }))
                            }
                        }
                    }
                }
            }
        }
        @if manage { (create_form(state, p, failed.filter(|f| f.0 == "create"))) }
        h2 { "Deliveries" }
        (filter_form(p, LIST, &[Filter { name: "status", label: "Status", kind: FilterKind::Select(options), selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No deliveries here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Deliveries" { table.deliveries.cards {
                thead { tr { th { "Event" } th { "Status" } th { "Attempts" } th { "Latest answer" } th { "Created" } @if manage { th { "Replay" } } } }
                tbody {
                    @for d in &listed.items {
                        tr {
                            td data-label="Event" { span { (d.event_type.as_str()) br; code { (d.event_id.as_str()) } } }
                            td data-label="Status" { (d.status.as_str()) }
                            td data-label="Attempts" { (d.attempt_count) }
                            td data-label="Latest answer" { span { (latest_answer(d)) } }
                            td data-label="Created" { (when(d.created_at)) }
                            @if manage {
                                td data-label="Replay" { (form(p, state, &p.url(&format!("{LIST}/deliveries/{}/replay", d.id), &[]), html! {
                                    button type="submit" aria-label=(format!("Replay {}", d.id)) { "Replay" }
                                })) }
                            }
                        }
                    }
                }
            } }
        }
        (next_link(p, LIST, last, &[("status", filter.map(|f| f.as_str()))]))
    })
}

fn create_form(state: &AppState, p: &Place, failed: Failed<'_>) -> Markup {
    let r = failed.map(|f| f.1);
    let typed = |n: &str| failed.map(|f| f.2.text(n).to_owned()).unwrap_or_default();
    form(
        p,
        state,
        &p.url(&format!("{LIST}/endpoints"), &[]),
        html! {
            h3 { "Add an endpoint" }
            (alert(r, &["url", "description"]))
            (input("url", "Endpoint URL (https)", ("text", &typed("url")), r))
            (input("description", "Description (optional)", ("text", &typed("description")), r))
            p.small { "It receives every event type; the API can narrow the subscription." }
            button.primary type="submit" { "Add the endpoint" }
        },
    )
}

/// Adds an endpoint (once per form); its signing secret goes to this answer only.
#[post("/dashboard/webhooks/endpoints")]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::ManageWebhooks).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let shown: Rc<RefCell<Option<SigningSecret>>> = Rc::default();
    let (out, s, scope) = (shown.clone(), state.clone(), posted.place.scope.clone());
    let (url, description) =
        (posted.form.text("url").trim().to_owned(), posted.form.get("description").map(str::to_owned));
    let work = move |_claim| {
        let work: Work = Box::pin(async move {
            let url = HttpUrl::parse(&url).map_err(|e| Error::validation("url", e.to_string()))?;
            let input = EndpointInput { url, event_types: Subscription::All, description };
            let (_, secret) = s.use_cases.webhooks().create_endpoint(&scope, input).await?;
            *out.borrow_mut() = Some(secret);
            Ok(LIST.to_owned())
        });
        work
    };
    let q = Pairs::query(&req);
    match once(&state, (&posted, &req, &body), |_| Some(LIST.to_owned()), work).await {
        Ok(_) => page(&state, &posted.place, &q, (StatusCode::CREATED, Some(shown.take()), None)).await,
        Err(r) => page(&state, &posted.place, &q, (r.status, None, Some(("create", &r, &posted.form)))).await,
    }
}

/// Disables or enables an endpoint, or sends it a test event.
#[post("/dashboard/webhooks/endpoints/{id}/{action}")]
pub async fn endpoint(post: ActionPost) -> HttpResponse {
    let ActionPost { req, state, id, action, body } = post;
    let posted = match posted(&req, &state, &body, Action::ManageWebhooks).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let Some(id) = WebhookEndpointId::parse(&id) else { return refused(Error::NotFound(Resource::WebhookEndpoint)) };
    let (hooks, scope) = (state.use_cases.webhooks(), &posted.place.scope);
    let state_to = |s| EndpointPatch { state: Some(s), ..EndpointPatch::default() };
    let done = match action.as_str() {
        "disable" => hooks.update_endpoint(scope, &id, state_to(EndpointState::Disabled)).await.map(|_| ()),
        "enable" => hooks.update_endpoint(scope, &id, state_to(EndpointState::Enabled)).await.map(|_| ()),
        "test" => hooks.send_test(scope, "invoice.paid", Some(&id)).await.map(|_| ()),
        _ => Err(Error::NotFound(Resource::WebhookEndpoint)),
    };
    after(&state, &req, &posted, ("endpoint", done)).await
}

/// Sends a delivery's event again, as a new delivery.
#[post("/dashboard/webhooks/deliveries/{id}/replay")]
pub async fn replay(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::ManageWebhooks).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let done = match WebhookDeliveryId::parse(&path) {
        Some(id) => state.use_cases.webhooks().replay(&posted.place.scope, &id).await.map(|_| ()),
        None => Err(Error::NotFound(Resource::WebhookDelivery)),
    };
    after(&state, &req, &posted, ("replay", done)).await
}

/// The page after an endpoint's or a delivery's action: the list, or the refusal.
async fn after(
    state: &AppState,
    req: &HttpRequest,
    posted: &Posted,
    (action, done): (&str, Result<(), Error>),
) -> HttpResponse {
    match done {
        Ok(()) => see_other(&posted.place.url(LIST, &[])),
        Err(e) => {
            let r = Refusal::of(e);
            page(state, &posted.place, &Pairs::query(req), (r.status, None, Some((action, &r, &posted.form)))).await
        }
    }
}

/// What the endpoint last answered, in a few words.
fn latest_answer(d: &WebhookDelivery) -> Markup {
    html! {
        @match &d.latest {
            None => "not attempted yet",
            Some(a) => {
                @if let Some(code) = a.outcome.status_code { "HTTP " (code) }
                @if let Some(c) = a.outcome.error_category { " · " (c.as_str()) }
                @if let Some(m) = &a.outcome.error_message { br; (m) }
                @if let Some(x) = &a.outcome.response_excerpt { br; code { (x) } }
            }
        }
    }
}
