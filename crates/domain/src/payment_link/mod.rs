//! Payment links: a reusable or single-use URL that creates an invoice and its checkout for
//! whoever opens it. `machine` holds the lifecycle states, `model` the link and its rules'
//! values, `validate` the configuration rules, `ports` the store, and `service` the use cases
//! (the merchant's and the public ones).

pub mod machine;
pub mod model;
pub mod ports;
pub mod service;
pub mod validate;
