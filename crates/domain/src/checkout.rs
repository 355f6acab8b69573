//! Checkout sessions: a hosted page collecting one amount for one invoice.

use chrono::{DateTime, Utc};

use crate::ids::{CheckoutSessionId, InvoiceId};
use crate::merchant::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::Amount;
use crate::url::HttpUrl;

pub const MIN_EXPIRY_MINUTES: u32 = 5;
pub const MAX_EXPIRY_MINUTES: u32 = 1440;
pub const DEFAULT_EXPIRY_MINUTES: u32 = 30;

/// `pending` (payable), `completed` (payments on it cover its amountDue, or the invoice is
/// paid), `expired` (expiresAt passed first), `cancelled` (its invoice's collection closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckoutStatus {
    Pending,
    Completed,
    Expired,
    Cancelled,
}

impl CheckoutStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Completed => "completed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "pending" => Some(Self::Pending),
            "completed" => Some(Self::Completed),
            "expired" => Some(Self::Expired),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutSession {
    pub id: CheckoutSessionId,
    pub scope: Scope,
    pub invoice_id: InvoiceId,
    pub status: CheckoutStatus,
    /// What this session collects (for a remainder checkout, only the remainder).
    pub amount_due: Amount,
    pub currency: Token,
    /// The chain and token contract a transfer must use (configured when it was created).
    pub chain_id: u64,
    pub token_contract: WalletAddress,
    pub settlement_wallet: WalletAddress,
    pub external_reference: Option<String>,
    pub customer_email: Option<String>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl CheckoutSession {
    /// Whether a payment can be made on it at `now`.
    pub fn is_payable(&self, now: DateTime<Utc>) -> bool {
        self.status == CheckoutStatus::Pending && now < self.expires_at
    }
}
