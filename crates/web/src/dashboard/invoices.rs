//! Invoices in the dashboard: the list (filtered by collection state, paged by the API's
//! cursors), an invoice's page (totals, customer, lines, checkouts, payments, activity) with
//! the actions the member's role allows in its state, and those actions' posts, each through
//! the same use case as the API's route.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::{InvoiceId, PaymentId};
use stablepay_domain::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::input::{CloseAction, RefundInput};
use stablepay_domain::invoice::lifecycle::LifecycleStatus;
use stablepay_domain::invoice::model::InvoiceSearch;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::service::offers::{InvoiceAction, offers};
use stablepay_domain::merchant::model::{POLYGON_CHAIN_ID, WalletAddress};
use stablepay_domain::mode::{Mode, Scope};
use stablepay_domain::money::Decimal6;
use stablepay_domain::use_cases::Context;
use stablepay_domain::{Error, Resource};
use stablepay_http::download::pdf_file;
use stablepay_http::state::AppState;

use super::form::{ActionPost, Failed, Posted, Refusal, Work, alert, form, input_in, once, posted};
use super::frame::{
    Filter, FilterKind, Pairs, Place, filter_form, in_this_mode, next_link, place, refused, refused_api, render,
};
use crate::page::{day, money, plain, see_other, when};

const LIST: &str = "/dashboard/invoices";

/// The filters of the invoice list as the URL has them: the domain's search, or the field of a
/// value that does not parse.
fn search_of(q: &Pairs) -> Result<InvoiceSearch, Error> {
    let day = |name: &str| -> Result<Option<chrono::DateTime<chrono::Utc>>, Error> {
        q.get(name)
            .map(|d| {
                chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
                    .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
                    .map_err(|_| Error::validation(name, "must be a date (YYYY-MM-DD)"))
            })
            .transpose()
    };
    Ok(InvoiceSearch {
        state: q.get("state").and_then(CollectionState::parse),
        status: q.get("status").and_then(LifecycleStatus::parse),
        text: q.get("q").map(str::to_owned),
        created_from: day("from")?,
        // "To" is a day included: the list holds what was created before the next day.
        created_before: day("to")?.map(|d| d + chrono::Duration::days(1)),
    })
}

/// The invoice list: newest first, filtered by collection state, status, a number or customer
/// search and creation dates (all kept in the URL), paged by the API's cursors.
#[get("/dashboard/invoices")]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let request = q.page();
    let listed = match search_of(&q) {
        Ok(search) => state.use_cases.invoices().search(&p.scope, search, &request).await,
        Err(e) => Err(e),
    };
    let listed = match listed {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|a| a.invoice.id.as_str())).flatten();
    let filters = [
        Filter {
            name: "state",
            label: "Collection state",
            kind: FilterKind::Select(CollectionState::ALL.iter().map(|s| s.as_str()).collect()),
            selected: q.get("state"),
        },
        Filter {
            name: "status",
            label: "Status",
            kind: FilterKind::Select(LifecycleStatus::ALL.iter().map(|s| s.as_str()).collect()),
            selected: q.get("status"),
        },
        Filter { name: "q", label: "Number or customer", kind: FilterKind::Text, selected: q.get("q") },
        Filter { name: "from", label: "Created from", kind: FilterKind::Date, selected: q.get("from") },
        Filter { name: "to", label: "Created to", kind: FilterKind::Date, selected: q.get("to") },
    ];
    let keep: Vec<(&str, Option<&str>)> =
        ["state", "status", "q", "from", "to", "limit"].iter().map(|k| (*k, q.get(k))).collect();
    let main = html! {
        h1 { "Invoices" }
        @if p.can(Action::ManageInvoices) {
            p { a.button.primary href=(p.url("/dashboard/invoices/new", &[])) { "New invoice" } }
        }
        (filter_form(&p, LIST, &filters))
        @if listed.items.is_empty() {
            p { "No invoices here yet." }
        } @else {
            (invoice_table(&p, &listed.items))
        }
        (next_link(&p, LIST, last, &keep))
    };
    render(&p, (LIST, "Invoices"), StatusCode::OK, main)
}

