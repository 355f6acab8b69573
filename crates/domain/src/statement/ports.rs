//! Where statement settings and statements are kept, with the exports a statement is made of.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::email::model::OutboundEmail;
use crate::error::Error;
use crate::export::model::{Export, ExportStatus};
use crate::ids::{PublicToken, StatementId};
use crate::mode::Scope;
use crate::statement::model::{Statement, StatementSetting};

/// A statement whose files are being written, with where each of them stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportingStatement {
    /// The statement.
    pub statement: Statement,
    /// Its `invoices` export's status.
    pub invoices: ExportStatus,
    /// Its `payments` export's status.
    pub payments: ExportStatus,
}

/// Statement settings, statements and their exports.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait StatementStore: Send + Sync {
    /// Sets where `scope`'s statements go (`None`: no more statements), keeping the first
    /// `enabled_at` when only the email changes; answers the setting after. Errors:
    /// `NotFound(Merchant)`.
    async fn set_statement_email(
        &self,
        scope: &Scope,
        email: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Option<StatementSetting>, Error>;
    /// The statement settings of `only`, or of every merchant and mode (the worker's pass:
    /// each carries its scope).
    async fn statement_settings(&self, only: Option<Scope>) -> Result<Vec<StatementSetting>, Error>;
    /// Inserts `statement` with its two queued exports, in one transaction; answers `false`
    /// (writing nothing) when the scope already has a statement of that month.
    async fn insert_statement(&self, statement: &Statement, exports: &[Export]) -> Result<bool, Error>;
    /// Up to `limit` statements whose files are being written, oldest first, across merchants.
    async fn exporting_statements(&self, limit: u32) -> Result<Vec<ExportingStatement>, Error>;
    /// Marks an exporting statement mailed and inserts its email in the outbox, in one
    /// transaction; answers `false` (writing nothing) when it is no longer exporting.
    async fn statement_mailed(&self, statement: &Statement, email: &OutboundEmail) -> Result<bool, Error>;
    /// Marks an exporting statement failed with `message`.
    async fn statement_failed(&self, statement: &Statement, message: &str) -> Result<(), Error>;
    /// One statement of `scope`. Errors: `NotFound(Statement)`.
    async fn get_statement(&self, scope: &Scope, id: &StatementId) -> Result<Statement, Error>;
    /// The statement behind a download link's token, whoever's it is (the link is the
    /// capability). Errors: `NotFound(Statement)`.
    async fn statement_by_token(&self, token: &PublicToken) -> Result<Statement, Error>;
    /// `scope`'s statements, newest month first, at most `limit`.
    async fn list_statements(&self, scope: &Scope, limit: u32) -> Result<Vec<Statement>, Error>;
}
