//! Diagnostics: why a checkout is or is not paid (`model`: the checks of each transfer with the
//! values compared, where its block stands, the chain, the next step in words) and the use cases
//! (`service`). No port of its own: it reads invoices and asks the chain.

pub mod model;
pub mod service;

pub use model::*;