fn invoice_table(p: &Place, items: &[InvoiceAggregate]) -> Markup {
    html! {
        div.table-wrap tabindex="0" role="region" aria-label="Invoices" { table.invoices.cards {
            thead { tr { th { "Number" } th { "Customer" } th.num { "Total" } th { "State" } th { "Status" } th { "Created" } } }
            tbody {
                @for agg in items {
                    @let inv = &agg.invoice;
                    tr {
                        td data-label="Number" { a href=(p.url(&format!("{LIST}/{}", inv.id), &[])) { (inv.number.as_deref().unwrap_or("draft")) } }
                        td data-label="Customer" { (inv.fields.content.customer_email().unwrap_or("")) }
                        td.num data-label="Total" { (money(&inv.totals.total)) " " (inv.fields.currency.symbol()) }
                        td data-label="State" { span.badge data-state=(inv.collection_state.as_str()) { (inv.collection_state.as_str()) } }
                        td data-label="Status" { (inv.status.as_str()) }
                        td data-label="Created" { (day(inv.created_at)) }
                    }
                }
            }
        } }
    }
}

/// Loads an invoice of the place (another merchant's, or the other mode's, is not found).
pub async fn load(state: &AppState, p: &Place, id: &str) -> Result<InvoiceAggregate, Error> {
    let id = InvoiceId::parse(id).ok_or(Error::NotFound(Resource::Invoice))?;
    in_this_mode(state.use_cases.invoices().get(&p.scope, &InvoiceKey::Id(id)).await, Resource::Invoice)
}

/// One invoice: its totals, customer, lines, checkout sessions, payments (live transaction
/// hashes linked to the explorer), activity, and the actions allowed here.
#[get("/dashboard/invoices/{id}")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    match load(&state, &p, &path).await {
        Ok(agg) => detail(&state, &p, &agg, (StatusCode::OK, Pairs::query(&req).get("done"), None)),
        Err(e) => refused(e),
    }
}

/// The invoice's PDF (an issued invoice; a draft's is refused as the API refuses it).
#[get("/dashboard/invoices/{id}/pdf")]
pub async fn pdf(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let Some(id) = InvoiceId::parse(&path) else { return refused(Error::NotFound(Resource::Invoice)) };
    let document = state.use_cases.invoice_document(&p.merchant, &p.scope, &InvoiceKey::Id(id)).await;
    match in_this_mode(document, Resource::Invoice) {
        Ok(document) => pdf_file(state.clone(), document).await.unwrap_or_else(|e| refused_api(&e)),
        Err(e) => refused(e),
    }
}

/// What a finished action says on the invoice's page.
fn done_message(done: &str) -> Option<&'static str> {
    Some(match done {
        "created" => "The draft is saved.",
        "saved" => "The draft is updated.",
        "issued" => "The invoice is issued: its number is taken and it can be paid.",
        "sent" => "The invoice is queued to the customer's email.",
        "reminded" => "A reminder is queued to the customer's email.",
        "checkout" => "A checkout for what is due is open (see Checkout sessions).",
        "voided" | "void-remaining" | "uncollectible" => "The invoice's collection is closed.",
        "refund" => "The refund reference is recorded.",
        "duplicated" => "This draft is a copy of the invoice.",
        _ => return None,
    })
}

/// The invoice's page; `failed` is an action refused with what was typed.
pub fn detail(
    state: &AppState,
    p: &Place,
    agg: &InvoiceAggregate,
    (status, done, failed): (StatusCode, Option<&str>, Failed),
) -> HttpResponse {
    let title = agg.invoice.number.clone().unwrap_or_else(|| "Draft invoice".to_owned());
    let explorer = (p.scope.mode == Mode::Live).then(|| state.use_cases.pages());
    let main = html! {
        p { a href=(p.url(LIST, &[])) { "All invoices" } }
        h1 { (title) " " span.badge data-state=(agg.invoice.collection_state.as_str()) { (agg.invoice.collection_state.as_str()) } }
        @if let Some(message) = done.and_then(done_message) { p.state.ok role="status" { (message) } }
        (summary(agg))
        (actions(state, p, agg, failed))
        (lines(agg))
        (sessions(state, p, agg))
        (payments(agg, explorer))
        (activity(agg))
    };
    render(p, (LIST, &title), status, main)
}

