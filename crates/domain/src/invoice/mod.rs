//! Invoices: money math, the collectionState machine and the lifecycle status machine.

pub mod collection;
pub mod lifecycle;
pub mod model;
pub mod snapshot;
pub mod totals;
pub mod validate;

pub use collection::{CollectionState, CollectionTrigger};
pub use lifecycle::{Coverage, LifecycleStatus, LifecycleTrigger};
pub use model::*;
pub use totals::{Discount, PricedLine, Totals, compute_totals};
