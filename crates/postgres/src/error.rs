//! Mapping of diesel and pool failures to the domain's error contract.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use stablepay_domain::Error;

pub(crate) fn db(err: DieselError) -> Error {
    match err {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand, _) => {
            Error::Unavailable
        }
        DieselError::BrokenTransactionManager => Error::Unavailable,
        DieselError::DatabaseError(_, info) if is_unavailable_message(info.message()) => Error::Unavailable,
        other => {
            tracing::error!(error = %other, "database error");
            Error::Internal(other.to_string())
        }
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
