//! The REST API of stablepay (actix-web), a driving adapter over the domain's use cases: routes,
//! API-key extractors, JSON bodies and query strings parsed into domain types, the wire shapes
//! and the OpenAPI document. It parses a request into domain types, calls a use case through the
//! request's state, and renders the answer. The shared HTTP plumbing is `stablepay-http`.

pub mod api;
pub mod auth;
pub mod deprecation;
pub mod idempotency;
pub mod json;
pub mod known_routes;
pub mod openapi;
pub mod query;
pub mod rebuild;
pub mod routes;
pub mod session;
pub mod wire;
