//! Liveness and readiness.

use serde::Serialize;
use stablepay_domain::chain::ChainHealth;
use stablepay_http::status::WorkerSnapshot;
use utoipa::ToSchema;

use crate::wire::common::envelope;

/// Health answer.
#[derive(Serialize, ToSchema)]
pub struct HealthOut {
    pub status: String,
}

envelope!(/// Health envelope.
    HealthEnvelope, HealthOut);

/// Readiness answer.
#[derive(Serialize, ToSchema)]
pub struct ReadyOut {
    /// `ready`.
    pub status: String,
    /// This process's background worker.
    pub worker: WorkerOut,
    /// Live verification's chain.
    pub chain: ChainOut,
    /// The gasless relayer (readiness does not fail on it: customers' wallets send the call
    /// themselves when it cannot).
    pub relayer: RelayerOut,
}

/// The relayer as readiness shows it.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RelayerOut {
    /// `off` (no `STABLEPAY_RELAYER_KEY`), `ok`, `low_balance` (its POL pays fewer than 20
    /// typical submissions: fund it), `unfunded` (it pays not one: submissions are refused),
    /// `at_daily_limit` (`STABLEPAY_RELAYER_DAILY_GAS_LIMIT` is spent for today, UTC) or
    /// `unreachable` (the chain did not answer).
    pub state: String,
    /// Its account (fund this address with POL).
    pub address: Option<String>,
    /// Its POL balance, exactly (18 decimals), when the chain answered.
    pub balance: Option<String>,
    /// The same in wei (an integer string).
    pub balance_wei: Option<String>,
    /// Gas used and reserved today (UTC).
    pub gas_used_today: Option<u64>,
    pub daily_gas_limit: Option<u64>,
    /// POL paid for gas today, exactly.
    pub spent_today: Option<String>,
    /// Submissions today by outcome.
    pub confirmed_today: Option<u64>,
    /// Expired or failed today.
    pub failed_today: Option<u64>,
    /// Front-run today (they still paid their checkout).
    pub front_run_today: Option<u64>,
    /// Submissions waiting to be sent or mined.
    pub in_flight: Option<u64>,
}

impl RelayerOut {
    /// Off: no key set.
    pub fn off() -> Self {
        Self {
            state: "off".into(),
            address: None,
            balance: None,
            balance_wei: None,
            gas_used_today: None,
            daily_gas_limit: None,
            spent_today: None,
            confirmed_today: None,
            failed_today: None,
            front_run_today: None,
            in_flight: None,
        }
    }
}

impl From<&stablepay_domain::relay::model::RelayerStatus> for RelayerOut {
    fn from(s: &stablepay_domain::relay::model::RelayerStatus) -> Self {
        use stablepay_domain::relay::model::pol;
        let t = &s.today;
        Self {
            state: s.state().as_str().into(),
            address: Some(s.address.as_str().to_owned()),
            balance: s.balance_wei.map(pol),
            balance_wei: s.balance_wei.map(|w| w.to_string()),
            gas_used_today: Some(t.gas),
            daily_gas_limit: Some(s.daily_gas_limit),
            spent_today: Some(pol(t.spent_wei)),
            confirmed_today: Some(t.confirmed),
            failed_today: Some(t.failed),
            front_run_today: Some(t.front_run),
            in_flight: Some(t.in_flight),
        }
    }
}

/// The worker's state as readiness shows it.
#[derive(Serialize, ToSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schema(as = WorkerSnapshot)]
pub struct WorkerOut {
    /// `ok`; `degraded` (the last pass failed, or in it some invoices' work failed and was
    /// backed off, or email attempts failed); `stalled` (no successful pass for longer than allowed: readiness fails); `off` (this
    /// process runs no worker).
    pub state: String,
    pub last_success_at: Option<String>,
    pub consecutive_failures: u64,
    /// Passes that panicked and were restarted.
    pub restarts: u64,
    /// Invoices whose due work failed (each backed off) and failed email attempts, since start.
    pub items_failed: u64,
    /// The chain follower (live mode), which finds transfers nobody reported.
    pub follower: FollowerOut,
}

/// The chain follower's state as readiness shows it (readiness does not fail on it: the API and
/// reported payments go on; alert on `lagBlocks` or the `stablepay_chain_follow_lag_blocks`
/// metric).
#[derive(Serialize, ToSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schema(as = FollowerSnapshot)]
pub struct FollowerOut {
    /// `off` (this process follows no live chain, or has not yet), `ok`, `degraded` (its last
    /// pass failed) or `stalled` (five passes in a row failed: transfers nobody reported wait).
    pub state: String,
    /// Final blocks not scanned yet, when known.
    pub lag_blocks: Option<u64>,
    pub last_success_at: Option<String>,
    pub consecutive_failures: u64,
    /// Blocks of the last range read that no endpoint's answer settled for sure (an endpoint
    /// answered nothing where the block's bloom says a watched transfer may be): the cursor is
    /// held on them for a while, then the second reading and reconciliation runs read them again.
    pub uncertain_blocks: u64,
    /// Whether the cursor waits on such blocks now.
    pub held: bool,
    /// Ranges the endpoints answered differently, since the process started.
    pub disagreements: u64,
    /// Logs the second reading of a range found that the first reading had missed, since the
    /// process started (each credited or recorded then).
    pub second_pass_found: u64,
    /// Ranges of final blocks waiting for their second reading.
    pub rechecks_pending: u64,
    /// The service's clock less the time of the chain's newest block, in seconds, when measured
    /// (a few seconds when the clocks agree; compare with STABLEPAY_CHAIN_CLOCK_SKEW_SECONDS).
    pub clock_skew_seconds: Option<i64>,
}

impl From<WorkerSnapshot> for WorkerOut {
    fn from(w: WorkerSnapshot) -> Self {
        let f = w.follower;
        Self {
            state: w.state,
            last_success_at: w.last_success_at,
            consecutive_failures: w.consecutive_failures,
            restarts: w.restarts,
            items_failed: w.items_failed,
            follower: FollowerOut {
                state: f.state,
                lag_blocks: f.lag_blocks,
                last_success_at: f.last_success_at,
                consecutive_failures: f.consecutive_failures,
                uncertain_blocks: f.uncertain_blocks,
                held: f.held,
                disagreements: f.disagreements,
                second_pass_found: f.second_pass_found,
                rechecks_pending: f.rechecks_pending,
                clock_skew_seconds: f.clock_skew_seconds,
            },
        }
    }
}

/// Whether live payments can be verified.
#[derive(Serialize, ToSchema, Debug)]
pub struct ChainOut {
    /// `off` (no RPC endpoint configured: live payments wait as detected), `ok`,
    /// `unreachable` (verification retries) or `wrong_chain` (readiness fails).
    pub state: String,
    pub detail: Option<String>,
}

impl From<ChainHealth> for ChainOut {
    fn from(h: ChainHealth) -> Self {
        use ChainHealth as H;
        let (state, detail) = match h {
            H::Off => ("off", None),
            H::Ok => ("ok", None),
            H::Unreachable(d) => ("unreachable", Some(d)),
            H::WrongChain(d) => ("wrong_chain", Some(d)),
        };
        Self { state: state.into(), detail }
    }
}

envelope!(/// Readiness envelope.
    ReadyEnvelope, ReadyOut);
