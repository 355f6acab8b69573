//! What the dashboard's routes answer when a session starts or gets a new token: the session
//! and its cookie.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use stablepay_domain::account::service::{Current, SignedIn};
use stablepay_domain::ids::PublicToken;
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;
use stablepay_http::state::AppState;

use crate::session::session_cookie;
use crate::wire::dashboard::SessionOut;

pub(crate) use stablepay_http::session::with_cookie;

/// The answer of a new session: the session, and its cookie.
pub(crate) fn signed_in(state: &AppState, status: StatusCode, signed: &SignedIn) -> Result<HttpResponse, ApiError> {
    session_answer(state, status, &signed.current, &signed.token)
}

/// The answer of a session with a new token (a login, or a privilege change): the session and
/// its cookie.
pub(crate) fn session_answer(
    state: &AppState,
    status: StatusCode,
    current: &Current,
    token: &PublicToken,
) -> Result<HttpResponse, ApiError> {
    let settings = state.use_cases.accounts().settings.sessions;
    let res = ok(status, &SessionOut::of(current, current.session.ends_at(&settings)))?;
    with_cookie(res, &session_cookie(token, state.use_cases.pages(), settings.absolute.num_seconds()))
}
