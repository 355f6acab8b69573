//! What the billing use cases take and answer, besides the aggregate itself.

use crate::ids::{CheckoutSessionId, PaymentId};
use crate::invoice::aggregate::InvoiceAggregate;
use crate::invoice::model::Metadata;
use crate::merchant::WalletAddress;
use crate::money::Amount;
use crate::payment::TxHash;
use crate::url::HttpUrl;

/// Longest close reason, in UTF-8 bytes.
pub const MAX_REASON_BYTES: usize = 500;

/// `POST /v1/checkout-sessions` input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutInput {
    pub amount: Option<Amount>,
    pub external_reference: Option<String>,
    pub customer_email: Option<String>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
    pub metadata: Option<Metadata>,
    pub expires_in_minutes: Option<i64>,
}

/// Legacy amount-only invoice input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmountOnlyInput {
    pub amount: Option<Amount>,
    pub external_reference: Option<String>,
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
    Void,
    VoidRemaining,
    MarkUncollectible,
}

/// A refund performed elsewhere, to be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundInput {
    pub payment_id: PaymentId,
    pub amount: Amount,
    pub reason: String,
    pub external_transaction_hash: TxHash,
    pub chain_id: u64,
    pub token_contract: WalletAddress,
}

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
    pub aggregate: InvoiceAggregate,
    pub session_id: CheckoutSessionId,
    pub reused: bool,
}
