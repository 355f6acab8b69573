//! Payment links in the dashboard: the list, filtered by state (as it stands on the merchant's
//! clock) and paged by the API's cursors; creating a link; a link's page (its configuration,
//! its public URL with a QR code, the invoices it created) with editing at its version, pause,
//! resume, archive and duplicate. The same `PaymentLinks` use cases as `/v1/payment-links`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, PreEscaped, html};
use stablepay_domain::account::Action;
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::PaymentLinkId;
use stablepay_domain::money::Decimal6;
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::{AmountRule, AmountType, Collect, Lifecycle, PaymentLink, Usage};
use stablepay_domain::payment_link::ports::LinkFilter;
use stablepay_domain::payment_link::service::PaymentLinks;
use stablepay_domain::payment_link::service::offers::{LinkAction, offers};
use stablepay_domain::payment_link::validate::LinkInput;
use stablepay_domain::{Error, Resource};
use stablepay_http::state::AppState;

use super::form::{ActionPost, Failed, Refusal, Work, alert, form, input, once, posted};
use super::frame::{Filter, FilterKind, Pairs, Place, filter_form, in_this_mode, next_link, place, refused, render};
use crate::page::{day, see_other, when};

const LIST: &str = "/dashboard/payment-links";
const STATES: [LinkState; 5] =
    [LinkState::Active, LinkState::Paused, LinkState::Completed, LinkState::Expired, LinkState::Archived];

/// The payment link list: newest first, filtered by state, each with its public URL.
#[get("/dashboard/payment-links")]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let filter = q.get("state").and_then(LinkState::parse);
    let (links, wanted) = (state.use_cases.links(), LinkFilter { state: filter, ..LinkFilter::default() });
    let (listed, now) = match links.list(&p.scope, &wanted, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|l| l.id.as_str())).flatten();
    let pages = state.use_cases.pages();
    let options = STATES.iter().map(|s| s.as_str()).collect();
    let main = html! {
        h1 { "Payment links" }
        @if p.can(Action::ManagePaymentLinks) {
            p { a.button.primary href=(p.url(&format!("{LIST}/new"), &[])) { "New payment link" } }
        }
        (filter_form(&p, LIST, &[Filter { name: "state", label: "State", kind: FilterKind::Select(options), selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No payment links here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Payment links" { table.links.cards {
                thead { tr { th { "Title" } th { "State" } th { "Token" } th { "Public page" } th { "Created" } } }
                tbody {
                    @for l in &listed.items {
                        @let url = pages.payment_link(&l.public_id);
                        tr {
                            td data-label="Title" { a href=(p.url(&format!("{LIST}/{}", l.id), &[])) { (l.config.title) } }
                            td data-label="State" { (l.state_at(now).as_str()) }
                            td data-label="Token" { (l.config.currency.symbol()) }
                            td data-label="Public page" { a.hash href=(url) { (url) } }
                            td data-label="Created" { (day(l.created_at)) }
                        }
                    }
                }
            } }
        }
        (next_link(&p, LIST, last, &[("state", filter.map(|f| f.as_str()))]))
    };
    render(&p, (LIST, "Payment links"), StatusCode::OK, main)
}

/// A link's form as typed (or as configured).
#[derive(Default)]
struct Typed {
    title: String,
    description: String,
    amount_type: String,
    amount: String,
    minimum: String,
    maximum: String,
    usage: String,
    email: bool,
    name: bool,
}

impl Typed {
    fn of(form: &Pairs) -> Self {
        let t = |n: &str| form.text(n).trim().to_owned();
        Self {
            title: t("title"),
            description: t("description"),
            amount_type: t("amountType"),
            amount: t("amount"),
            minimum: t("minimumAmount"),
            maximum: t("maximumAmount"),
            usage: t("usageType"),
            email: form.get("collectEmail").is_some(),
            name: form.get("collectName").is_some(),
        }
    }

    fn of_link(l: &PaymentLink) -> Self {
        let (amount_type, amount, minimum, maximum) = match &l.config.amount {
            AmountRule::Fixed(a) => ("fixed", a.to_string(), String::new(), String::new()),
            AmountRule::CustomerEntered { minimum, maximum } => (
                "customer_entered",
                String::new(),
                minimum.to_string(),
                maximum.as_ref().map(ToString::to_string).unwrap_or_default(),
            ),
        };
        Self {
            title: l.config.title.clone(),
            description: l.config.description.clone().unwrap_or_default(),
            amount_type: amount_type.into(),
            amount,
            minimum,
            maximum,
            usage: l.config.usage.as_str().into(),
            email: l.config.collect.email,
            name: l.config.collect.name,
        }
    }

