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
    pub worker: WorkerSnapshot,
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
