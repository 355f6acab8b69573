//! The chain port and the verification rules every payment goes through, in test mode (the
//! simulated transfer of the test helpers) and in live mode (Polygon) alike.
//!
//! A transaction is verified against what its checkout expects: it succeeded, on the expected
//! chain, with ERC-20 `Transfer` logs of the session's token contract to the session's
//! settlement wallet (summed exactly), mined before the checkout expired, for a non-zero amount.
//! Whether the hash was credited before is decided by the store's unique index when crediting.

use chrono::{DateTime, Utc};

use crate::event::model::EventData;
use crate::ids::{CheckoutSessionId, InvoiceId, PaymentId, UnattributedTransferId};
use crate::invoice::checkout::{Binding, amount_due_now};
use crate::invoice::payment::{BlockRef, TxHash};
use crate::invoice::wallet::AuthorizationNonce;
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
    /// The nonce of the EIP-3009 authorization that made this transfer: the token's
    /// `AuthorizationUsed` log that immediately follows this `Transfer` log in its transaction,
    /// of the same contract and by the same `from` (the chain adapter pairs them).
    pub authorization: Option<AuthorizationNonce>,
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

/// Which `Transfer` logs to read: those of `tokens` to `wallets` in blocks `from..=to`
/// (`blocks`), read as `pass` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferQuery {
    /// The first and the last block, both included.
    pub blocks: (u64, u64),
    /// The token contracts.
    pub tokens: Vec<WalletAddress>,
    /// The recipients.
    pub wallets: Vec<WalletAddress>,
    /// Which reading it is.
    pub pass: ScanPass,
}

/// Which reading of a range of final blocks a scan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanPass {
    /// The follower's reading as the blocks become final.
    First,
    /// The second reading of a range, after a delay, through another endpoint where there is
    /// one: what a lagging or lying endpoint left out of the first is found here.
    Second,
}

/// What a scan of a range of blocks for transfer logs found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferScan {
    /// The logs, in block and log order.
    pub logs: Vec<LoggedTransfer>,
    /// Blocks whose answer could not be confirmed complete: their header's `logsBloom` says a
    /// watched transfer may be in them, and no endpoint returned one (a node that has not
    /// indexed them yet answers nothing; a busy block fills the bloom).
    pub uncertain: Vec<u64>,
    /// Endpoints that answered differently for the range (one left out logs another returned).
    pub disagreements: u64,
}

/// Where a transfer log stands with the payments that may claim it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogClaim {
    /// A credited payment counted it: nothing more to do.
    Credited,
    /// Payments still being verified claim it (a reported hash paying the same wallet and
    /// token, or a payment recorded for this log), for these checkouts: decided once they are,
    /// unless stronger evidence names another checkout.
    InFlight(Vec<CheckoutSessionId>),
    /// Nothing claims it: no payment, or only failed ones and ones paying other wallets.
    Free,
}

/// A live checkout that may take a transfer mined at a given time, as attribution sees it: it
/// expires after that time and was created before it (or a little after, within the clock
/// skew allowed, for evidence the transfer itself carries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCheckout {
    /// The checkout's merchant and mode.
    pub scope: Scope,
    /// The checkout.
    pub session_id: CheckoutSessionId,
    /// Its invoice: checkouts of one invoice (a remainder's and its first) credit the same
    /// invoice, so evidence naming several of them names one invoice.
    pub invoice_id: InvoiceId,
    /// What it asks (with its unique-amount offset).
    pub amount_due: Amount,
    /// Its unique-amount offset (zero without unique amounts).
    pub amount_offset: Amount,
    /// What its invoice still has to collect.
    pub invoice_remaining: Amount,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// The wallets wallet payment attempts bound to it.
    pub bindings: Vec<Binding>,
}

impl OpenCheckout {
    /// What it asks now: its amount, or its invoice's remainder when less (partly paid).
    pub fn due_now(&self) -> Amount {
        amount_due_now(&self.amount_due, &self.amount_due.saturating_sub(&self.amount_offset), &self.invoice_remaining)
    }

    /// Whether what it asks now is an amount no other open checkout of its wallet and token
    /// asks: a unique-amount checkout not partly paid (the database's unique index holds it).
    pub fn asks_unique_amount(&self) -> bool {
        !self.amount_offset.is_zero() && self.due_now() == self.amount_due
    }
}

