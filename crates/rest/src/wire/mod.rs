//! Request and response shapes, one module per resource family, with their OpenAPI schemas.
//! Request bodies parse into domain types at the edge (`fields` holds the shared field
//! parsers); responses are built from domain values.

pub mod accounts;
pub mod checkout;
pub mod common;
pub mod dashboard;
pub mod diagnostics;
pub mod events;
pub mod exports;
pub mod fields;
pub mod health;
pub mod invoices;
pub mod links;
pub mod public;
pub mod readiness;
pub mod reconciliation;
pub mod strict_objects;
pub mod test_helpers;
pub mod webhooks;
