//! HTTP tests against the real `stablepay` binary and a real PostgreSQL, each test on its own
//! database. `DATABASE_URL` names the server (default postgres://postgres@127.0.0.1:5432/postgres).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod account_pages;
mod accounts;
mod anvil;
mod attribution;
mod authorization;
mod browser;
mod checkout;
mod completeness;
mod contract;
mod crash;
mod dashboard;
mod dashboard_pages;
mod deploy;
mod diagnostics;
mod emails;
mod evidence;
mod exports;
mod failover;
mod faults;
mod form_client;
mod foundation;
mod hardening;
mod invoices;
mod lifecycle;
mod links;
mod live;
mod operator;
mod pages;
mod payments;
mod pdf;
mod plans;
mod ratelimit;
mod receiver;
mod reconciliation;
mod reference;
mod replicas;
mod restricted;
mod retention;
mod rpc_proxy;
mod settings;
mod statements;
mod support;
mod wallet;
mod webhooks;