fn summary(agg: &InvoiceAggregate) -> Markup {
    let inv = &agg.invoice;
    let currency = inv.fields.currency.symbol();
    let t = &inv.totals;
    html! {
        dl.facts {
            dt { "Status" } dd { (inv.status.as_str()) }
            dt { "Subtotal" } dd { (money(&t.subtotal)) " " (currency) }
            dt { "Discount" } dd { (money(&t.discount)) " " (currency) }
            dt { "Tax" } dd { (money(&t.tax)) " " (currency) }
            dt { "Total" } dd { strong { (money(&t.total)) " " (currency) } }
            dt { "Paid" } dd { (money(&inv.customer_amount_paid)) " " (currency) }
            dt { "Remaining" } dd { (money(&inv.remaining())) " " (currency) }
            dt { "Customer" } dd { (inv.fields.content.customer_email().unwrap_or("none")) }
            @if let Some(due) = inv.fields.content.due_at { dt { "Due" } dd { (day(due)) } }
            @if let Some(reason) = &inv.close_reason { dt { "Closed because" } dd { (reason) } }
            dt { "Created" } dd { (when(inv.created_at)) }
        }
    }
}

/// The actions the member may take on the invoice in its state.
fn actions(state: &AppState, p: &Place, agg: &InvoiceAggregate, failed: Failed) -> Markup {
    let inv = &agg.invoice;
    let url = |action: &str| p.url(&format!("{LIST}/{}/{action}", inv.id), &[]);
    let typed = |action: &str| failed.filter(|(a, _, _)| *a == action);
    let refusal = |action: &str| -> Option<&Refusal> { typed(action).map(|(_, r, _)| r) };
    let value = |action: &str, field: &str| typed(action).map(|(_, _, f)| f.text(field).to_owned()).unwrap_or_default();
    let draft = inv.collection_state == CollectionState::Draft;
    // What the domain says this member may do with this invoice now: the buttons shown are the
    // forms accepted.
    let offered = offers(&p.current, &p.scope, agg);
    let may = |a: InvoiceAction| offered.contains(&a);
    let version = inv.version.to_string();
    let button = |action: &str, label: &str, fields: Markup| {
        form(p, state, &url(action), html! { (alert(refusal(action), &[])) (fields) button type="submit" { (label) } })
    };
    let reason = |action: &str, label: &str| {
        let fields = html! {
            (alert(refusal(action), &["reason"]))
            (input_in(action, "reason", "Reason", ("text", &value(action, "reason")), refusal(action)))
            button type="submit" { (label) }
        };
        form(p, state, &url(action), fields)
    };
    let credited: Vec<_> = agg.payments.iter().filter(|x| !x.customer_amount_credited.is_zero()).collect();
    html! {
        h2 { "Actions" }
        div.actions {
            @if may(InvoiceAction::Edit) {
                p { a.button href=(p.url(&format!("{LIST}/{}/edit", inv.id), &[])) { "Edit the draft" } }
            }
            @if may(InvoiceAction::Issue) {
                (button("issue", "Issue", html! { input type="hidden" name="version" value=(version); }))
            }
            @if may(InvoiceAction::IssueAndSend) {
                (button("issue-send", "Issue and send", html! { input type="hidden" name="version" value=(version); }))
            }
            @if !draft {
                p { a.button href=(p.url(&format!("{LIST}/{}/pdf", inv.id), &[])) { "Download the PDF" } }
            }
            @if may(InvoiceAction::Send) { (button("send", "Send to the customer", html! {})) }
            @if may(InvoiceAction::Remind) { (button("remind", "Send a reminder", html! {})) }
            @if may(InvoiceAction::OpenCheckout) { (button("checkout", "Open a checkout", html! {})) }
            @if may(InvoiceAction::Void) { (reason("void", "Void")) }
            @if may(InvoiceAction::VoidRemaining) { (reason("void-remaining", "Void the remainder")) }
            @if may(InvoiceAction::MarkUncollectible) { (reason("mark-uncollectible", "Mark uncollectible")) }
            @if may(InvoiceAction::RecordRefund) {
                (form(p, state, &url("refund"), html! {
                    (alert(refusal("refund"), &["paymentId", "amount", "reason", "externalTransactionHash"]))
                    div.field {
                        label for="refund-paymentId" { "Payment refunded" }
                        select #refund-paymentId name="paymentId" {
                            @for pay in &credited {
                                option value=(pay.id.as_str()) selected[value("refund", "paymentId") == pay.id.as_str()] {
                                    (pay.id.as_str()) " · " (money(&pay.customer_amount_credited))
                                }
                            }
                        }
                    }
                    (input_in("refund", "amount", "Amount refunded", ("text", &value("refund", "amount")), refusal("refund")))
                    (input_in("refund", "reason", "Reason", ("text", &value("refund", "reason")), refusal("refund")))
                    (input_in("refund", "externalTransactionHash", "Refund transaction hash", ("text", &value("refund", "externalTransactionHash")), refusal("refund")))
                    button type="submit" { "Add a refund reference" }
                }))
            }
            @if may(InvoiceAction::Duplicate) { (button("duplicate", "Duplicate", html! {})) }
        }
    }
}

