//! Creating and editing an itemized draft in the dashboard: customer, lines, discount, taxes,
//! due date, reminders, memo and footer. The form works without JavaScript: "Update totals"
//! shows the totals the domain computes from what was typed, "Add a line" gives one more row,
//! and "Save the draft" creates it (or replaces the draft at the version the form was opened
//! at). A refusal shows the domain's message next to the field it names, with what was typed.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use chrono::{NaiveDate, TimeZone, Utc};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::invoice::model::{Customer, InvoiceContent, LineItem, TaxLine};
use stablepay_domain::invoice::totals::{Discount, Totals};
use stablepay_domain::invoice::validate::{DraftInput, ReminderInput, build_fields};
use stablepay_domain::money::{Decimal6, Percentage};
use stablepay_domain::use_cases::Context;
use stablepay_http::state::AppState;

use super::form::{Posted, Refusal, Work, alert, form, input, once, posted};
use super::frame::{Pairs, Place, place, refused, render};
use super::invoices::load;
use crate::page::{money, see_other};

const LIST: &str = "/dashboard/invoices";
/// Empty line rows a form offers below the typed ones.
const SPARE_LINES: usize = 1;
/// Tax rows a form offers.
const TAX_ROWS: usize = 2;

/// A draft as typed in the form: every value kept as text, rows without anything dropped.
#[derive(Default)]
struct Typed {
    name: String,
    email: String,
    lines: Vec<[String; 3]>,
    discount_type: String,
    discount: String,
    taxes: Vec<[String; 2]>,
    due: String,
    remind: bool,
    memo: String,
    footer: String,
}

impl Typed {
    fn of(form: &Pairs) -> Self {
        let rows = |prefix: &str, names: &[&str]| -> Vec<Vec<String>> {
            (0..MAX_ROWS)
                .map(|i| names.iter().map(|n| form.text(&format!("{prefix}[{i}].{n}")).trim().to_owned()).collect())
                .filter(|row: &Vec<String>| row.iter().any(|v| !v.is_empty()))
                .collect()
        };
        let line = |r: Vec<String>| [r[0].clone(), r[1].clone(), r[2].clone()];
        Self {
            name: form.text("customer.name").trim().to_owned(),
            email: form.text("customer.email").trim().to_owned(),
            lines: rows("lines", &["description", "quantity", "unitAmount"]).into_iter().map(line).collect(),
            discount_type: form.text("discount.type").to_owned(),
            discount: form.text("discount.value").trim().to_owned(),
            taxes: rows("taxes", &["label", "amount"]).into_iter().map(|r| [r[0].clone(), r[1].clone()]).collect(),
            due: form.text("dueAt").trim().to_owned(),
            remind: form.get("reminders").is_some(),
            memo: form.text("memo").to_owned(),
            footer: form.text("footer").to_owned(),
        }
    }

    /// The form of a saved draft.
    fn of_invoice(agg: &InvoiceAggregate) -> Self {
        let c = &agg.invoice.fields.content;
        let customer =
            c.customer.clone().unwrap_or(Customer { name: None, company: None, email: None, billing_address: None });
        let (discount_type, discount) = match &c.discount {
            None => (String::new(), String::new()),
            Some(Discount::Fixed(a)) => ("fixed".into(), a.to_string()),
            Some(Discount::Percentage(p)) => ("percentage".into(), p.value().to_trimmed(0)),
        };
        Self {
            name: customer.name.unwrap_or_default(),
            email: customer.email.unwrap_or_default(),
            lines: c
                .lines
                .iter()
                .map(|l| [l.description.clone(), l.quantity.to_string(), l.unit_amount.to_string()])
                .collect(),
            discount_type,
            discount,
            taxes: c.taxes.iter().map(|t| [t.label.clone(), t.amount.to_string()]).collect(),
            due: c.due_at.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default(),
            remind: agg.invoice.fields.reminder_schedule.as_ref().is_some_and(|r| r.enabled),
            memo: c.memo.clone().unwrap_or_default(),
            footer: c.footer.clone().unwrap_or_default(),
        }
    }

