//! The relayer's model: a customer's signed EIP-3009 authorization that the service submits
//! for them, paying the gas (the customer needs no POL), what is checked before anything is
//! sent, the status a submission goes through, the fees of its transaction and of each
//! replacement, and the day's gas budget.
//!
//! The relayer signs exactly one kind of transaction: `transferWithAuthorization` of a
//! customer's own signed authorization, to the configured token contract, with no value. Its
//! nonce (the relayer account's, not the authorization's) is handed out by the store with the
//! transaction it signs, so two workers never send two transactions with one nonce, and a
//! nonce handed out is always seen through to a mined transaction (replaced with higher fees
//! while it waits), so no later transaction waits behind a gap.

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::error::Error;
use crate::ids::{CheckoutSessionId, RelayId};
use crate::invoice::payment::TxHash;
use crate::invoice::wallet::AuthorizationTerms;
use crate::merchant::model::WalletAddress;
use crate::mode::Scope;
use crate::money::Amount;

/// The least time, by the chain's clock, an authorization must still be valid for the relayer
/// to take it: it has to be mined before `validBefore`.
pub const MIN_VALIDITY_SECONDS: i64 = 60;

/// How long the sender's lease lasts (renewed by every pass): one worker of all replicas sends
/// relayer transactions at a time.
pub const SENDER_LEASE_SECONDS: u32 = 30;

/// The most gas one submission may take: a token's `transferWithAuthorization` takes far less
/// (about 60,000 to 90,000); a call that needs more is refused rather than paid for.
pub const MAX_GAS_PER_SUBMISSION: u64 = 250_000;

/// The gas a typical submission takes, for telling how many more the relayer's balance pays.
pub const TYPICAL_GAS: u64 = 100_000;

/// Below this many typical submissions' worth of fees, readiness says the balance is low.
pub const LOW_BALANCE_SUBMISSIONS: u128 = 20;

/// Wei per gwei.
pub const GWEI: u128 = 1_000_000_000;

/// Wei as POL (18 decimals), exactly: `1500000000000000000` is `1.5`.
pub fn pol(wei: u128) -> String {
    const WEI_PER_POL: u128 = 1_000_000_000_000_000_000;
    let (whole, fraction) = (wei / WEI_PER_POL, wei % WEI_PER_POL);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:018}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// How the operator configured the relayer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaySettings {
    /// The gas the relayer may spend per UTC day, reserved when a submission is accepted (its
    /// gas limit) and counted as used once mined.
    pub daily_gas_limit: u64,
    /// The highest fee per gas (wei) the relayer offers, replacements included.
    pub max_fee_per_gas: u128,
    /// How long a sent transaction waits unmined before it is replaced with higher fees.
    pub bump_after: Duration,
}

impl Default for RelaySettings {
    fn default() -> Self {
        Self { daily_gas_limit: 10_000_000, max_fee_per_gas: 1_000 * GWEI, bump_after: Duration::seconds(30) }
    }
}

/// Half the order of secp256k1: signatures with a larger `s` are malleable and refused (EIP-2).
const HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d, 0x57, 0x6e,
    0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

/// A 65-byte secp256k1 signature as wallets answer `eth_signTypedData_v4`: `r`, `s`, `v`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// `r`.
    pub r: [u8; 32],
    /// `s`, at most half the curve's order.
    pub s: [u8; 32],
    /// `v`: 27 or 28.
    pub v: u8,
}

impl Signature {
    /// Reads `0x` and 130 hex digits (`r`, `s`, `v`; `v` 0, 1, 27 or 28), refusing a malleable
    /// `s`; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix("0x")?;
        if digits.len() != 130 {
            return None;
        }
        let byte = |i: usize| u8::from_str_radix(digits.get(2 * i..2 * i + 2)?, 16).ok();
        let mut r = [0u8; 32];
        let mut s = [0u8; 32];
        for i in 0..32 {
            r[i] = byte(i)?;
            s[i] = byte(32 + i)?;
        }
        let v = match byte(64)? {
            0 | 27 => 27,
            1 | 28 => 28,
            _ => return None,
        };
        (s <= HALF_ORDER).then_some(Self { r, s, v })
    }

    /// The 65 bytes, `r`, `s`, `v`.
    pub fn bytes(&self) -> [u8; 65] {
        let mut out = [0u8; 65];
        out[..32].copy_from_slice(&self.r);
        out[32..64].copy_from_slice(&self.s);
        out[64] = self.v;
        out
    }

    /// Reads the 65 bytes [`Signature::bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self::parse(&format!("0x{hex}"))
    }
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: String = self.bytes().iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "0x{hex}")
    }
}

