//! The merchant dashboard's business pages, a driving adapter over the same use cases as the
//! API. A page resolves who is signed in, the merchant and the mode from its URL (`merchant`,
//! `mode`; the first membership and test mode by default), and runs `Current::require` before
//! reading anything: another merchant is not found, a role without the action is refused on a
//! page that says so, and what a role may not do is not offered. Filters and the cursor stay in
//! the URL; every form carries the session's CSRF token and a key that makes it submit once.

pub mod checkouts;
pub mod developers;
pub mod draft;
pub mod exports;
pub mod form;
pub mod frame;
pub mod invoices;
pub mod links;
pub mod overview;
pub mod security;
pub mod settings;
pub mod webhooks;

#[cfg(test)]
mod tests;
