//! The worker's verification of payments in flight: claim the ones whose check is due, check
//! each against the chain, and back off the ones the chain could not answer (the reason is the
//! payment's diagnostic).

use crate::error::Error;
use crate::ids::PaymentId;
use crate::invoice::payment::TxHash;
use crate::invoice::service::credit::Settled;
use crate::invoice::service::invoices::Invoices;
use crate::mode::Scope;
use crate::schedule::model::{CHAIN_SILENT_RETRY_SECONDS, CHECK_FAILED_RETRY_SECONDS};

/// A payment claimed for a check: its scope, its id and its transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueCheck {
    /// The payment's merchant and mode.
    pub scope: Scope,
    /// The payment.
    pub payment: PaymentId,
    /// The transaction it names.
    pub tx: TxHash,
}

/// What a check did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Nothing ended: still waiting, validating, reorganised, or settled meanwhile by another.
    Unchanged,
    /// The payment ended: credited, failed or a duplicate.
    Settled(Settled),
    /// The check could not be made (`cause`: the chain did not answer, or something failed
    /// inside the service); the payment is checked again after `seconds`, its diagnostic
    /// saying why.
    Deferred {
        /// The wait before the next check.
        seconds: u32,
        /// The diagnostic recorded.
        diagnostic: String,
        /// Why the check could not be made.
        cause: Error,
    },
}

/// The wait before the next check of a payment whose check failed with `e`, and the
/// diagnostic the payment shows meanwhile.
pub fn check_backoff(e: &Error) -> (u32, String) {
    match e {
        Error::Unavailable => (CHAIN_SILENT_RETRY_SECONDS, "the chain RPC endpoints do not answer; retrying".into()),
        Error::ChainUnavailable(reason) => (CHECK_FAILED_RETRY_SECONDS, reason.clone()),
        _ => (CHECK_FAILED_RETRY_SECONDS, "verification failed inside the service; retrying".into()),
    }
}

impl Invoices<'_> {
    /// The worker: claims up to `limit` live payments in flight whose check is due, each for
    /// `lease_ms` (other workers skip them meanwhile): the detected ones, and the validating
    /// ones in a block at or below `final_block`.
    pub async fn claim_checks(
        &self,
        limit: u32,
        lease_ms: u32,
        final_block: Option<u64>,
    ) -> Result<Vec<DueCheck>, Error> {
        let claimed = self.store.claim_payments(limit, lease_ms, final_block).await?;
        Ok(claimed.into_iter().map(|(scope, payment, tx)| DueCheck { scope, payment, tx }).collect())
    }

    /// The worker: checks a claimed payment against the chain ([`Invoices::verify_payment`]).
    /// A check the chain could not answer, or that failed inside the service, is deferred by
    /// [`check_backoff`] with its diagnostic (a failure to defer is an error: the lease runs
    /// out and the payment is checked again).
    pub async fn check(&self, due: &DueCheck) -> Result<Checked, Error> {
        match self.verify_payment(&due.scope, &due.payment, &due.tx).await {
            Ok(Settled::Waiting | Settled::Validating | Settled::Reorganized | Settled::AlreadySettled) => {
                Ok(Checked::Unchanged)
            }
            Ok(settled) => Ok(Checked::Settled(settled)),
            Err(cause) => {
                let (seconds, diagnostic) = check_backoff(&cause);
                self.store.defer_payment(&due.scope, &due.payment, seconds, &diagnostic).await?;
                Ok(Checked::Deferred { seconds, diagnostic, cause })
            }
        }
    }
}
