//! What the driving web adapters of stablepay share (the REST API, `stablepay-rest`, and the
//! hosted pages, `stablepay-web`): the state a request gets (the domain's use cases, never its
//! ports), the error codes with their statuses and the envelope, the request pipeline (request
//! id, span, panic guard, body ceiling, metrics), body reading within the process's budget,
//! idempotent execution, rate limits, the client's address, and export files as downloads.
//!
//! It implements no port and serves no route of its own.

pub mod body;
pub mod client;
pub mod download;
pub mod envelope;
pub mod error;
pub mod factory;
pub mod idempotency;
pub mod limit_headers;
pub mod middleware;
pub mod qr;
pub mod ratelimit;
pub mod request_id;
pub mod respond;
pub mod session;
pub mod state;
pub mod status;
pub mod timestamp;
