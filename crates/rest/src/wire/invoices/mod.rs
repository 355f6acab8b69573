//! Invoices: what the invoice routes take (`input`) and answer (`output`).

pub mod input;
pub mod output;