    /// The domain's input; a value that does not parse is refused naming its field.
    fn input(&self) -> Result<DraftInput, Error> {
        let number = |field: String, text: &str, positive: bool| {
            let parsed = if positive { Decimal6::parse_positive(text) } else { Decimal6::parse(text) };
            parsed.map_err(|e| Error::invalid_amount(field, e))
        };
        let mut lines = Vec::new();
        for (i, [description, quantity, unit]) in self.lines.iter().enumerate() {
            lines.push(LineItem {
                id: None,
                sku: None,
                description: description.clone(),
                quantity: number(format!("lines[{i}].quantity"), quantity, true)?,
                unit_amount: number(format!("lines[{i}].unit_amount"), unit, false)?,
            });
        }
        let mut taxes = Vec::new();
        for (i, [label, amount]) in self.taxes.iter().enumerate() {
            let amount = number(format!("taxes[{i}].amount"), amount, false)?;
            taxes.push(TaxLine {
                id: None,
                label: label.clone(),
                amount,
                jurisdiction: None,
                registration_reference: None,
            });
        }
        let content = InvoiceContent {
            lines,
            customer: self.customer(),
            discount: self.discount()?,
            taxes,
            due_at: self.due_at()?,
            memo: Some(self.memo.clone()).filter(|m| !m.trim().is_empty()),
            footer: Some(self.footer.clone()).filter(|m| !m.trim().is_empty()),
            ..InvoiceContent::default()
        };
        let reminder_schedule = self.remind.then(|| ReminderInput { enabled: Some(true), ..ReminderInput::default() });
        Ok(DraftInput { content, reminder_schedule, ..DraftInput::default() })
    }

    fn customer(&self) -> Option<Customer> {
        let opt = |v: &str| Some(v.to_owned()).filter(|v| !v.is_empty());
        (!self.name.is_empty() || !self.email.is_empty()).then(|| Customer {
            name: opt(&self.name),
            company: None,
            email: opt(&self.email),
            billing_address: None,
        })
    }

    fn discount(&self) -> Result<Option<Discount>, Error> {
        match (self.discount_type.as_str(), self.discount.is_empty()) {
            ("", _) | (_, true) => Ok(None),
            ("fixed", false) => Decimal6::parse(&self.discount)
                .map(|a| Some(Discount::Fixed(a)))
                .map_err(|e| Error::invalid_amount("discount.amount", e)),
            ("percentage", false) => Percentage::parse(&self.discount)
                .map(|p| Some(Discount::Percentage(p)))
                .map_err(|e| Error::invalid_amount("discount.percentage", e)),
            _ => Err(Error::validation("discount.type", "must be fixed or percentage")),
        }
    }

    /// The due date: the end of the chosen day, UTC.
    fn due_at(&self) -> Result<Option<chrono::DateTime<Utc>>, Error> {
        if self.due.is_empty() {
            return Ok(None);
        }
        let day = NaiveDate::parse_from_str(&self.due, "%Y-%m-%d")
            .map_err(|_| Error::validation("due_at", "must be a date (YYYY-MM-DD)"))?;
        let end = day.and_hms_opt(23, 59, 59).ok_or_else(|| Error::validation("due_at", "must be a date"))?;
        Ok(Some(Utc.from_utc_datetime(&end)))
    }
}

/// The most rows of lines (and of taxes) a form reads.
pub const MAX_ROWS: usize = 100;

/// What the form shows: the typed draft, the extra empty rows, the totals, the refusal.
struct Shown<'a> {
    typed: &'a Typed,
    spare: usize,
    totals: Option<Totals>,
    refusal: Option<&'a Refusal>,
    /// The version of the draft the form edits.
    version: Option<String>,
}

fn line_rows(s: &Shown) -> Markup {
    let rows = s.typed.lines.len() + s.spare;
    let empty = [String::new(), String::new(), String::new()];
    html! {
        fieldset {
            legend { "Lines" }
            @for i in 0..rows {
                @let row = s.typed.lines.get(i).unwrap_or(&empty);
                div.grid {
                    (input(&format!("lines[{i}].description"), &format!("Line {} description", i + 1), ("text", &row[0]), s.refusal))
                    (input(&format!("lines[{i}].quantity"), &format!("Line {} quantity", i + 1), ("text", &row[1]), s.refusal))
                    (input(&format!("lines[{i}].unitAmount"), &format!("Line {} unit amount", i + 1), ("text", &row[2]), s.refusal))
                }
            }
            button type="submit" name="intent" value="more" { "Add a line" }
        }
    }
}

