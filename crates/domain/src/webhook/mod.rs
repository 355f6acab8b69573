//! Webhooks: endpoints a merchant registers, signed deliveries of its events to them, retries,
//! secret rotation, incidents. `model` holds the records, `delivery` the delivery status
//! machine and retry schedule, `destination` where deliveries may go, `sample` the data of synthetic test events, `ports` what the use
//! cases need from adapters, and `service` the use cases.

pub mod delivery;
pub mod destination;
pub mod model;
pub mod ports;
pub mod sample;
pub mod service;
