//! Checkout telemetry: the steps the hosted checkout page reports for each checkout (viewed, a
//! wallet connected, a transfer sent, an error shown), stored per checkout and summed up for
//! the merchant as a conversion funnel. `model` holds the steps and the funnel, `ports` the
//! store, `service` the use cases.

pub mod model;
pub mod ports;
pub mod service;