fn terms(s: &Shown) -> Markup {
    let t = s.typed;
    let empty = [String::new(), String::new()];
    let discount_error = s.refusal.and_then(|r| r.field.as_deref().filter(|f| f.starts_with("discount")).map(|_| r));
    html! {
        fieldset {
            legend { "Discount and taxes" }
            div.grid {
                div.field {
                    label for="discount-type" { "Discount" }
                    select #discount-type name="discount.type" {
                        option value="" selected[t.discount_type.is_empty()] { "None" }
                        option value="percentage" selected[t.discount_type == "percentage"] { "Percentage" }
                        option value="fixed" selected[t.discount_type == "fixed"] { "Fixed amount" }
                    }
                }
                (input("discount.value", "Discount value", ("text", &t.discount), None))
            }
            @if let Some(r) = discount_error { p.error role="alert" { (r.message) } }
            @for i in 0..TAX_ROWS.max(t.taxes.len()) {
                @let row = t.taxes.get(i).unwrap_or(&empty);
                div.grid {
                    (input(&format!("taxes[{i}].label"), &format!("Tax {} label", i + 1), ("text", &row[0]), s.refusal))
                    (input(&format!("taxes[{i}].amount"), &format!("Tax {} amount", i + 1), ("text", &row[1]), s.refusal))
                }
            }
        }
    }
}

fn draft_form(state: &AppState, p: &Place, action: &str, s: &Shown) -> Markup {
    let t = s.typed;
    let named = ["customer.name", "customer.email", "dueAt", "memo", "footer"];
    let shown_here =
        |f: &str| named.contains(&f) || f.starts_with("lines[") || f.starts_with("taxes[") || f.starts_with("discount");
    let other = s.refusal.filter(|r| !r.field.as_deref().is_some_and(shown_here));
    form(
        p,
        state,
        action,
        html! {
            (alert(other, &[]))
            @if let Some(v) = &s.version { input type="hidden" name="version" value=(v); }
            fieldset {
                legend { "Customer" }
                div.grid {
                    (input("customer.name", "Customer name", ("text", &t.name), s.refusal))
                    (input("customer.email", "Customer email", ("email", &t.email), s.refusal))
                }
            }
            (line_rows(s))
            (terms(s))
            fieldset {
                legend { "Terms" }
                (input("dueAt", "Due date", ("date", &t.due), s.refusal))
                div.field { label { input type="checkbox" name="reminders" value="on" checked[t.remind]; " Remind the customer before and after the due date" } }
                div.field { label for="memo" { "Memo" } textarea #memo name="memo" { (t.memo) } }
                div.field { label for="footer" { "Footer" } textarea #footer name="footer" { (t.footer) } }
            }
            (totals(s.totals.as_ref()))
            div.buttons {
                button type="submit" name="intent" value="preview" { "Update totals" }
                button.primary type="submit" name="intent" value="save" { "Save the draft" }
            }
        },
    )
}

fn totals(totals: Option<&Totals>) -> Markup {
    html! {
        section aria-label="Totals" {
            h2 { "Totals" }
            @match totals {
                Some(t) => dl.totals {
                    dt { "Subtotal" } dd { (money(&t.subtotal)) }
                    dt { "Discount" } dd { (money(&t.discount)) }
                    dt { "Tax" } dd { (money(&t.tax)) }
                    dt.total { "Total" } dd.total #total { (money(&t.total)) }
                },
                None => p.small { "Add lines to see the totals." },
            }
        }
    }
}

/// The totals the domain computes from what was typed, when it all holds.
fn computed(p: &Place, typed: &Typed) -> Result<Totals, Error> {
    let token = p.merchant.settlement(p.scope.mode).map(|s| s.token)?;
    build_fields(typed.input()?, token).map(|(_, t)| t)
}

fn form_page(
    state: &AppState,
    p: &Place,
    (action, title): (&str, &str),
    status: StatusCode,
    s: &Shown,
) -> HttpResponse {
    let main = html! {
        p { a href=(p.url(LIST, &[])) { "All invoices" } }
        h1 { (title) }
        (draft_form(state, p, action, s))
    };
    render(p, (LIST, title), status, main)
}

/// The form of a new draft.
#[get("/dashboard/invoices/new")]
pub async fn new(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::ManageInvoices).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let typed = Typed::default();
    let shown = Shown { typed: &typed, spare: 3, totals: None, refusal: None, version: None };
    let action = p.url("/dashboard/invoices/new", &[]);
    form_page(&state, &p, (&action, "New invoice"), StatusCode::OK, &shown)
}

/// The form of a saved draft, at its current version.
#[get("/dashboard/invoices/{id}/edit")]
pub async fn edit(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::ManageInvoices).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let agg = match load(&state, &p, &path).await {
        Ok(a) => a,
        Err(e) => return refused(e),
    };
    let typed = Typed::of_invoice(&agg);
    let version = Some(agg.invoice.version.to_string());
    let shown =
        Shown { typed: &typed, spare: SPARE_LINES, totals: Some(agg.invoice.totals.clone()), refusal: None, version };
    let action = p.url(&format!("{LIST}/{}/edit", agg.invoice.id), &[]);
    form_page(&state, &p, (&action, "Edit the draft"), StatusCode::OK, &shown)
}