/// An authorization's terms, as the service offered them, with the payer's signature:
/// everything `transferWithAuthorization` takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedAuthorization {
    /// What the payer was asked to sign (kept with the attempt).
    pub terms: AuthorizationTerms,
    /// The payer's signature.
    pub signature: Signature,
}

/// The EIP-1559 fees of a transaction, in wei per gas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fees {
    /// `maxFeePerGas`.
    pub max_fee_per_gas: u128,
    /// `maxPriorityFeePerGas`.
    pub max_priority_fee_per_gas: u128,
}

impl Fees {
    /// These fees with the fee per gas at most `cap` (and the tip never above it).
    pub fn capped(self, cap: u128) -> Self {
        let max_fee_per_gas = self.max_fee_per_gas.min(cap);
        Self { max_fee_per_gas, max_priority_fee_per_gas: self.max_priority_fee_per_gas.min(max_fee_per_gas) }
    }

    /// The fees of a replacement of a transaction sent with these: each at least an eighth more
    /// (nodes take a replacement with at least a tenth more of both) and at least what is
    /// `suggested` now, within `cap`. `None` when the cap leaves no room for a replacement (the
    /// transaction is sent again as it is).
    pub fn bumped(&self, suggested: &Fees, cap: u128) -> Option<Fees> {
        let up = |v: u128| v.saturating_add(v / 8).saturating_add(1);
        let wanted = Fees {
            max_fee_per_gas: up(self.max_fee_per_gas).max(suggested.max_fee_per_gas),
            max_priority_fee_per_gas: up(self.max_priority_fee_per_gas).max(suggested.max_priority_fee_per_gas),
        }
        .capped(cap);
        let enough = |new: u128, old: u128| new >= old.saturating_add(old / 10).saturating_add(1);
        (enough(wanted.max_fee_per_gas, self.max_fee_per_gas)
            && enough(wanted.max_priority_fee_per_gas, self.max_priority_fee_per_gas))
        .then_some(wanted)
    }

    /// The most `gas` can cost at these fees, in wei.
    pub fn worst_cost(&self, gas: u64) -> u128 {
        self.max_fee_per_gas.saturating_mul(u128::from(gas))
    }
}

/// Where a submission stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelayStatus {
    /// Accepted; waiting for the sender.
    Queued,
    /// Its transaction is sent (and replaced with higher fees while it waits).
    Sent,
    /// Its transaction was mined and moved the payment: the checkout is paid by the nonce.
    Confirmed,
    /// Another transaction used the authorization first; that transfer pays the checkout.
    FrontRun,
    /// Its `validBefore` passed before a transaction of it was mined: it can no longer pay.
    Expired,
    /// The token refused it (the payer's balance moved, the call reverted): it did not pay.
    Failed,
    /// Its checkout was paid, expired or closed before it was sent: nothing was sent.
    Cancelled,
}

impl RelayStatus {
    /// Every status.
    pub const ALL: [RelayStatus; 7] =
        [Self::Queued, Self::Sent, Self::Confirmed, Self::FrontRun, Self::Expired, Self::Failed, Self::Cancelled];

