//! The gasless relayer: a customer who holds USDC but no POL signs the EIP-3009 authorization
//! of a wallet payment attempt, and the service submits it, paying the gas (the operator's
//! relayer key, `STABLEPAY_RELAYER_KEY`). `model` holds the submission, its checks, fees and
//! status; `ports` the relayer account on the chain and the store of submissions; `service`
//! the use cases (submit, read, the worker's sending, the relayer's state).

pub mod model;
pub mod ports;
pub mod service;
