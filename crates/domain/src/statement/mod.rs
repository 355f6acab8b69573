//! Monthly statements: on the 1st of a month (on the merchant's clock, so the test clock moves
//! it in test mode), an `invoices` and a `payments` export of the month before, mailed to the
//! merchant's billing email as download links once both files are ready (`model`: the setting,
//! the month and the statement; `ports`: where they are kept; `service`: the setting, issuing,
//! mailing and the download link's resolution).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
