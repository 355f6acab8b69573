//! Developers: the API keys of the mode (create unrestricted or restricted, shown once; revoke;
//! when each was last used) and the events list. Keys are managed by roles with
//! `manage_api_keys`; a new key's secret is shown on the answer of its form only, never stored
//! and never recorded with the form's key (a resent form says the key was made, not what it is).

use std::cell::RefCell;
use std::rc::Rc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::api_key::model::{ApiKeySecret, KeyType};
use stablepay_domain::event::model::EventType;
use stablepay_domain::ids::ApiKeyId;
use stablepay_http::state::AppState;

use super::form::{Failed, Refusal, Work, alert, form, input, once, posted, reauthenticated, reauthentication_fields};
use super::frame::{Filter, FilterKind, Pairs, Place, filter_form, next_link, place, refused, render};
use crate::page::when;

const PATH: &str = "/dashboard/developers";

/// The keys and the events.
#[get("/dashboard/developers")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::ManageApiKeys).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    page(&state, &p, &q, (StatusCode::OK, None, None)).await
}

/// The page; `created` is a key made by this answer's form (its secret shown once).
async fn page(
    state: &AppState,
    p: &Place,
    q: &Pairs,
    (status, created, failed): (StatusCode, Option<Created>, Failed<'_>),
) -> HttpResponse {
    let keys = match state.use_cases.api_keys().list(&p.scope.merchant_id, p.scope.mode).await {
        Ok(k) => k,
        Err(e) => return refused(e),
    };
    let filter = q.get("type").and_then(EventType::parse);
    let events = match state.use_cases.events().list(&p.scope, filter, &q.page()).await {
        Ok(e) => e,
        Err(e) => return refused(e),
    };
    let last = events.has_more.then(|| events.items.last().map(|e| e.id.as_str())).flatten();
    let options = EventType::ALL.iter().map(|t| t.as_str()).collect();
    let main = html! {
        h1 { "Developers" }
        @match &created {
            Some(Created::Shown(secret)) => section.state.warn role="status" {
                h2 { "Your new key" }
                p { "Copy it now: it is shown once and cannot be shown again." }
                code.secret #new-key { (secret.reveal()) }
            },
            Some(Created::Replayed) => p.state role="status" { "This form already made its key, whose secret was shown then and is not shown again. Revoke it if it was not copied." },
            None => {},
        }
        @if let Some((_, r, _)) = failed.filter(|(action, _, _)| *action == "revoke") { p.error role="alert" { (r.message) } }
        h2 { "API keys" }
        (key_table(state, p, &keys))
        h2 { "Create a key" }
        (create_form(state, p, failed))
        h2 { "Events" }
        (filter_form(p, PATH, &[Filter { name: "type", label: "Event type", kind: FilterKind::Select(options), selected: filter.map(|f| f.as_str()) }]))
        @if events.items.is_empty() { p { "No events here yet." } }
        ul.events {
            @for e in &events.items { li { code { (e.id.as_str()) } " · " (e.event_type.as_str()) " · " (when(e.created_at)) } }
        }
        (next_link(p, PATH, last, &[("type", filter.map(|f| f.as_str()))]))
    };
    render(p, (PATH, "Developers"), status, main)
}

fn key_table(state: &AppState, p: &Place, keys: &[stablepay_domain::api_key::model::ApiKey]) -> Markup {
    html! {
        @if keys.is_empty() { p { "No keys in this mode." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="API keys" { table.keys {
                thead { tr { th { "Key" } th { "Type" } th { "Access" } th { "Created" } th { "Last used" } th { "State" } } }
                tbody {
                    @for k in keys {
                        tr {
                            td { code { (k.display_prefix) "…" } }
                            td { (k.key_type.as_str()) }
                            td { @match &k.permissions { Some(perms) => (perms.to_string()), None => "unrestricted" } }
                            td { (when(k.created_at)) }
                            td { @match k.last_used_at { Some(at) => (when(at)), None => "never" } }
                            td {
                                @match k.revoked_at {
                                    Some(at) => { "revoked " (when(at)) },
                                    None => (form(p, state, &p.url(&format!("{PATH}/keys/{}/revoke", k.id), &[]), html! {
                                        button type="submit" aria-label=(format!("Revoke {}", k.display_prefix)) { "Revoke" }
                                    })),
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}

fn create_form(state: &AppState, p: &Place, failed: Failed<'_>) -> Markup {
    let failed = failed.filter(|(action, _, _)| *action == "create");
    let refusal = failed.map(|(_, r, _)| r);
    let typed = |name: &str| failed.map(|(_, _, f)| f.text(name).to_owned()).unwrap_or_default();
    let kind = typed("type");
    form(
        p,
        state,
        &p.url(&format!("{PATH}/keys"), &[]),
        html! {
            (alert(refusal, &["permissions", "password", "otp"]))
            div.field {
                label for="key-type" { "Type" }
                select #key-type name="type" {
                    option value="secret" selected[kind != "publishable"] { "Secret (server side)" }
                    option value="publishable" selected[kind == "publishable"] { "Publishable (browsers)" }
                }
            }
            (input("permissions", "Restrict to (empty: unrestricted)", ("text", &typed("permissions")), refusal))
        p.small { "For example: " code { "invoices:read, checkout_sessions:write" } " (families: checkout_sessions, invoices, payments, payment_links, webhooks, events, exports; write includes read)." }
            (reauthentication_fields(state, p, "create", refusal))
            button.primary type="submit" { "Create the key" }
        },
    )
}

/// What the form's answer shows of a created key.
enum Created {
    /// Made by this submission: its secret, shown once.
    Shown(ApiKeySecret),
    /// Made by an earlier submission of the same form.
    Replayed,
}

/// Creates a key, once per form; its secret goes to this answer only.
#[post("/dashboard/developers/keys")]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let mut posted = match posted(&req, &state, &body, Action::ManageApiKeys).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    // A new key can act for the merchant: the use case wants a sign-in within the last 5
    // minutes, which the password typed in the form renews.
    if let Err(e) = reauthenticated(&state, &mut posted).await {
        let refusal = Refusal::of(e);
        let q = Pairs::query(&req);
        return page(&state, &posted.place, &q, (refusal.status, None, Some(("create", &refusal, &posted.form)))).await;
    }
    let p = &posted.place;
    let key_type = if posted.form.text("type") == "publishable" { KeyType::Publishable } else { KeyType::Secret };
    let permissions = posted.form.get("permissions").map(str::to_owned);
    let shown: Rc<RefCell<Option<ApiKeySecret>>> = Rc::default();
    let (out, s, scope, current) = (shown.clone(), state.clone(), p.scope.clone(), p.current.clone());
    let work = move |_claim| {
        let work: Work = Box::pin(async move {
            let keys = s.use_cases.api_keys();
            let (key, secret) = keys.create_by(&current, &scope, key_type, permissions.as_deref()).await?;
            *out.borrow_mut() = Some(secret);
            Ok(format!("{PATH}?created={}", key.id))
        });
        work
    };
    let q = Pairs::query(&req);
    match once(&state, (&posted, &req, &body), |_| Some(PATH.to_owned()), work).await {
        Ok(_) => {
            let created = shown.take().map_or(Created::Replayed, Created::Shown);
            page(&state, p, &q, (StatusCode::CREATED, Some(created), None)).await
        }
        Err(refusal) => page(&state, p, &q, (refusal.status, None, Some(("create", &refusal, &posted.form)))).await,
    }
}

/// Revokes a key of the merchant and mode, then the page.
#[post("/dashboard/developers/keys/{id}/revoke")]
pub async fn revoke(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::ManageApiKeys).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let p = &posted.place;
    let id = ApiKeyId::parse(&path).ok_or(Error::NotFound(stablepay_domain::Resource::ApiKey));
    let result = match id {
        Ok(id) => state.use_cases.api_keys().revoke(&p.scope.merchant_id, p.scope.mode, &id).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => crate::page::see_other(&p.url(PATH, &[])),
        Err(e) => {
            let refusal = Refusal::of(e);
            page(&state, p, &Pairs::query(&req), (refusal.status, None, Some(("revoke", &refusal, &posted.form)))).await
        }
    }
}
