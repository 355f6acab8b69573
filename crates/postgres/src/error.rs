//! Mapping of diesel and pool failures to the domain's error contract.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use stablepay_domain::Error;

/// The unique indexes that let a transaction hash be credited once: per merchant in test mode
/// (simulated hashes), across the service in live mode.
const TX_ONCE_INDEXES: [&str; 2] = ["credited_transfer_logs_once", "payments_tx_once_test"];

/// Failure inside a transaction: a database error, or a domain outcome that rolls it back.
pub(crate) enum TxError {
    Db(DieselError),
    Domain(Error),
}

impl From<DieselError> for TxError {
    fn from(e: DieselError) -> Self {
        TxError::Db(e)
    }
}

impl TxError {
    pub(crate) fn into_domain(self) -> Error {
        match self {
            TxError::Domain(e) => e,
            TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info))
                if info.constraint_name().is_some_and(|c| TX_ONCE_INDEXES.contains(&c)) =>
            {
                Error::DuplicateTransaction
            }
            // An invoice number raced, or the row changed: the caller reloads and decides again.
            TxError::Db(DieselError::DatabaseError(
                DatabaseErrorKind::UniqueViolation | DatabaseErrorKind::SerializationFailure,
                _,
            )) => Error::InvoiceStateMismatch,
            TxError::Db(e) => db(e),
        }
    }
}

pub(crate) fn db(err: DieselError) -> Error {
    match err {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand, _) => {
            Error::Unavailable
        }
        DieselError::BrokenTransactionManager => Error::Unavailable,
        DieselError::DatabaseError(_, info) if is_unavailable_message(info.message()) => Error::Unavailable,
        // A database without this binary's schema (recreated empty, or not migrated yet):
        // unavailable until `stablepay migrate` runs, never a 500.
        ref e if is_schema_missing(e) => {
            tracing::warn!(error = %e, "the database lacks this binary's schema: run `stablepay migrate`");
            Error::Unavailable
        }
        other => {
            tracing::error!(error = %other, "database error");
            Error::Internal(other.to_string())
        }
    }
}

/// Whether a statement failed because a table, column or function of the schema does not exist.
pub(crate) fn is_schema_missing(err: &DieselError) -> bool {
    match err {
        DieselError::DatabaseError(_, info) => {
            let m = info.message();
            (m.starts_with("relation ") || m.starts_with("column ") || m.starts_with("function "))
                && m.ends_with("does not exist")
        }
        _ => false,
    }
}

fn is_unavailable_message(message: &str) -> bool {
    // Server shutting down or connection lost mid-query.
    ["terminating connection", "connection closed", "server closed the connection"].iter().any(|m| message.contains(m))
}

pub(crate) fn pool<E: std::fmt::Display>(err: E) -> Error {
    tracing::warn!(error = %err, "database pool unavailable");
    Error::Unavailable
}
