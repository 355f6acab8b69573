//! The API's idempotent mutations: a merchant's request runs at most once per `Idempotency-Key`,
//! in the namespace of its key (merchant, mode and key type: a publishable key, public in
//! browsers, never claims or reads a secret key's answer). The mechanism is
//! `stablepay_http::idempotency`.

use std::future::Future;

use actix_web::{HttpRequest, HttpResponse, ResponseError};
use stablepay_domain::idempotency::{Committed, IdempotencyNamespace, KeyedRequest, Requester};
use stablepay_http::idempotency::{Outcome, fingerprint, key_of, keyed, render, respond};

use crate::auth::Caller;

/// Keys are separate per merchant, mode and key type (publishable keys are public).
fn namespace(caller: &Caller) -> IdempotencyNamespace {
    IdempotencyNamespace { scope: caller.scope().clone(), requester: Requester::Key(caller.principal.key_type) }
}

/// Runs `run` with the caller at most once per idempotency key (when the request has one),
/// its work under the key's claim; after a crash between the work and its answer, `rebuild`
/// answers again from what the work committed.
pub async fn execute<F, Fut, R, RFut>(
    caller: Caller,
    req: &HttpRequest,
    body: &[u8],
    rebuild: R,
    run: F,
) -> HttpResponse
where
    F: FnOnce(Caller) -> Fut + 'static,
    Fut: Future<Output = Outcome> + 'static,
    R: FnOnce(Caller, Committed) -> RFut + 'static,
    RFut: Future<Output = Outcome> + 'static,
{
    let key = match key_of(req) {
        Ok(k) => k,
        Err(e) => return e.error_response(),
    };
    let state = caller.state.clone();
    let namespace = namespace(&caller);
    let Some(key) = key else {
        let outcome = run(caller).await;
        return match outcome {
            Ok(_) => {
                let (status, body) = render(&outcome);
                respond(status, body, &[])
            }
            Err(e) => e.error_response(),
        };
    };
    let request = KeyedRequest { namespace, key, fingerprint: fingerprint(&state, req, body) };
    let again = caller.clone();
    let work = move |claim| run(caller.claimed(claim));
    keyed(state, request, (work, move |committed| rebuild(again, committed))).await
}
