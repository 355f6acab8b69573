//! Route handlers, one module per resource.

pub mod checkout;
pub mod dashboard;
pub mod events;
pub mod exports;
pub mod health;
pub mod invoices;
pub mod links;
pub mod openapi;
pub mod public;
pub mod reconciliation;
pub mod test_helpers;
pub mod webhooks;
