//! Readiness: whether the store answers (`ports`).

pub mod ports;
