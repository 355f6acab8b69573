//! The statement use cases: where a merchant's statements go (the operator's CLI for now), the
//! worker's issuing of the month's statements and mailing of those whose files are ready, and
//! the resolution of a download link.

use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::email::model::OutboundEmail;
use crate::error::{Error, Resource};
use crate::export::model::{Export, ExportStatus};
use crate::ids::{ExportId, PublicToken};
use crate::invoice::validate::check_email;
use crate::mode::Scope;
use crate::statement::model::{Statement, StatementFile, StatementSetting, due_month};
use crate::statement::ports::{ExportingStatement, StatementStore};

/// The statement use cases.
pub struct Statements<'a> {
    /// Settings, statements and their exports.
    pub store: &'a dyn StatementStore,
    /// Ids and tokens.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
}

/// What one mailing pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MailingReport {
    /// Statements whose email was queued.
    pub mailed: usize,
    /// Statements given up because a file could not be written.
    pub failed: usize,
}

impl Statements<'_> {
    /// Sends `scope`'s monthly statements to `email` from now on (`None`: no more statements).
    /// The first is of the current month, on the 1st of the next. Errors: `Validation` (`email`)
    /// for an address that is not plausible; `NotFound(Merchant)`.
    pub async fn set_email(&self, scope: &Scope, email: Option<&str>) -> Result<Option<StatementSetting>, Error> {
        if let Some(email) = email {
            check_email("email", email)?;
        }
        let now = self.clock.now(scope).await?;
        self.store.set_statement_email(scope, email.map(str::to_owned), now).await
    }

    /// `scope`'s setting and its latest statements (at most `limit`, newest month first).
    pub async fn show(&self, scope: &Scope, limit: u32) -> Result<(Option<StatementSetting>, Vec<Statement>), Error> {
        let setting = self.store.statement_settings(Some(scope.clone())).await?.into_iter().next();
        Ok((setting, self.store.list_statements(scope, limit).await?))
    }

    /// Issues the statement that came due (on each scope's clock) for every setting of `only`
    /// or of every merchant and mode: the month before, with a queued `invoices` and `payments`
    /// export of it, once per month. Answers how many were issued.
    pub async fn issue_due(&self, only: Option<&Scope>) -> Result<usize, Error> {
        let mut issued = 0;
        for setting in self.store.statement_settings(only.cloned()).await? {
            let now = self.clock.now(&setting.scope).await?;
            let Some(month) = due_month(&setting, now) else { continue };
            let exports = month.export_specs().map(|spec| Export::queued(self.crypto, &setting.scope, spec, now));
            let statement = Statement::issued(self.crypto, (&setting.scope, month), &setting.email, &exports, now);
            if self.store.insert_statement(&statement, &exports).await? {
                issued += 1;
            }
        }
        Ok(issued)
    }

    /// Queues the email of each statement whose two files are ready (up to `limit`), and gives
    /// up those with a file that failed, was cancelled or expired before it was mailed.
    pub async fn mail_ready(&self, limit: u32) -> Result<MailingReport, Error> {
        let mut report = MailingReport::default();
        for ExportingStatement { statement, invoices, payments } in self.store.exporting_statements(limit).await? {
            let statuses = [(StatementFile::Invoices, invoices), (StatementFile::Payments, payments)];
            if let Some((file, status)) = statuses.iter().find(|(_, s)| !s.is_open() && *s != ExportStatus::Ready) {
                let message = format!("the {} export is {}", file.as_str(), status.as_str());
                self.store.statement_failed(&statement, &message).await?;
                report.failed += 1;
            } else if statuses.iter().all(|(_, s)| *s == ExportStatus::Ready) {
                let email = OutboundEmail::statement(self.crypto, &statement, self.clock.system_now());
                if self.store.statement_mailed(&statement, &email).await? {
                    report.mailed += 1;
                }
            }
        }
        Ok(report)
    }

    /// The export behind a download link: its scope and id. Errors: `NotFound(Statement)` for
    /// a token or a file name that names nothing.
    pub async fn file(&self, token: &str, file: &str) -> Result<(Scope, ExportId), Error> {
        let not_found = || Error::NotFound(Resource::Statement);
        let token = PublicToken::parse(token).ok_or_else(not_found)?;
        let file = StatementFile::parse(file).ok_or_else(not_found)?;
        let statement = self.store.statement_by_token(&token).await?;
        Ok((statement.scope.clone(), statement.export(file).clone()))
    }
}

#[cfg(test)]
mod tests;