fn lines(agg: &InvoiceAggregate) -> Markup {
    let c = &agg.invoice.fields.content;
    html! {
        @if !c.lines.is_empty() {
            h2 { "Lines" }
            div.table-wrap tabindex="0" role="region" aria-label="Lines" { table.lines {
                thead { tr { th { "Description" } th.num { "Quantity" } th.num { "Unit amount" } th.num { "Amount" } } }
                tbody {
                    @for l in &c.lines {
                        tr { td { (l.description) } td.num { (plain(&l.quantity)) } td.num { (money(&l.unit_amount)) } td.num { (money(&l.amount())) } }
                    }
                }
            } }
        }
        @if !c.taxes.is_empty() {
            h2 { "Taxes" }
            ul { @for t in &c.taxes { li { (t.label) " · " (money(&t.amount)) } } }
        }
        @if let Some(memo) = &c.memo { h2 { "Memo" } p.pre { (memo) } }
    }
}

fn sessions(state: &AppState, p: &Place, agg: &InvoiceAggregate) -> Markup {
    let pages = state.use_cases.pages();
    html! {
        h2 { "Checkout sessions" }
        @if agg.sessions.is_empty() { p { "None yet." } }
        ul {
            @for s in &agg.sessions {
                li {
                    a href=(p.url(&format!("/dashboard/checkout-sessions/{}", s.id), &[])) { code { (s.id.as_str()) } }
                    " · " (s.status.as_str()) " · " (money(&s.amount_due)) " · " (when(s.created_at)) " · "
                    a href=(pages.checkout(&s.id)) { "hosted page" }
                }
            }
        }
    }
}

fn payments(agg: &InvoiceAggregate, explorer: Option<&stablepay_domain::url::PublicPages>) -> Markup {
    html! {
        h2 { "Payments" }
        @if agg.payments.is_empty() { p { "None yet." } }
        ul {
            @for pay in &agg.payments {
                li {
                    (pay.status.as_str()) " · " (money(&pay.amount_received)) " · "
                    @match explorer {
                        Some(pages) => a.hash href=(pages.transaction(pay.transaction_hash.as_str())) rel="noreferrer" { (pay.transaction_hash.as_str()) },
                        None => code.hash { (pay.transaction_hash.as_str()) },
                    }
                }
            }
        }
        @if !agg.invoice.refunds.is_empty() {
            h2 { "Refund references" }
            ul { @for r in agg.invoice.refunds.iter().map(|r| &r.refund) { li { (money(&r.amount)) " · " (r.reason) " · " code.hash { (r.external_transaction_hash.as_str()) } } } }
        }
    }
}

fn activity(agg: &InvoiceAggregate) -> Markup {
    html! {
        h2 { "Activity" }
        ol.activity {
            @for a in &agg.invoice.activity {
                li { (when(a.at)) " · " (a.action.as_str().replace('_', " ")) " · by " (a.by.as_deref().unwrap_or(a.actor.as_str())) @if let Some(d) = &a.detail { " · " (d) } }
            }
        }
    }
}

