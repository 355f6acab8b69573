//! Readiness: whether the store answers (`ports`), and the check that also asks the chain
//! (`service`).

pub mod ports;
pub mod service;
