//! The chain port and the verification rules every payment goes through, in test mode (the
//! simulated transfer of the test helpers) and in live mode (Polygon) alike.
//!
//! A transaction is verified against what its checkout expects: it succeeded, on the expected
//! chain, with ERC-20 `Transfer` logs of the session's token contract to the session's
//! settlement wallet (summed exactly), mined before the checkout expired, for a non-zero amount.
//! Whether the hash was credited before is decided by the store's unique index when crediting.

use chrono::{DateTime, Utc};

use crate::event::model::EventData;
use crate::ids::{CheckoutSessionId, UnattributedTransferId};
use crate::invoice::payment::{BlockRef, TxHash};
use crate::merchant::model::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::Amount;

/// One ERC-20 `Transfer` log, its value in the token's 6-decimal units. A transfer log (its
/// transaction, its index and its recipient) is the unit of attribution: each is credited to one
/// checkout or recorded as unattributed, once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenTransfer {
    /// The log's index in its block.
    pub log_index: u64,
    /// The token's contract.
    pub token_contract: WalletAddress,
    /// Who sent the tokens.
    pub from: WalletAddress,
    /// Who received them.
    pub to: WalletAddress,
    /// How much moved.
    pub amount: Amount,
}

/// A transaction as the chain reports it: where it was included, whether it succeeded, the
/// token transfers it made, and whether its block is final.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedTransaction {
    /// The transaction's hash.
    pub tx_hash: TxHash,
    /// The chain it is on.
    pub chain_id: u64,
    /// False when the transaction reverted.
    pub succeeded: bool,
    /// The block it was included in.
    pub block: BlockRef,
    /// That block's time.
    pub block_time: DateTime<Utc>,
    /// The account that sent the transaction.
    pub sender: Option<WalletAddress>,
    /// The token transfers it made.
    pub transfers: Vec<TokenTransfer>,
    /// At or below the node's finalized block (or, where the node has no `finalized` tag, the
    /// configured number of confirmations deep). Only a final transfer is credited.
    pub finalized: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// What the chain says about a transaction.
pub enum Observation {
    /// The chain does not know the transaction (yet, or any more after a reorganisation).
    NotFound,
    /// Included in a block, as observed.
    Included(ObservedTransaction),
}

/// A transfer to a watched wallet, found by following the chain's logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedTransfer {
    /// The transaction's hash.
    pub tx_hash: TxHash,
    /// The block it is in.
    pub block: BlockRef,
    /// That block's time: what attribution and verification decide expiry on.
    pub block_time: DateTime<Utc>,
    /// The transfer (with its log index).
    pub transfer: TokenTransfer,
}

/// Where a transfer log stands with the payments that may claim it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogClaim {
    /// A credited payment counted it: nothing more to do.
    Credited,
    /// A payment still being verified claims it (a reported hash paying the same wallet and
    /// token, or a payment the follower recorded for this log): decided once that payment is.
    InFlight,
    /// Nothing claims it: no payment, or only failed ones and ones paying other wallets.
    Free,
}

/// A live checkout that takes a transfer mined at a given time, as attribution sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCheckout {
    /// The checkout's merchant and mode.
    pub scope: Scope,
    /// The checkout.
    pub session_id: CheckoutSessionId,
    /// What it asks for.
    pub amount_due: Amount,
    /// The customer's wallet, when the hosted page connected one: only its transfers pay it.
    pub payer: Option<WalletAddress>,
}

/// Why a transfer to a merchant's wallet was not attributed to a checkout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnattributedReason {
    /// No checkout of that wallet and token was open.
    NoOpenCheckout,
    /// Open checkouts exist, but none asks for exactly this amount.
    NoMatchingAmount,
    /// Several open checkouts ask for exactly this amount.
    SeveralMatchingCheckouts,
    /// The amount is beyond anything a stablecoin can hold (see
    /// [`max_transfer_amount`](crate::chain::verify::max_transfer_amount)): recorded, never credited.
    AmountOutOfRange,
    /// It was attributed to the one checkout asking for its amount, but that payment failed
    /// verification.
    VerificationFailed,
}

impl UnattributedReason {
    /// Every reason.
    pub const ALL: [UnattributedReason; 5] = [
        Self::NoOpenCheckout,
        Self::NoMatchingAmount,
        Self::SeveralMatchingCheckouts,
        Self::AmountOutOfRange,
        Self::VerificationFailed,
    ];

    /// The reason as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoOpenCheckout => "no_open_checkout",
            Self::NoMatchingAmount => "no_matching_amount",
            Self::SeveralMatchingCheckouts => "several_matching_checkouts",
            Self::AmountOutOfRange => "amount_out_of_range",
            Self::VerificationFailed => "verification_failed",
        }
    }

    /// Reads a reason as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// A transfer into a merchant's live settlement wallet that no checkout could be credited
/// with. It is recorded (with an event) for the merchant to reconcile: never guessed, never
/// lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnattributedTransfer {
    /// The transfer's id (`utr_...`).
    pub id: UnattributedTransferId,
    /// The merchant and mode whose wallet received it.
    pub scope: Scope,
    /// The chain it happened on.
    pub chain_id: u64,
    /// The transfer, as logged.
    pub logged: LoggedTransfer,
    /// The token it moved.
    pub token: Token,
    /// Why it could not be credited.
    pub reason: UnattributedReason,
    /// When it was found.
    pub detected_at: DateTime<Utc>,
}

impl UnattributedTransfer {
    /// The data of its `payment.unattributed` event: the fields of the unattributed transfer as
    /// `GET /v1/unattributed-transfers` lists it (and, as events carried it first, the block's
    /// number as `blockNumber`).
    pub fn event_data(&self) -> EventData {
        fn s(v: impl ToString) -> EventData {
            EventData::string(v)
        }
        let int = |n: u64| EventData::Int(i64::try_from(n).unwrap_or(i64::MAX));
        let t = &self.logged.transfer;
        let block = &self.logged.block;
        EventData::map([
            ("object", s("unattributed_transfer")),
            ("id", s(&self.id)),
            ("mode", s(self.scope.mode.as_str())),
            ("chainId", int(self.chain_id)),
            ("transactionHash", s(self.logged.tx_hash.as_str())),
            ("logIndex", int(t.log_index)),
            ("block", EventData::map([("number", int(block.number)), ("hash", s(&block.hash))])),
            ("blockNumber", int(block.number)),
            ("currencyCode", s(self.token.symbol())),
            ("tokenContract", s(&t.token_contract)),
            ("from", s(&t.from)),
            ("to", s(&t.to)),
            ("amount", s(&t.amount)),
            ("reason", s(self.reason.as_str())),
            ("detectedAt", s(self.detected_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))),
        ])
    }
}

/// Whether live verification can run, for readiness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainHealth {
    /// No RPC endpoint configured: live payments wait as detected.
    Off,
    /// An endpoint answers on the expected chain.
    Ok,
    /// No endpoint answers now (verification retries).
    Unreachable(String),
    /// The endpoints answer for another chain: live payments are not verified.
    WrongChain(String),
}
