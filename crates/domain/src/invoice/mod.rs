//! Invoices: money math, the collectionState machine and the lifecycle status machine.

pub mod collection;
pub mod lifecycle;
pub mod totals;

pub use collection::{CollectionState, CollectionTrigger};
pub use lifecycle::{Coverage, LifecycleStatus, LifecycleTrigger};
pub use totals::{Discount, PricedLine, Totals, compute_totals};