    /// The domain's input; a value that does not parse is refused naming its field.
    fn input(&self) -> Result<LinkInput, Error> {
        let money = |field: &str, text: &str| {
            (!text.is_empty()).then(|| Decimal6::parse(text).map_err(|e| Error::invalid_amount(field, e))).transpose()
        };
        Ok(LinkInput {
            title: Some(self.title.clone()),
            description: Some(self.description.clone()).filter(|d| !d.is_empty()),
            amount_type: AmountType::parse(&self.amount_type),
            amount: money("amount", &self.amount)?,
            minimum_amount: money("minimum_amount", &self.minimum)?,
            maximum_amount: money("maximum_amount", &self.maximum)?,
            usage_type: Usage::parse(&self.usage),
            collect: Collect { email: self.email, name: self.name, reference: false },
            ..LinkInput::default()
        })
    }
}

fn link_form(
    state: &AppState,
    p: &Place,
    (action, version): (&str, Option<i64>),
    t: &Typed,
    r: Option<&Refusal>,
) -> Markup {
    let fields = ["title", "description", "amountType", "amount", "minimumAmount", "maximumAmount", "usageType"];
    form(
        p,
        state,
        action,
        html! {
            (alert(r, &fields))
            @if let Some(v) = version { input type="hidden" name="version" value=(v); }
            (input("title", "Title", ("text", &t.title), r))
            div.field { label for="description" { "Description" } textarea #description name="description" { (t.description) } }
            div.grid {
                div.field {
                    label for="amountType" { "Amount" }
                    select #amountType name="amountType" {
                        option value="fixed" selected[t.amount_type != "customer_entered"] { "A fixed amount" }
                        option value="customer_entered" selected[t.amount_type == "customer_entered"] { "The customer enters it" }
                    }
                }
                (input("amount", "Fixed amount", ("text", &t.amount), r))
                (input("minimumAmount", "Lowest amount (customer entered)", ("text", &t.minimum), r))
                (input("maximumAmount", "Highest amount (optional)", ("text", &t.maximum), r))
                div.field {
                    label for="usageType" { "Use" }
                    select #usageType name="usageType" {
                        option value="reusable" selected[t.usage != "single_use"] { "Reusable" }
                        option value="single_use" selected[t.usage == "single_use"] { "Paid once" }
                    }
                }
            }
            div.field { label { input type="checkbox" name="collectEmail" value="on" checked[t.email]; " Ask for the customer's email" } }
            div.field { label { input type="checkbox" name="collectName" value="on" checked[t.name]; " Ask for the customer's name" } }
            button.primary type="submit" { "Save the link" }
        },
    )
}

/// The form of a new link.
#[get("/dashboard/payment-links/new")]
pub async fn new(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::ManagePaymentLinks).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let t = Typed { email: true, ..Typed::default() };
    let main = html! { h1 { "New payment link" } (link_form(&state, &p, (&p.url(&format!("{LIST}/new"), &[]), None), &t, None)) };
    render(&p, (LIST, "New payment link"), StatusCode::OK, main)
}

async fn load(state: &AppState, p: &Place, id: &str) -> Result<(PaymentLink, chrono::DateTime<chrono::Utc>), Error> {
    let id = PaymentLinkId::parse(id).ok_or(Error::NotFound(Resource::PaymentLink))?;
    in_this_mode(state.use_cases.links().get(&p.scope, &id).await, Resource::PaymentLink)
}

/// A link's page: its state, public URL and QR code, configuration (editable at its version),
/// the lifecycle actions, and the invoices it created.
#[get("/dashboard/payment-links/{id}")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    detail(&state, &p, &path, (StatusCode::OK, Pairs::query(&req).get("done"), None)).await
}

