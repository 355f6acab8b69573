//! An invoice and a checkout as their customer sees them: what the hosted pages show and what
//! the public routes answer, decided once here and rendered by each.

use chrono::{DateTime, Utc};

use crate::invoice::aggregate::InvoiceAggregate;
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::payment::{FailureReason, Payment, PaymentStatus};
use crate::money::Amount;

/// Where a checkout stands, as its customer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckoutPhase {
    /// Nothing received yet: pay.
    Pay,
    /// A transfer was reported or seen and is being verified.
    Validating,
    /// Paid in full.
    Paid,
    /// A transfer was credited but fell short: the rest is due.
    Underpaid,
    /// The last transfer could not be accepted: pay again.
    Failed,
    /// A transfer reported for it is held for the merchant to decide (other evidence names
    /// another checkout as well): whoever sent it should not pay again; it can still be paid.
    Held,
    /// Its time ran out unpaid.
    Expired,
    /// Its invoice was closed.
    Cancelled,
}

impl CheckoutPhase {
    /// The phase as the public routes write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pay => "pay",
            Self::Validating => "validating",
            Self::Paid => "paid",
            Self::Underpaid => "underpaid",
            Self::Failed => "failed",
            Self::Held => "held",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    /// A payment can still be made.
    pub fn payable(self) -> bool {
        matches!(self, Self::Pay | Self::Underpaid | Self::Failed | Self::Held)
    }

    /// The phase of `session` whose latest payment is `latest`, at `now`.
    pub fn of(session: &CheckoutSession, latest: Option<&Payment>, now: DateTime<Utc>) -> Self {
        match session.status {
            CheckoutStatus::Completed => Self::Paid,
            CheckoutStatus::Expired => Self::Expired,
            CheckoutStatus::Cancelled => Self::Cancelled,
            CheckoutStatus::Pending if !session.is_payable(now) => Self::Expired,
            CheckoutStatus::Pending => match latest.map(|p| p.status) {
                Some(PaymentStatus::Detected | PaymentStatus::Validating) => Self::Validating,
                Some(PaymentStatus::Underpaid) => Self::Underpaid,
                Some(PaymentStatus::Failed)
                    if latest.and_then(|p| p.failure_reason) == Some(FailureReason::Disputed) =>
                {
                    Self::Held
                }
                Some(PaymentStatus::Failed | PaymentStatus::Duplicate) => Self::Failed,
                _ => Self::Pay,
            },
        }
    }
}

/// Why a transfer sent without its hash (scanned or copied) could not be matched to a live
/// checkout: the spec's SCAN_OR_COPY_UNAVAILABLE. Such a transfer is attributed by wallet,
/// token and exact amount only (`chain::verify::attribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanOrCopyUnavailable {
    /// Part of the checkout is paid: a transfer of the rest does not match its amount.
    PartlyPaid,
    /// Another open checkout asks the same wallet for the same amount.
    SameAmount,
}

impl ScanOrCopyUnavailable {
    /// Why, in the customer's words.
    pub fn message(self) -> &'static str {
        match self {
            Self::PartlyPaid => {
                "Part of this checkout is already paid, so a transfer of the rest cannot be matched \
without its transaction hash: pay with your browser wallet, or send it and report the hash below."
            }
            Self::SameAmount => {
                "Another open checkout asks this wallet for the same amount, so a transfer cannot be \
matched without its transaction hash: pay with your browser wallet, or send it and report the hash below."
            }
        }
    }
}

/// Everything a checkout's customer is shown: the checkout page and its live status.
#[derive(Clone, Debug)]
pub struct CheckoutView {
    /// The invoice the checkout collects for, with its sessions and payments.
    pub aggregate: InvoiceAggregate,
    /// The checkout.
    pub session: CheckoutSession,
    /// The merchant's name.
    pub merchant_name: String,
    /// Where the merchant's customers ask for help, when set.
    pub support_email: Option<String>,
    /// The merchant's logo, when set.
    pub logo: Option<crate::merchant::logo::Logo>,
    /// Where it stands.
    pub phase: CheckoutPhase,
    /// What to pay now: the session's amount, less what the invoice already received.
    pub amount_due: Amount,
    /// The checkout's latest payment.
    pub latest: Option<Payment>,
    /// Live mode: whether a scanned or copied transfer (without its hash) can be attributed.
    pub scan_or_copy: Result<(), ScanOrCopyUnavailable>,
    /// The payment link's success message, once paid.
    pub success_message: Option<String>,
    /// The checkout's time (its merchant's test clock in test mode).
    pub now: DateTime<Utc>,
}

impl CheckoutView {
    /// Seconds until the checkout expires (0 once expired).
    pub fn seconds_left(&self) -> i64 {
        (self.session.expires_at - self.now).num_seconds().max(0)
    }

    /// The EIP-681 request of an ERC-20 `transfer` of the amount due (in the token's smallest
    /// units) to the settlement wallet: what a wallet opens when it scans the code.
    pub fn payment_uri(&self) -> String {
        let s = &self.session;
        transfer_uri(s.token_contract.as_str(), s.chain_id, s.settlement_wallet.as_str(), &self.amount_due.to_units())
    }
}

/// The EIP-681 URI of an ERC-20 `transfer` of `units` (the token's smallest units) of `token` to
/// `to` on `chain_id`: what a wallet opens when it scans the code.
pub fn transfer_uri(token: &str, chain_id: u64, to: &str, units: &str) -> String {
    format!("ethereum:{token}@{chain_id}/transfer?address={to}&uint256={units}")
}

/// An invoice as the holder of its hosted link sees it.
#[derive(Clone, Debug)]
pub struct InvoiceView {
    /// The invoice with its sessions and payments.
    pub aggregate: InvoiceAggregate,
    /// The merchant's name.
    pub merchant_name: String,
    /// Where the merchant's customers ask for help, when set.
    pub support_email: Option<String>,
    /// The merchant's logo, when set.
    pub logo: Option<crate::merchant::logo::Logo>,
    /// The invoice's time (its merchant's test clock in test mode).
    pub now: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_request_is_an_eip_681_uri() {
        let uri = transfer_uri("0xToken", 137, "0xWallet", "84000000");
        assert_eq!(uri, "ethereum:0xToken@137/transfer?address=0xWallet&uint256=84000000");
    }
}
