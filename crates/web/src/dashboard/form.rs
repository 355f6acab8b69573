//! The dashboard's forms: each carries the session's CSRF token and a key made when the form
//! was rendered, and runs its use case at most once per key (a double click, a resent form or
//! the back button then "submit" again replays the first result). A refusal comes back as the
//! field it names and the domain's message, for the page to show next to that field with what
//! was typed.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use futures_util::future::LocalBoxFuture;
use maud::{Markup, html};
use serde_json::{Value, json};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::idempotency::{
    Committed, IdempotencyClaim, IdempotencyNamespace, KeyedRequest, Requester, well_formed,
};
use stablepay_domain::ids::PublicToken;
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::idempotency::{Outcome, fingerprint, keyed};
use stablepay_http::respond::to_data;
use stablepay_http::session::{CSRF_FIELD, check_csrf};
use stablepay_http::state::AppState;

use super::frame::{Pairs, Place, place, refused};

/// The work of a form: the page to go to, or why not.
pub type Work = Pin<Box<dyn Future<Output = Result<String, Error>>>>;

/// A form of a page that was refused: its action, why, and what was typed.
pub type Failed<'a> = Option<(&'a str, &'a Refusal, &'a Pairs)>;

/// The hidden field of a form's key.
pub const KEY_FIELD: &str = "formKey";

/// A form that posts to `action` (a URL of [`Place::url`]): its CSRF token and a fresh key,
/// then `fields`.
pub fn form(p: &Place, state: &AppState, action: &str, fields: Markup) -> Markup {
    let key = PublicToken::generate(state.use_cases.crypto());
    html! {
        form method="post" action=(action) {
            input type="hidden" name=(CSRF_FIELD) value=(p.current.session.csrf_token);
            input type="hidden" name=(KEY_FIELD) value=(key.as_str());
            (fields)
        }
    }
}

/// A form posted to a record's `/{id}/{action}` (a button of the record's page): the request,
/// the service, the record's id and the action's name as the path has them, and the body.
pub struct ActionPost {
    /// The request.
    pub req: HttpRequest,
    /// The service.
    pub state: web::Data<AppState>,
    /// The record's id, as posted.
    pub id: String,
    /// The action's name, as posted.
    pub action: String,
    /// The form's body.
    pub body: web::Bytes,
}

impl FromRequest for ActionPost {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let (req, body) = (req.clone(), web::Bytes::from_request(req, payload));
        Box::pin(async move {
            let body = body.await?;
            let state = web::Data::<AppState>::extract(&req).await?;
            let (id, action) = web::Path::<(String, String)>::extract(&req).await?.into_inner();
            Ok(Self { req, state, id, action, body })
        })
    }
}

/// A posted dashboard form: where (allowed its action), and what was typed.
pub struct Posted {
    /// The member, merchant and mode.
    pub place: Place,
    /// The fields.
    pub form: Pairs,
}

/// Reads a post: the session, the place of its URL allowed `action`, and the CSRF token of the
/// form (from this service's own origin). Refused: the page that says why.
pub async fn posted(req: &HttpRequest, state: &AppState, body: &[u8], action: Action) -> Result<Posted, HttpResponse> {
    let place = place(req, state, action).await.map_err(refused)?;
    let form = Pairs::form(body);
    check_csrf(req, &place.current, state.use_cases.pages(), Some(form.text(CSRF_FIELD))).map_err(refused)?;
    Ok(Posted { place, form })
}

impl Posted {
    /// The member acting through this form, as the invoice activity names them.
    pub fn acting(&self) -> stablepay_domain::invoice::model::Acting {
        stablepay_domain::invoice::model::Acting::Member(self.place.current.user.email.clone())
    }
}

/// Why a form was refused: the answer's status, the field it names, and the message.
#[derive(Debug)]
pub struct Refusal {
    /// The status of the page that shows it.
    pub status: StatusCode,
    /// The field (as the API names it: `lines[0].unitAmount`), if any.
    pub field: Option<String>,
    /// The domain's message, in a sentence.
    pub message: String,
    /// The error code (as the API answers it).
    pub code: String,
}

impl Refusal {
    /// The refusal of `e`.
    pub fn of(e: Error) -> Self {
        Self::from_api(&ApiError::from(e))
    }

    /// The refusal of an answer's error.
    pub fn from_api(e: &ApiError) -> Self {
        let field = e.details().and_then(|d| d["field"].as_str()).map(str::to_owned);
        Self { status: e.code.status(), field, message: sentence(&e.message), code: e.code.as_str().to_owned() }
    }

    /// The message for `field`, when it names it.
    pub fn on(&self, field: &str) -> Option<&str> {
        (self.field.as_deref() == Some(field)).then_some(self.message.as_str())
    }
}

/// A message as a sentence: capitalised, one full stop.
fn sentence(m: &str) -> String {
    let m = m.trim_end_matches('.');
    let mut chars = m.chars();
    chars.next().map(|c| format!("{}{}.", c.to_uppercase(), chars.as_str())).unwrap_or_default()
}

