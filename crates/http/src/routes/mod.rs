//! Route handlers, one module per resource.

pub mod events;
pub mod health;
pub mod openapi;