/// A new draft's form posted: totals, one more row, or the draft created.
#[post("/dashboard/invoices/new")]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, None).await
}

/// A draft's form posted: totals, one more row, or the draft replaced at the form's version.
#[post("/dashboard/invoices/{id}/edit")]
pub async fn update(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    submit(req, state, body, Some(path.into_inner())).await
}

async fn submit(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes, id: Option<String>) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::ManageInvoices).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let p = &posted.place;
    let typed = Typed::of(&posted.form);
    let title = if id.is_some() { "Edit the draft" } else { "New invoice" };
    let action = format!("{}?{}", req.path(), req.query_string());
    let intent = posted.form.text("intent");
    let version = posted.form.get("version").map(str::to_owned);
    if intent != "save" {
        let (totals, refusal) = match computed(p, &typed) {
            Ok(t) => (Some(t), None),
            Err(_) if typed.lines.is_empty() => (None, None),
            Err(e) => (None, Some(Refusal::of(e))),
        };
        let spare = if intent == "more" { SPARE_LINES + 1 } else { SPARE_LINES };
        let shown = Shown { typed: &typed, spare, totals, refusal: refusal.as_ref(), version: version.clone() };
        return form_page(&state, p, (&action, title), StatusCode::OK, &shown);
    }
    let work = save(state.clone(), &posted, &typed, id);
    let scope = p.scope.clone();
    let rebuild =
        move |c: &stablepay_domain::idempotency::Committed| c.invoice.as_deref().map(|i| page_of(&scope, i, "saved"));
    match once(&state, (&posted, &req, &body), rebuild, work).await {
        Ok(location) => see_other(&location),
        Err(refusal) => {
            let totals = computed(p, &typed).ok();
            let shown = Shown { typed: &typed, spare: SPARE_LINES, totals, refusal: Some(&refusal), version };
            form_page(&state, p, (&action, title), refusal.status, &shown)
        }
    }
}

fn page_of(scope: &stablepay_domain::mode::Scope, id: &str, done: &str) -> String {
    let pairs = [("merchant", scope.merchant_id.as_str()), ("mode", scope.mode.as_str()), ("done", done)];
    format!("{LIST}/{id}?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

/// Creates the draft (or replaces it at the form's version), then its page.
fn save(
    state: web::Data<AppState>,
    posted: &Posted,
    typed: &Typed,
    id: Option<String>,
) -> impl FnOnce(Option<stablepay_domain::idempotency::IdempotencyClaim>) -> Work + 'static {
    let (scope, merchant) = (posted.place.scope.clone(), posted.place.merchant.clone());
    let acting = posted.acting();
    let input = typed.input();
    let version = posted.form.get("version").and_then(|v| v.parse::<i64>().ok());
    move |claim| {
        let work: Work = Box::pin(async move {
            let invoices =
                state.use_cases.within(Context::new(state.use_cases.clock()).claimed(claim).acting(acting)).invoices();
            let input = input?;
            let (saved, done) = match id {
                None => (invoices.create_invoice(&merchant, &scope, input, false, false).await?, "created"),
                Some(id) => {
                    let id = stablepay_domain::ids::InvoiceId::parse(&id)
                        .ok_or(Error::NotFound(stablepay_domain::Resource::Invoice))?;
                    let key = InvoiceKey::Id(id);
                    (invoices.update_draft(&merchant, &scope, &key, version.unwrap_or(0), input).await?, "saved")
                }
            };
            Ok(page_of(&scope, saved.invoice.id.as_str(), done))
        });
        work
    }
}
