//! The pure domain of stablepay: money, ids, entities, state machines, events, the port traits
//! that adapters implement, and the use cases that orchestrate them.
//!
//! This crate does no I/O and depends on no I/O crate; its entities carry no serde or diesel
//! derives. Adapters own their wire and row types and convert at their edge. The HTTP service,
//! the worker and internal admin tooling (`crates/admin`) all go through it, so a rule lives in
//! one place.
//!
//! # Layout
//!
//! Every feature is a folder of the same shape: its model (entities, values and the pure rules
//! and state machines), `ports.rs` (the traits its adapters implement) and `service.rs` (its use
//! cases over those ports). Imports run one way: values, then models, then ports, then use
//! cases (`tests/layering.rs`).
//!
//! - Values every feature uses: [`money`] (exact six-decimal amounts, never floats), [`ids`],
//!   [`mode`] (a [`Scope`] is a merchant and a mode: every store call takes one), [`url`],
//!   [`page`], [`error`], and the two capabilities the values themselves need, [`clock`] (each
//!   scope's time) and [`crypto`] (randomness, SHA-256).
//! - Features:
//!   - [`merchant`]: merchants and their settlement; the operator's administration.
//!   - [`api_key`]: keys and what they give; authentication; key administration.
//!   - [`account`]: the people who sign in, their roles per merchant (one capability table)
//!     and their sessions.
//!   - [`invoice`]: invoices, checkout sessions and payments (the `collectionState` machine in
//!     [`invoice::collection`], the payment `status` machine in [`invoice::lifecycle`]); the
//!     use cases in [`invoice::service::Invoices`].
//!   - [`chain`]: transfers as the chain reports them, verification and attribution, the
//!     follower ([`chain::service::Follower`]).
//!   - [`relay`]: the gasless relayer, submitting customers' signed authorizations.
//!   - [`payment_link`], [`webhook`], [`email`], [`event`], [`export`], [`statement`],
//!     [`reconciliation`], [`diagnostics`].
//!   - [`idempotency`], [`ratelimit`], [`health`]: what the driving adapters need around every
//!     request.
//! - [`ports`]: every port in one list, with its mock (`mocks` feature).
//! - [`use_cases::UseCases`]: every use case over the ports one deployment wires; what the
//!   driving adapters (HTTP API, hosted pages, worker) hold. Its ports are private: a driving
//!   adapter calls use cases, never a store.
//!
//! Every refusal is an [`Error`] variant, each documented with the public code adapters map it
//! to.
//!
//! # Money
//!
//! Amounts are decimal strings with at most six fractional digits, parsed exactly and computed
//! exactly; products round half-up to six places.
//!
//! ```
//! use stablepay_domain::money::{Decimal6, DecimalError, Percentage};
//!
//! let price = Decimal6::parse("19.99").unwrap();
//! let quantity = Decimal6::parse("3").unwrap();
//! assert_eq!(price.mul_round(&quantity).to_string(), "59.970000");
//! // A 2.5 % fee in basis points, and a percentage of an amount, both exact.
//! assert_eq!(Decimal6::parse("100").unwrap().basis_points(250).to_string(), "2.500000");
//! assert_eq!(Percentage::parse("12.5").unwrap().of(&price).to_string(), "2.498750");
//! // What the parser refuses, and why.
//! assert_eq!(Decimal6::parse("1.1234567"), Err(DecimalError::TooPrecise));
//! assert_eq!(Decimal6::parse("1e3"), Err(DecimalError::Malformed));
//! assert_eq!(Decimal6::parse_positive("0"), Err(DecimalError::NotPositive));
//! ```
//!
//! # Totals
//!
//! ```
//! use stablepay_domain::invoice::totals::{compute_totals, Discount, PricedLine};
//! use stablepay_domain::money::{Decimal6, Percentage};
//!
//! let d = |s: &str| Decimal6::parse(s).unwrap();
//! let lines = [
//!     PricedLine { quantity: d("2"), unit_amount: d("12.50") },
//!     PricedLine { quantity: d("1"), unit_amount: d("5") },
//! ];
//! let discount = Discount::Percentage(Percentage::parse("10").unwrap());
//! let totals = compute_totals(&lines, Some(&discount), &[d("1.20")]).unwrap();
//! assert_eq!(totals.subtotal, d("30"));
//! assert_eq!(totals.discount, d("3"));
//! assert_eq!(totals.tax, d("1.2"));
//! assert_eq!(totals.total, d("28.2"));
//! ```
//!
//! # State machines
//!
//! Transitions are pure functions: the new state and the events it emits, or a typed refusal.
//!
//! ```
//! use stablepay_domain::event::EventType;
//! use stablepay_domain::invoice::collection::{transition, CollectionState, CollectionTrigger};
//! use stablepay_domain::Error;
//!
//! let issued = transition(CollectionState::Draft, CollectionTrigger::Issue).unwrap();
//! assert_eq!(issued.to, CollectionState::Open);
//! assert_eq!(issued.events, vec![EventType::InvoiceIssued]);
//!
//! let part = CollectionTrigger::PaymentCredited { remaining_zero: false, over: false };
//! let partly = transition(CollectionState::Open, part).unwrap();
//! assert_eq!(partly.to, CollectionState::PartiallyPaid);
//!
//! // An issued invoice cannot be issued again.
//! assert_eq!(transition(CollectionState::Open, CollectionTrigger::Issue), Err(Error::InvoiceAlreadyIssued));
//! ```
//!
//! # A use case over mock ports
//!
//! A use case takes its ports as trait objects; tests (and tools) pass any implementation. With
//! the `mocks` feature each port has a mockall mock:
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use stablepay_domain::invoice::input::CheckoutInput;
//! use stablepay_domain::invoice::service::Invoices;
//! use stablepay_domain::ports::{MockChain, MockClock, MockInvoiceStore};
//! use stablepay_domain::invoice::collection::CollectionState;
//! use stablepay_domain::merchant::{ChainSettings, MerchantStatus};
//! use stablepay_domain::money::Decimal6;
//! use stablepay_domain::testing::{self, SeqCrypto};
//! use stablepay_domain::{Mode, Scope};
//!
//! let now = Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap();
//! let merchant = testing::merchant(MerchantStatus::Active, now);
//! let scope = Scope::new(merchant.id.clone(), Mode::Test);
//!
//! let mut clock = MockClock::new();
//! clock.expect_now().returning(move |_| Ok(now));
//! let mut store = MockInvoiceStore::new();
//! // The store numbers the invoice (here: 7) and saves the change atomically.
//! store.expect_save_invoice().times(1).returning(|mut change| {
//!     change.finalize(Some(7));
//!     Ok(change.aggregate)
//! });
//! let (crypto, chain, settings) = (SeqCrypto::default(), MockChain::new(), ChainSettings::default());
//! let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
//!
//! let input = CheckoutInput { amount: Some(Decimal6::parse("25.50").unwrap()), ..Default::default() };
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let created = runtime.block_on(invoices.create_checkout(&merchant, &scope, input)).unwrap();
//! assert_eq!(created.invoice.collection_state, CollectionState::Open);
//! assert_eq!(created.invoice.number.as_deref(), Some("INV-000007"));
//! assert_eq!(created.sessions[0].amount_due.to_string(), "25.500000");
//! assert_eq!(created.sessions[0].expires_at, now + chrono::Duration::minutes(30));
//! ```

#![warn(missing_docs)]

// Values every feature uses.
pub mod clock;
pub mod crypto;
pub mod error;
pub mod ids;
pub mod mode;
pub mod money;
pub mod page;
pub mod text;
pub mod url;

// Features: model, ports and use cases each.
pub mod account;
pub mod api_key;
pub mod chain;
pub mod diagnostics;
pub mod email;
pub mod event;
pub mod export;
pub mod health;
pub mod idempotency;
pub mod invoice;
pub mod merchant;
pub mod payment_link;
pub mod ratelimit;
pub mod reconciliation;
pub mod relay;
pub mod retention;
pub mod schedule;
pub mod statement;
pub mod telemetry;
pub mod webhook;

// Every port, in one list.
pub mod ports;

// Every use case over one deployment's ports: what driving adapters hold.
pub mod use_cases;

#[cfg(any(test, feature = "mocks"))]
pub mod testing;

pub use error::{Error, Limit, Resource};
pub use mode::{Mode, Scope};
pub use money::Amount;
