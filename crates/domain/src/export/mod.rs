//! Exports: a merchant's records written out as CSV files (`model`: types, versioned schemas,
//! statuses, the range and filter rules; `csv`: RFC 4180 with the formula guard; `schema`: each
//! schema's columns and rows), the store of exports and their files (`ports`), and the use
//! cases (`service`: create, read, list, cancel, download, synchronous export, and the
//! worker's writing and expiry).

pub mod csv;
pub mod model;
pub mod ports;
pub mod schema;
pub mod service;

pub use model::*;