    /// As the API and the store write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Sent => "sent",
            Self::Confirmed => "confirmed",
            Self::FrontRun => "front_run",
            Self::Expired => "expired",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Reads [`RelayStatus::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The outcome is known (a transaction of it may still be waiting to be mined: see
    /// [`Relay::in_flight`]).
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Queued | Self::Sent)
    }
}

/// One version of a submission's transaction (the first, or a replacement with higher fees).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayTransaction {
    /// Its hash.
    pub hash: TxHash,
    /// The signed bytes, as broadcast (kept to broadcast them again).
    pub raw: Vec<u8>,
    /// Its fees.
    pub fees: Fees,
    /// When it was signed.
    pub signed_at: DateTime<Utc>,
}

/// A submission's transaction broadcast again: when, and the version with higher fees (same
/// nonce) that replaced it, when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rebroadcast {
    /// When.
    pub at: DateTime<Utc>,
    /// The replacement, if the fees were raised.
    pub replacement: Option<RelayTransaction>,
}

/// A transaction of the relayer as mined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayReceipt {
    /// The version that was mined.
    pub hash: TxHash,
    /// Whether it succeeded.
    pub succeeded: bool,
    /// Its block.
    pub block_number: u64,
    /// The gas it used.
    pub gas_used: u64,
    /// What it cost, in wei.
    pub fee_wei: u128,
}

/// A customer's authorization submitted to the relayer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relay {
    /// Its id.
    pub id: RelayId,
    /// The checkout's merchant and mode (live).
    pub scope: Scope,
    /// The checkout it pays.
    pub session_id: CheckoutSessionId,
    /// What the payer signed.
    pub authorization: SignedAuthorization,
    /// The relayer's account that sends it.
    pub relayer: WalletAddress,
    /// Where it stands.
    pub status: RelayStatus,
    /// The gas limit of its transaction (reserved in the day's budget until mined).
    pub gas_limit: u64,
    /// The relayer's nonce its transaction carries, once it was first signed.
    pub tx_nonce: Option<u64>,
    /// Every version of its transaction, first first.
    pub transactions: Vec<RelayTransaction>,
    /// When a version was last broadcast.
    pub broadcast_at: Option<DateTime<Utc>>,
    /// Its transaction as mined.
    pub receipt: Option<RelayReceipt>,
    /// What happened, in words, for the customer and support.
    pub detail: Option<String>,
    /// When it was accepted.
    pub created_at: DateTime<Utc>,
}

impl Relay {
    /// A submission of `authorization` to checkout `session` of `scope`, accepted at `now` for
    /// `relayer` to send with `gas_limit`: queued, nothing sent yet.
    pub fn queued(
        crypto: &dyn crate::crypto::Crypto,
        (scope, session_id): (Scope, CheckoutSessionId),
        (authorization, relayer): (SignedAuthorization, WalletAddress),
        gas_limit: u64,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: RelayId::generate(crypto),
            scope,
            session_id,
            authorization,
            relayer,
            status: RelayStatus::Queued,
            gas_limit,
            tx_nonce: None,
            transactions: Vec::new(),
            broadcast_at: None,
            receipt: None,
            detail: None,
            created_at: now,
        }
    }

    /// The version broadcast last.
    pub fn latest(&self) -> Option<&RelayTransaction> {
        self.transactions.last()
    }

    /// The hash of its transaction: the mined version, else the latest sent.
    pub fn transaction_hash(&self) -> Option<&TxHash> {
        self.receipt.as_ref().map(|r| &r.hash).or(self.latest().map(|t| &t.hash))
    }

    /// A transaction of it may still be mined: the sender sees its nonce through.
    pub fn in_flight(&self) -> bool {
        self.tx_nonce.is_some() && self.receipt.is_none()
    }
}

/// What the chain says, just now, of an authorization the relayer may submit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preflight {
    /// The time of the chain's newest block.
    pub chain_time: DateTime<Utc>,
    /// `authorizationState(from, nonce)`: the nonce is used.
    pub used: bool,
    /// The payer's token balance.
    pub payer_balance: Amount,
    /// The exact call simulated from the relayer (`eth_call`, then `eth_estimateGas`): the gas
    /// it takes, or the token's reason for refusing it.
    pub call: Result<u64, String>,
}

/// Why the relayer does not send an authorization, found before sending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Past `validBefore`, too close to it, or not yet valid, by the chain's clock.
    Expired,
    /// The nonce is used already.
    Used,
    /// The payer holds less than the value.
    PayerBalance {
        /// What the payer holds.
        balance: Amount,
    },
    /// The token refuses the call, or it needs more gas than a submission may take.
    Rejected(String),
}

impl Refusal {
    /// What the chain says of `terms` now, checked in this order: the validity window, the
    /// nonce, the payer's balance, the simulated call; `None` when it may be sent.
    pub fn of(terms: &AuthorizationTerms, preflight: &Preflight) -> Option<Refusal> {
        let now = preflight.chain_time.timestamp();
        if terms.valid_before <= now.saturating_add(MIN_VALIDITY_SECONDS) || terms.valid_after >= now {
            return Some(Self::Expired);
        }
        if preflight.used {
            return Some(Self::Used);
        }
        if preflight.payer_balance < terms.value {
            return Some(Self::PayerBalance { balance: preflight.payer_balance.clone() });
        }
        match &preflight.call {
            Err(reason) => Some(Self::Rejected(reason.clone())),
            Ok(gas) if *gas > MAX_GAS_PER_SUBMISSION => Some(Self::Rejected(format!(
                "the call needs {gas} gas, more than the {MAX_GAS_PER_SUBMISSION} the relayer spends on one payment"
            ))),
            Ok(_) => None,
        }
    }

    /// The refusal as a customer's submission is answered.
    pub fn into_error(self, terms: &AuthorizationTerms) -> Error {
        match self {
            Self::Expired => Error::AuthorizationExpired,
            Self::Used => Error::AuthorizationUsed,
            Self::PayerBalance { balance } => {
                Error::PayerBalanceInsufficient { balance: balance.to_string(), required: terms.value.to_string() }
            }
            Self::Rejected(reason) => Error::AuthorizationRejected(reason),
        }
    }

    /// The outcome of a queued submission the sender finds refused on its last look.
    pub fn outcome(&self) -> (RelayStatus, String) {
        match self {
            Self::Expired => (RelayStatus::Expired, "its validBefore passed before it was sent".into()),
            Self::Used => (
                RelayStatus::FrontRun,
                "another transaction used the authorization before the relayer sent it; that transfer pays the checkout"
                    .into(),
            ),
            Self::PayerBalance { balance } => {
                (RelayStatus::Failed, format!("the paying wallet holds {balance}, less than it authorized"))
            }
            Self::Rejected(reason) => (RelayStatus::Failed, format!("the token refuses it: {reason}")),
        }
    }
}

/// The gas limit of a submission whose call was estimated at `estimate`: a quarter more, and
/// 10,000 gas of headroom (state read by the call may change before it is mined).
pub fn gas_limit(estimate: u64) -> u64 {
    estimate.saturating_add(estimate / 4).saturating_add(10_000).min(MAX_GAS_PER_SUBMISSION)
}

/// The start of the UTC day of `at`: the relayer's gas budget is per day.
pub fn day_start(at: DateTime<Utc>) -> DateTime<Utc> {
    let date = at.date_naive();
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// What the relayer spent and holds reserved since a day began.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayUsage {
    /// Gas used by mined transactions, and reserved (gas limits) by submissions that may still
    /// send.
    pub gas: u64,
    /// Wei paid for mined transactions.
    pub spent_wei: u128,
    /// Submissions confirmed.
    pub confirmed: u64,
    /// Submissions expired or failed.
    pub failed: u64,
    /// Submissions front-run (they still paid their checkout).
    pub front_run: u64,
    /// Submissions whose transaction may still be mined, or that wait to be sent.
    pub in_flight: u64,
}

/// What a submission's budget check answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// Recorded.
    New,
    /// The attempt was submitted before: its submission stands.
    Existing(Box<Relay>),
    /// The day's gas budget would be exceeded: nothing recorded.
    OverBudget,
}

/// What the sender does with a sent submission, from what the chain says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SentStep {
    /// A version was mined: the outcome is this status.
    Mined(RelayStatus, RelayReceipt),
    /// The relayer's nonce was taken by a transaction that is not one of its versions (the key
    /// was used elsewhere): send it again with a new nonce.
    Requeue,
    /// Not mined yet: the outcome already known (`None`: still sent), and whether to replace it
    /// with higher fees now.
    Waiting(Option<RelayStatus>, bool),
}

/// What becomes of `relay` (sent, with a nonce) when the chain says `receipt` (the first
/// version found mined), that the relayer's mined nonce is `mined_nonce`, that the
/// authorization is `used` (read before the receipts, so a use by the relay's own mined
/// version is seen as its receipt), at `chain_time`, now being `now`.
pub fn sent_step(
    relay: &Relay,
    receipt: Option<RelayReceipt>,
    (mined_nonce, used, chain_time): (u64, bool, DateTime<Utc>),
    (now, bump_after): (DateTime<Utc>, Duration),
) -> SentStep {
    let expired = chain_time.timestamp() >= relay.authorization.terms.valid_before;
    if let Some(r) = receipt {
        let status = match (r.succeeded, used, expired) {
            (true, _, _) => RelayStatus::Confirmed,
            (false, true, _) => RelayStatus::FrontRun,
            (false, false, true) => RelayStatus::Expired,
            (false, false, false) => RelayStatus::Failed,
        };
        return SentStep::Mined(status, r);
    }
    let quiet = relay.broadcast_at.is_none_or(|at| now - at >= bump_after);
    let taken = relay.tx_nonce.is_some_and(|n| mined_nonce > n);
    let known = match (used, expired) {
        (true, _) => Some(RelayStatus::FrontRun),
        (false, true) => Some(RelayStatus::Expired),
        (false, false) => None,
    };
    // A nonce taken without a receipt of ours may be a lagging endpoint: wait a bump's time.
    if taken && quiet && known.is_none() {
        return SentStep::Requeue;
    }
    SentStep::Waiting(known, quiet && !taken)
}

/// The words of a sent submission's outcome (known once mined, or before when the chain says
/// the authorization was used or expired while its transaction waits).
pub fn outcome_detail(status: RelayStatus) -> &'static str {
    match status {
        RelayStatus::Confirmed => "mined: the transfer pays the checkout",
        RelayStatus::FrontRun => {
            "another transaction used the authorization first; that transfer pays the checkout (its nonce names it)"
        }
        RelayStatus::Expired => "its validBefore passed before it was mined; it can no longer pay",
        RelayStatus::Failed => "the token reverted it (the paying wallet's balance moved?); it did not pay",
        RelayStatus::Queued | RelayStatus::Sent | RelayStatus::Cancelled => "",
    }
}

/// The relayer as readiness and the metrics show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayerStatus {
    /// Its account.
    pub address: WalletAddress,
    /// Its POL balance in wei, when the chain answered.
    pub balance_wei: Option<u128>,
    /// The fees it would offer now, when the chain answered.
    pub fees: Option<Fees>,
    /// Today's use (UTC).
    pub today: RelayUsage,
    /// The day's gas budget.
    pub daily_gas_limit: u64,
}

/// The relayer's state, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayerState {
    /// Funded, within its budget.
    Ok,
    /// Its balance pays fewer than [`LOW_BALANCE_SUBMISSIONS`] typical submissions.
    LowBalance,
    /// Its balance does not pay one more submission: submissions are refused.
    Unfunded,
    /// Today's gas budget is spent: submissions are refused until the next UTC day.
    AtDailyLimit,
    /// The chain did not answer.
    Unreachable,
}

impl RelayerState {
    /// As readiness writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::LowBalance => "low_balance",
            Self::Unfunded => "unfunded",
            Self::AtDailyLimit => "at_daily_limit",
            Self::Unreachable => "unreachable",
        }
    }
}

impl RelayerStatus {
    /// Its state in one word.
    pub fn state(&self) -> RelayerState {
        let (Some(balance), Some(fees)) = (self.balance_wei, self.fees) else { return RelayerState::Unreachable };
        let typical = fees.worst_cost(TYPICAL_GAS);
        if balance < typical {
            RelayerState::Unfunded
        } else if self.today.gas.saturating_add(TYPICAL_GAS) > self.daily_gas_limit {
            RelayerState::AtDailyLimit
        } else if balance < typical.saturating_mul(LOW_BALANCE_SUBMISSIONS) {
            RelayerState::LowBalance
        } else {
            RelayerState::Ok
        }
    }
}

/// What one pass of the sender did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayPass {
    /// Whether this worker holds the sender's lease (another replica sends otherwise).
    pub sender: bool,
    /// Transactions sent for the first time.
    pub sent: u64,
    /// Replacements with higher fees.
    pub bumped: u64,
    /// Submissions whose outcome became known, by status.
    pub settled: Vec<RelayStatus>,
    /// Broadcasts the nodes refused (retried at the next bump).
    pub broadcast_failures: u64,
    /// Mined payments whose report to their checkout failed (the follower finds them).
    pub reports_failed: u64,
    /// More queued submissions wait than one pass takes.
    pub more: bool,
}

#[cfg(test)]
mod tests;
