//! Checkout sessions: a hosted page collecting one amount for one invoice.

use chrono::{DateTime, Utc};

use crate::ids::{CheckoutSessionId, InvoiceId};
use crate::merchant::model::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::Amount;
use crate::url::HttpUrl;

/// The shortest checkout, in minutes.
pub const MIN_EXPIRY_MINUTES: u32 = 5;
/// The longest checkout, in minutes (a day).
pub const MAX_EXPIRY_MINUTES: u32 = 1440;
/// A checkout's life when none is asked for, in minutes.
pub const DEFAULT_EXPIRY_MINUTES: u32 = 30;

/// `pending` (payable), `completed` (payments on it cover its amountDue, or the invoice is
/// paid), `expired` (expiresAt passed first), `cancelled` (its invoice's collection closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckoutStatus {
    /// Waiting for the customer's transfer.
    Pending,
    /// Paid: the invoice's payment covered what it asked for.
    Completed,
    /// Its time ran out unpaid.
    Expired,
    /// The invoice was closed (voided or marked uncollectible) while it was open.
    Cancelled,
}

impl CheckoutStatus {
    /// Every status.
    pub const ALL: [CheckoutStatus; 4] = [Self::Pending, Self::Completed, Self::Expired, Self::Cancelled];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Completed => "completed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    /// Reads a status as the API writes it.
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
/// A hosted checkout: one attempt to collect (part of) an invoice, with the chain, token and wallet
/// the customer pays to and a deadline.
pub struct CheckoutSession {
    /// The session id (`cs_...`).
    pub id: CheckoutSessionId,
    /// The merchant and mode.
    pub scope: Scope,
    /// The invoice it collects for.
    pub invoice_id: InvoiceId,
    /// Its status.
    pub status: CheckoutStatus,
    /// What this session asks the customer to send: what it collects (for a remainder checkout,
    /// only the remainder) plus `amount_offset`.
    pub amount_due: Amount,
    /// The few base units a unique-amount checkout adds to what it collects, so that no other
    /// open checkout of the wallet asks the same amount (zero otherwise). Paid, they reach the
    /// merchant's wallet (`merchantAmountSettled`) but are not credited to the invoice.
    pub amount_offset: Amount,
    /// The token it settles in.
    pub currency: Token,
    /// The chain and token contract a transfer must use (configured when it was created).
    pub chain_id: u64,
    /// The token's contract on the chain.
    pub token_contract: WalletAddress,
    /// The merchant's wallet the transfer goes to (never the service's).
    pub settlement_wallet: WalletAddress,
    /// The merchant's reference.
    pub external_reference: Option<String>,
    /// The customer's email, if given.
    pub customer_email: Option<String>,
    /// Where the hosted page returns after payment.
    pub success_url: Option<HttpUrl>,
    /// Where it returns on cancel.
    pub cancel_url: Option<HttpUrl>,
    /// When it expires unpaid.
    pub expires_at: DateTime<Utc>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was completed (paid).
    pub completed_at: Option<DateTime<Utc>>,
}

/// A wallet a wallet payment attempt bound to a checkout: evidence that its transfers are for
/// that checkout, never a restriction (a checkout keeps every wallet bound to it, so nobody can
/// unbind its customer's by binding another).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The wallet the hosted page connected.
    pub wallet: WalletAddress,
    /// When it was first bound.
    pub bound_at: DateTime<Utc>,
    /// The EIP-3009 authorization nonces derived for its attempts (a transfer carrying one pays
    /// this checkout, whatever else names another).
    pub nonces: Vec<crate::invoice::wallet::AuthorizationNonce>,
}

/// The most wallets one checkout keeps bound: anyone holding a checkout id can bind wallets to
/// it, so the list is bounded; attempts beyond it still answer, without adding evidence.
pub const MAX_BINDINGS: usize = 20;

/// What a checkout asking `amount_due` (of which it collects `collects`) asks now, when its
/// invoice still has `remaining` to collect: its amount, or the remainder when less (after a
/// partial payment). The hosted page shows it, and attribution matches transfers against it.
pub fn amount_due_now(amount_due: &Amount, collects: &Amount, remaining: &Amount) -> Amount {
    if remaining >= collects { amount_due.clone() } else { remaining.clone() }
}

impl CheckoutSession {
    /// What the session collects for the invoice: what it asks, less its unique-amount offset.
    pub fn collects(&self) -> Amount {
        self.amount_due.saturating_sub(&self.amount_offset)
    }

    /// What it asks now, when its invoice still has `remaining` to collect
    /// ([`amount_due_now`]).
    pub fn due_now(&self, remaining: &Amount) -> Amount {
        amount_due_now(&self.amount_due, &self.collects(), remaining)
    }

    /// Whether its time is up at `now` (from its expiry on, inclusive): the one answer to "has
    /// this checkout expired", whatever its status says yet.
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        now >= self.expires_at
    }

    /// Whether a payment can be made on it at `now`.
    pub fn is_payable(&self, now: DateTime<Utc>) -> bool {
        self.status == CheckoutStatus::Pending && !self.expired(now)
    }
}