async fn detail(
    state: &AppState,
    p: &Place,
    id: &str,
    (status, done, failed): (StatusCode, Option<&str>, Failed<'_>),
) -> HttpResponse {
    let (link, now) = match load(state, p, id).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let created = match state.use_cases.links().invoices(&p.scope, &link.id, &Pairs::query_empty().page()).await {
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    let url = state.use_cases.pages().payment_link(&link.public_id);
    let qr = stablepay_http::qr::svg(&url).unwrap_or_default();
    let at = |tail: &str| p.url(&format!("{LIST}/{}/{tail}", link.id), &[]);
    let typed = failed.filter(|f| f.0 == "edit").map_or_else(|| Typed::of_link(&link), |f| Typed::of(f.2));
    // What the domain says this member may do with this link now: the buttons shown are the
    // forms accepted.
    let offered = offers(&p.current, &p.scope, &link, now);
    let buttons = [
        (LinkAction::Pause, "Pause"),
        (LinkAction::Resume, "Resume"),
        (LinkAction::Archive, "Archive"),
        (LinkAction::Duplicate, "Duplicate"),
    ];
    let main = html! {
        p { a href=(p.url(LIST, &[])) { "All payment links" } }
        h1 { (link.config.title) " " span.badge { (link.state_at(now).as_str()) } }
        @if let Some(d) = done { p.state.ok role="status" { "The link is " (d) "." } }
        (alert(failed.filter(|f| f.0 != "edit").map(|f| f.1), &[]))
        p { "Public page: " a.hash href=(url) { (url) } }
        figure.qr role="img" aria-label="QR code of the public page" { (PreEscaped(qr)) }
        div.actions {
            @for (action, label) in buttons {
                @if offered.contains(&action) {
                    (form(p, state, &at(action.as_str()), html! { button type="submit" { (label) } }))
                }
            }
        }
        @if offered.contains(&LinkAction::Edit) {
            h2 { "Edit (version " (link.version) ")" }
            (link_form(state, p, (&at("edit"), Some(link.version)), &typed, failed.filter(|f| f.0 == "edit").map(|f| f.1)))
        }
        h2 { "Invoices it created" }
        @if created.items.is_empty() { p { "None yet." } }
        ul { @for i in &created.items { li { a href=(p.url(&format!("/dashboard/invoices/{}", i.invoice_id), &[])) { code { (i.invoice_id.as_str()) } } " · " (when(i.created_at)) } } }
    };
    render(p, (LIST, &link.config.title), status, main)
}

/// The page of link `id` after `done`.
fn link_page(p: &Place, id: &str, done: &str) -> String {
    p.url(&format!("{LIST}/{id}"), &[("done", done)])
}

/// Creates a link (once per form), then its page.
#[post("/dashboard/payment-links/new")]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::ManagePaymentLinks).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let p = posted.place.clone();
    let typed = Typed::of(&posted.form);
    let (input, s, again) = (typed.input(), state.clone(), p.clone());
    let work = move |claim: Option<IdempotencyClaim>| {
        let work: Work = Box::pin(async move {
            let links = PaymentLinks { claim, ..s.use_cases.links() };
            let link = links.create(&p.merchant, &p.scope, input?).await?;
            Ok(link_page(&p, link.id.as_str(), "created"))
        });
        work
    };
    let rebuild = move |c: &Committed| c.link.as_deref().map(|l| link_page(&again, l, "created"));
    match once(&state, (&posted, &req, &body), rebuild, work).await {
        Ok(location) => see_other(&location),
        Err(r) => {
            let p = &posted.place;
            let main = html! { h1 { "New payment link" } (link_form(&state, p, (&p.url(&format!("{LIST}/new"), &[]), None), &typed, Some(&r))) };
            render(p, (LIST, "New payment link"), r.status, main)
        }
    }
}

/// Edits a link at its version, or pauses, resumes, archives or duplicates it (once per form).
#[post("/dashboard/payment-links/{id}/{action}")]
pub async fn act(post: ActionPost) -> HttpResponse {
    let ActionPost { req, state, id, action: name, body } = post;
    let Some(action) = LinkAction::parse(&name) else { return refused(Error::NotFound(Resource::PaymentLink)) };
    let posted = match posted(&req, &state, &body, action.needs()).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let Some(link_id) = PaymentLinkId::parse(&id) else { return refused(Error::NotFound(Resource::PaymentLink)) };
    let p = posted.place.clone();
    let (s, again) = (state.clone(), p.clone());
    let (input, version) = (Typed::of(&posted.form).input(), posted.form.get("version").and_then(|v| v.parse().ok()));
    let work = move |claim: Option<IdempotencyClaim>| {
        let work: Work = Box::pin(async move {
            let links = PaymentLinks { claim, ..s.use_cases.links() };
            let (scope, target) = (&p.scope, &link_id);
            let done = match action {
                LinkAction::Pause => links.set_lifecycle(scope, target, Lifecycle::Paused).await.map(|_| "paused")?,
                LinkAction::Resume => links.set_lifecycle(scope, target, Lifecycle::Active).await.map(|_| "resumed")?,
                LinkAction::Archive => {
                    links.set_lifecycle(scope, target, Lifecycle::Archived).await.map(|_| "archived")?
                }
                LinkAction::Edit => {
                    links.update(&p.merchant, scope, target, version.unwrap_or(0), input?).await.map(|_| "updated")?
                }
                LinkAction::Duplicate => {
                    let copy = links.duplicate(&p.merchant, scope, target).await?;
                    return Ok(link_page(&p, copy.id.as_str(), "a copy"));
                }
            };
            Ok(link_page(&p, target.as_str(), done))
        });
        work
    };
    let rebuild = move |c: &Committed| c.link.as_deref().map(|l| link_page(&again, l, "changed"));
    match once(&state, (&posted, &req, &body), rebuild, work).await {
        Ok(location) => see_other(&location),
        Err(r) => detail(&state, &posted.place, &id, (r.status, None, Some((&name, &r, &posted.form)))).await,
    }
}
