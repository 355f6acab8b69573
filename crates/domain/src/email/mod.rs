//! Emails to an invoice's customer: the invoice itself (`send`, or creation and issue with
//! `send: true`) and reminders (on request, or on the invoice's reminder schedule). `model`
//! holds the outbox record and its rules, `compose` the message's text, `ports` the outbox
//! store and the mailer, and `service` the use cases (queue, remind, deliver, schedule).
//!
//! A queued email is written in the same transaction as the invoice change that asks for it
//! (`InvoiceChange::emails`); the worker delivers it and records each attempt on the invoice's
//! activity, again in one transaction with the outbox row.

pub mod compose;
pub mod model;
pub mod ports;
pub mod service;