/// Runs `run` at most once per form key of this member (in the merchant's mode); answers the
/// page to go to (the first run's, replayed for the same key). `rebuild` answers it from what
/// a run committed before a crash.
pub async fn once<F, Fut, R>(
    state: &web::Data<AppState>,
    (posted, req, body): (&Posted, &HttpRequest, &[u8]),
    rebuild: R,
    run: F,
) -> Result<String, Refusal>
where
    F: FnOnce(Option<IdempotencyClaim>) -> Fut + 'static,
    Fut: Future<Output = Result<String, Error>> + 'static,
    R: FnOnce(&Committed) -> Option<String> + 'static,
{
    let key = posted.form.text(KEY_FIELD);
    if !well_formed(key) {
        return Err(Refusal::from_api(&ApiError::field(
            ErrorCode::INVALID_IDEMPOTENCY_KEY,
            KEY_FIELD,
            "this form is incomplete: open the page again",
        )));
    }
    let scope = posted.place.scope.clone();
    let namespace = IdempotencyNamespace { scope, requester: Requester::Dashboard };
    let key = format!("{}|{key}", posted.place.current.user.id);
    let work = move |claim| async move { located(run(claim).await) };
    let again = move |committed: Committed| async move {
        located(rebuild(&committed).ok_or(Error::Internal("the committed form left nothing to show".into())))
    };
    let request = KeyedRequest { namespace, key, fingerprint: fingerprint(state, req, body) };
    let answer = keyed(state.clone(), request, (work, again)).await;
    let status = answer.status();
    let bytes = actix_web::body::to_bytes(answer.into_body()).await.unwrap_or_default();
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if status.is_success() {
        return json["data"]["location"].as_str().map(str::to_owned).ok_or_else(|| Refusal::of(internal()));
    }
    let e = &json["error"];
    Err(Refusal {
        status,
        field: e["details"]["field"].as_str().map(str::to_owned),
        message: sentence(e["message"].as_str().unwrap_or("Something went wrong; try again")),
        code: e["code"].as_str().unwrap_or_default().to_owned(),
    })
}

fn internal() -> Error {
    Error::Internal("a form's answer could not be read".into())
}

/// The recorded answer of a form: where to go next.
fn located(result: Result<String, Error>) -> Outcome {
    let location = result?;
    Ok((StatusCode::OK, to_data(&json!({ "location": location }))?))
}

/// A labelled input named `name` with its value and, when the refusal names it, its error.
pub fn input(name: &str, label: &str, typed: (&str, &str), refusal: Option<&Refusal>) -> Markup {
    input_in("", name, label, typed, refusal)
}

/// [`input`] in the form `form` of a page with several forms (its id is unique on the page).
pub fn input_in(form: &str, name: &str, label: &str, (kind, value): (&str, &str), refusal: Option<&Refusal>) -> Markup {
    let error = refusal.and_then(|r| r.on(name));
    let id = format!("{form}{}{}", if form.is_empty() { "" } else { "-" }, name.replace(['[', ']', '.'], "-"));
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) name=(name) type=(kind) value=(value) aria-invalid=[error.map(|_| "true")]
                aria-describedby=[error.map(|_| format!("{id}-error"))];
            @if let Some(e) = error { p.error id=(format!("{id}-error")) { (e) } }
        }
    }
}

/// A refusal that names no field of the form: an alert above it.
pub fn alert(refusal: Option<&Refusal>, fields: &[&str]) -> Markup {
    html! {
        @if let Some(r) = refusal {
            p.error role="alert" {
                (r.message)
                @if let Some(f) = r.field.as_deref().filter(|f| !fields.contains(f)) { " (" (f) ")" }
            }
        }
    }
}

/// Re-authenticates the session with the form's `password` (and `otp`) when the member typed
/// one, for a use case that wants a recent sign-in (what can take an account over: it refuses
/// `ReauthenticationRequired` itself). Errors: `RateLimited`, `InvalidCredentials`,
/// `SecondFactor`.
pub async fn reauthenticated(state: &AppState, posted: &mut Posted) -> Result<(), Error> {
    let password = posted.form.text("password").to_owned();
    if password.is_empty() {
        return Ok(());
    }
    let otp = posted.form.get("otp").map(str::trim).filter(|o| !o.is_empty()).map(str::to_owned);
    state.use_cases.accounts().reauthenticate(&mut posted.place.current, &password, otp.as_deref()).await
}

/// The fields a form that can take the account over shows when the session's sign-in is more
/// than 5 minutes old: the password, and a code with two-factor login.
pub fn reauthentication_fields(state: &AppState, p: &Place, action: &str, refusal: Option<&Refusal>) -> Markup {
    if state.use_cases.accounts().require_recent(&p.current).is_ok() {
        return html! {};
    }
    html! {
        p.hint { "Confirm it is you: you signed in more than 5 minutes ago." }
        (input_in(action, "password", "Your password", ("password", ""), refusal))
        @if p.current.user.two_factor_since.is_some() {
            (input_in(action, "otp", "A code of your authenticator", ("text", ""), refusal))
        }
    }
}