/// What may name a transfer among the checkouts of its wallet: the checkouts asking its amount
/// now, those its sender's wallet is bound to, and those its hash was reported for. Attribution
/// reads only these (and whether any other checkout was open), never every open checkout of a
/// wallet: a wallet may have thousands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// What the transfer moved.
    pub amount: Amount,
    /// Whose tokens moved (`None`: a wallet nobody bound, as a scanned payment is weighed).
    pub from: Option<WalletAddress>,
    /// The checkouts its hash was reported for.
    pub reported: Vec<CheckoutSessionId>,
    /// The nonce of the EIP-3009 authorization that made it, which names the checkout whose
    /// wallet payment attempt it was derived for.
    pub authorization: Option<AuthorizationNonce>,
}

/// Which checkouts may take a transfer: those into `wallet` of `token_contract` open when it
/// was mined at `at` (created at or before `at` plus `early`, to the second) that `naming` may
/// name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CandidateQuery {
    /// The settlement wallet it paid.
    pub wallet: WalletAddress,
    /// The token contract it moved.
    pub token_contract: WalletAddress,
    /// Its block's time.
    pub at: DateTime<Utc>,
    /// How much later than `at` a checkout may have been created (the chain's clock may run
    /// behind the service's).
    pub early: chrono::Duration,
    /// What may name a checkout.
    pub naming: Naming,
}

/// The checkouts a [`Naming`] may name at a block's time, and whether any checkout of the
/// wallet and token was open then at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidates {
    /// The checkouts that may be named.
    pub named: Vec<OpenCheckout>,
    /// Some checkout of the wallet and token existed and had not expired at the block's time
    /// (named or not): an unnamed transfer then matched no amount, rather than no checkout.
    pub any_open: bool,
}

impl Candidates {
    /// Adds `other`'s checkouts (once each).
    pub fn merge(&mut self, other: Candidates) {
        self.any_open |= other.any_open;
        for c in other.named {
            if !self.named.iter().any(|n| n.session_id == c.session_id) {
                self.named.push(c);
            }
        }
    }
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
    /// Evidence of equal strength names several checkouts (reports of the hash for different
    /// checkouts, or a report against another checkout's exact amount): held for a person.
    Disputed,
}

impl UnattributedReason {
    /// Every reason.
    pub const ALL: [UnattributedReason; 6] = [
        Self::NoOpenCheckout,
        Self::NoMatchingAmount,
        Self::SeveralMatchingCheckouts,
        Self::AmountOutOfRange,
        Self::VerificationFailed,
        Self::Disputed,
    ];

    /// The reason as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoOpenCheckout => "no_open_checkout",
            Self::NoMatchingAmount => "no_matching_amount",
            Self::SeveralMatchingCheckouts => "several_matching_checkouts",
            Self::AmountOutOfRange => "amount_out_of_range",
            Self::VerificationFailed => "verification_failed",
            Self::Disputed => "disputed",
        }
    }

    /// Reads a reason as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// Whether an unattributed transfer still waits for a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnattributedStatus {
    /// Nobody was credited with it: listed for the merchant to decide.
    Open,
    /// It was credited since, by any path (a report, the follower, a person): it leaves the
    /// open list and counts once, as the payment that credited it.
    Attributed,
}

impl UnattributedStatus {
    /// Every status.
    pub const ALL: [UnattributedStatus; 2] = [Self::Open, Self::Attributed];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Attributed => "attributed",
        }
    }

    /// Reads a status as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
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
    /// The merchant's checkouts the evidence names (a dispute, or several matching amounts):
    /// one of them is likely the customer's. Empty for the other reasons.
    pub candidates: Vec<CheckoutSessionId>,
    /// When it was found.
    pub detected_at: DateTime<Utc>,
    /// Whether it still waits for a decision.
    pub status: UnattributedStatus,
    /// The payment that credited it since, when that payment is the merchant's (another
    /// merchant sharing the wallet may have been credited instead: then `None`).
    pub payment_id: Option<PaymentId>,
    /// When it was credited.
    pub attributed_at: Option<DateTime<Utc>>,
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
            ("candidates", EventData::List(self.candidates.iter().map(s).collect())),
            ("status", s(self.status.as_str())),
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
