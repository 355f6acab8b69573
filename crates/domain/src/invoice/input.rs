//! What the invoice use cases take and answer, besides the aggregate itself.

use crate::ids::CheckoutSessionId;
use crate::invoice::aggregate::InvoiceAggregate;
use crate::invoice::collection::{self, CollectionTrigger};
use crate::invoice::model::{Invoice, Metadata, Refund};
use crate::invoice::payment::TxHash;
use crate::money::Amount;
use crate::url::HttpUrl;

/// Longest close reason, in UTF-8 bytes.
pub const MAX_REASON_BYTES: usize = 500;

/// `POST /v1/checkout-sessions` input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutInput {
    /// What the checkout collects (required, positive).
    pub amount: Option<Amount>,
    /// The merchant's reference (up to 255 bytes).
    pub external_reference: Option<String>,
    /// The customer's email (secret key only).
    pub customer_email: Option<String>,
    /// Where the hosted page returns after payment.
    pub success_url: Option<HttpUrl>,
    /// Where it returns when the customer cancels.
    pub cancel_url: Option<HttpUrl>,
    /// Copied to the invoice (up to 16 KiB).
    pub metadata: Option<Metadata>,
    /// How long the checkout stays open (5-1440 minutes, default 30).
    pub expires_in_minutes: Option<i64>,
}

/// Legacy amount-only invoice input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmountOnlyInput {
    /// The invoice's amount (required, positive).
    pub amount: Option<Amount>,
    /// The merchant's reference.
    pub external_reference: Option<String>,
    /// Copied to the invoice.
    pub metadata: Option<Metadata>,
}

impl From<AmountOnlyInput> for CheckoutInput {
    fn from(i: AmountOnlyInput) -> Self {
        CheckoutInput {
            amount: i.amount,
            external_reference: i.external_reference,
            metadata: i.metadata,
            ..Default::default()
        }
    }
}

/// How a merchant closes collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseAction {
    /// Void an invoice that received no payment.
    Void,
    /// Close the rest of a partly paid invoice.
    VoidRemaining,
    /// Mark the invoice uncollectible.
    MarkUncollectible,
}

impl CloseAction {
    /// The collection machine's trigger for closing `invoice` this way (void-remaining needs a
    /// payment received).
    pub fn trigger(self, invoice: &Invoice) -> CollectionTrigger {
        match self {
            Self::Void => CollectionTrigger::Void,
            Self::VoidRemaining => {
                CollectionTrigger::VoidRemaining { has_payments: !invoice.customer_amount_paid.is_zero() }
            }
            Self::MarkUncollectible => CollectionTrigger::MarkUncollectible,
        }
    }

    /// Whether this action may close `invoice` now: the collection machine's own answer, the
    /// one the close follows, so a page that offers the action cannot drift from the rule.
    pub fn allowed(self, invoice: &Invoice) -> bool {
        collection::transition(invoice.collection_state, self.trigger(invoice)).is_ok()
    }
}

/// A refund performed elsewhere, to be recorded: its amount at most what the payment credited,
/// less earlier refunds; its reason 1-500 bytes; its chain 137.
pub type RefundInput = Refund;

/// A simulated payment (test helpers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestPaymentInput {
    /// Default: what the session still asks for.
    pub amount: Option<Amount>,
    /// Default: a random hash.
    pub transaction_hash: Option<TxHash>,
    /// False simulates a reverted transfer.
    pub succeed: bool,
}

/// The answer to opening a remainder checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedCheckout {
    /// The invoice with its sessions.
    pub aggregate: InvoiceAggregate,
    /// The checkout to send the customer to.
    pub session_id: CheckoutSessionId,
    /// True when an open checkout for the remainder already existed and is answered again.
    pub reused: bool,
}
