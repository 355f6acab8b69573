//! When an idle worker looks again: each worker loop's next due time, as the store knows it,
//! decides how long the loop rests after a pass that found nothing to do, so a service with
//! nothing to do asks the database almost nothing. New work wakes a loop sooner (the adapters
//! send a notification when it is created); what has no due time of its own (reminder slots,
//! monthly statements, the months of events, retention, the daily reconciliation runs) is looked
//! at at least every [`model::IDLE_REST_SECONDS`].

pub mod model;
pub mod ports;
pub mod service;

pub use model::{HELD_REST_SECONDS, IDLE_REST_SECONDS, WorkKind, rest};
pub use ports::DueTimes;
pub use service::Schedule;