/// The page of invoice `id` in `scope`, saying what was `done`.
fn invoice_page(scope: &Scope, id: &str, done: &str) -> String {
    let pairs = [("merchant", scope.merchant_id.as_str()), ("mode", scope.mode.as_str()), ("done", done)];
    format!("{LIST}/{id}?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

/// An action of the invoice's page (its form posts here), run once per form; then the invoice's
/// page (a duplicate: the new draft's), or the page again with the refusal beside its field.
#[post("/dashboard/invoices/{id}/{action}")]
pub async fn act(post: ActionPost) -> HttpResponse {
    let ActionPost { req, state, id, action: name, body } = post;
    // Editing is a page of its own (`draft.rs`), not a form of this one.
    let Some(action) = InvoiceAction::parse(&name).filter(|a| *a != InvoiceAction::Edit) else {
        return refused(Error::NotFound(Resource::Invoice));
    };
    let posted = match posted(&req, &state, &body, action.needs()).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let agg = match load(&state, &posted.place, &id).await {
        Ok(a) => a,
        Err(e) => return refused(e),
    };
    let scope = posted.place.scope.clone();
    let rebuild = move |c: &Committed| c.invoice.as_deref().map(|i| invoice_page(&scope, i, "done"));
    let work = run(state.clone(), &posted, &agg, action);
    match once(&state, (&posted, &req, &body), rebuild, work).await {
        Ok(location) => see_other(&location),
        Err(refusal) => {
            // The invoice as it stands now, with what was typed and why it was refused.
            let agg = load(&state, &posted.place, &id).await.unwrap_or(agg);
            detail(&state, &posted.place, &agg, (refusal.status, None, Some((&name, &refusal, &posted.form))))
        }
    }
}

/// The work of `action`: its use case, then the page to show.
fn run(
    state: web::Data<AppState>,
    posted: &Posted,
    agg: &InvoiceAggregate,
    action: InvoiceAction,
) -> impl FnOnce(Option<IdempotencyClaim>) -> Work + 'static {
    let (scope, merchant, form) = (posted.place.scope.clone(), posted.place.merchant.clone(), posted.form.clone());
    let acting = posted.acting();
    let id = agg.invoice.id.clone();
    // The token each payment moved: a refund of it moves the same token.
    let tokens: Vec<(PaymentId, WalletAddress)> =
        agg.payments.iter().map(|x| (x.id.clone(), x.token_contract.clone())).collect();
    move |claim| {
        let work: Work = Box::pin(async move {
            let cases = state.use_cases.within(Context::new(state.use_cases.clock()).claimed(claim).acting(acting));
            let (invoices, emails) = (cases.invoices(), cases.emails());
            let key = InvoiceKey::Id(id.clone());
            let version = form.get("version").and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            let reason = form.text("reason");
            let done = match action {
                InvoiceAction::Issue => {
                    invoices.issue(&merchant, &scope, &key, (version, false)).await.map(|_| "issued")?
                }
                InvoiceAction::IssueAndSend => {
                    invoices.issue(&merchant, &scope, &key, (version, true)).await.map(|_| "sent")?
                }
                InvoiceAction::Send => emails.send(&scope, &key).await.map(|_| "sent")?,
                InvoiceAction::Remind => emails.remind(&scope, &key).await.map(|_| "reminded")?,
                InvoiceAction::OpenCheckout => invoices.open_checkout(&scope, &key).await.map(|_| "checkout")?,
                InvoiceAction::Void => {
                    invoices.close(&scope, &key, CloseAction::Void, reason).await.map(|_| "voided")?
                }
                InvoiceAction::VoidRemaining => {
                    invoices.close(&scope, &key, CloseAction::VoidRemaining, reason).await.map(|_| "void-remaining")?
                }
                InvoiceAction::MarkUncollectible => invoices
                    .close(&scope, &key, CloseAction::MarkUncollectible, reason)
                    .await
                    .map(|_| "uncollectible")?,
                InvoiceAction::RecordRefund => {
                    invoices.record_refund(&scope, &key, refund_input(&form, &tokens)?).await.map(|_| "refund")?
                }
                InvoiceAction::Duplicate => {
                    let copy = invoices.duplicate(&merchant, &scope, &key).await?;
                    return Ok(invoice_page(&scope, copy.invoice.id.as_str(), "duplicated"));
                }
                // Refused before the form is read (`act`).
                InvoiceAction::Edit => return Err(Error::NotFound(Resource::Invoice)),
            };
            Ok(invoice_page(&scope, id.as_str(), done))
        });
        work
    }
}

/// A refund reference as typed: the payment, the amount, the reason and the refund's hash (on
/// Polygon, in the payment's own token). Errors name the field as the API does.
fn refund_input(form: &Pairs, tokens: &[(PaymentId, WalletAddress)]) -> Result<RefundInput, Error> {
    let unknown = || Error::validation("payment_id", "choose one of the invoice's credited payments");
    let payment_id = PaymentId::parse(form.text("paymentId")).ok_or_else(unknown)?;
    let token_contract = tokens.iter().find(|(p, _)| *p == payment_id).map(|(_, t)| t.clone()).ok_or_else(unknown)?;
    let amount = Decimal6::parse_positive(form.text("amount").trim())
        .map_err(|e| Error::invalid_amount("amount", e.to_string()))?;
    let hash = TxHash::parse(form.text("externalTransactionHash").trim())
        .ok_or_else(|| Error::validation("external_transaction_hash", "must be 0x and 64 hexadecimal digits"))?;
    Ok(RefundInput {
        payment_id,
        amount,
        reason: form.text("reason").to_owned(),
        external_transaction_hash: hash,
        chain_id: POLYGON_CHAIN_ID,
        token_contract,
    })
}
