//! The checkout page's push channel, `GET /checkout/{id}/events` (Server-Sent Events): what the
//! page's script compares (`{"phase", "payment"}`: the checkout's phase and its latest payment's
//! status) as a `status` event at once, then again each time it changes. The stream learns of a
//! change from the checkout's signals ([`UseCases::follow_checkout`]: the service's
//! `LISTEN`/`NOTIFY`, from whichever process credited the payment), reads the checkout through
//! the same public view as the page, and sends only what changed; while signals are down it
//! looks every 2 s, and every minute it looks anyway. A comment every 15 s keeps proxies from closing a quiet stream, and the
//! stream ends after a final phase (paid, expired, cancelled). The page falls back to polling
//! `GET /v1/public/checkout-sessions/{id}` when the stream fails.
//!
//! [`UseCases::follow_checkout`]: stablepay_domain::use_cases::UseCases::follow_checkout

use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{HttpResponse, get, web};
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::invoice::public::{CheckoutPhase, CheckoutView};
use stablepay_domain::ports::{CheckoutSignal, CheckoutSubscription};
use stablepay_http::error::ApiError;
use stablepay_http::state::AppState;

use crate::page::not_found;

/// How long a stream stays silent before a comment line.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// The comment line a quiet stream sends.
const HEARTBEAT_LINE: Bytes = Bytes::from_static(b": still here\n\n");

/// What the page compares, as the event's data; and whether the phase is final.
fn status(v: &CheckoutView) -> (String, bool) {
    let data = serde_json::json!({
        "phase": v.phase.as_str(),
        "payment": v.latest.as_ref().map_or("", |p| p.status.as_str()),
    });
    let done = matches!(v.phase, CheckoutPhase::Paid | CheckoutPhase::Expired | CheckoutPhase::Cancelled);
    (data.to_string(), done)
}

/// One open stream.
struct Stream {
    state: web::Data<AppState>,
    id: CheckoutSessionId,
    subscription: Box<dyn CheckoutSubscription>,
    /// The last data sent.
    sent: String,
    /// The first event, before anything is awaited.
    first: Option<Bytes>,
    done: bool,
    /// Quiet waits so far.
    quiet: u32,
}

fn event(data: &str) -> Bytes {
    Bytes::from(format!("event: status\ndata: {data}\n\n"))
}

impl Stream {
    /// The next chunk: the first event, a changed status, or a heartbeat; `None` after a final
    /// phase was sent.
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        while !self.done {
            let mut quiet = false;
            if self.subscription.next(HEARTBEAT).await == CheckoutSignal::Quiet {
                // Every fourth quiet wait (a minute) the checkout is read anyway: a signal lost
                // with a process that died between its commit and its NOTIFY is caught up.
                self.quiet = self.quiet.wrapping_add(1);
                if !self.quiet.is_multiple_of(4) {
                    return Some(HEARTBEAT_LINE);
                }
                quiet = true;
            }
            // Changed, or signals are down, or the minute: read the checkout (a failed read
            // waits for the next signal or pause, as a poll would).
            if let Ok(view) = self.state.use_cases.public_views().checkout(&self.id).await {
                let (data, done) = status(&view);
                if data != self.sent {
                    self.done = done;
                    self.sent = data;
                    return Some(event(&self.sent));
                }
            }
            if quiet {
                return Some(HEARTBEAT_LINE);
            }
        }
        None
    }
}

/// The checkout's live status for its page.
#[get("/checkout/{id}/events")]
pub async fn checkout_events(state: web::Data<AppState>, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(id) = CheckoutSessionId::parse(&id) else { return Ok(not_found()) };
    // Subscribed before the first read: a change in between is not missed.
    let subscription = state.use_cases.follow_checkout(&id);
    let view = match state.use_cases.public_views().checkout(&id).await {
        Ok(view) => view,
        Err(stablepay_domain::Error::NotFound(_)) => return Ok(not_found()),
        Err(e) => return Err(e.into()),
    };
    let (sent, done) = status(&view);
    // `retry`: a browser whose stream broke tries again after 3 s (the polling pace).
    let first = Some(Bytes::from(format!("retry: 3000\nevent: status\ndata: {sent}\n\n")));
    let stream = Stream { state, id, subscription, sent, first, done, quiet: 0 };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        s.next().await.map(|chunk| (Ok::<_, actix_web::Error>(chunk), s))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-store"))
        // nginx passes the events on as they come rather than buffering them.
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}
