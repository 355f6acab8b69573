//! The merchant's readiness as `GET /v1/diagnostics` answers it.

use serde::Serialize;
use stablepay_domain::diagnostics::MerchantReadiness;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::envelope;

/// One entry of the readiness.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessEntryOut {
    /// Stable: `live_activation`, `chain`, `webhook_endpoints`, `webhook_incidents`, `emails`,
    /// `api_keys`, `worker`.
    pub code: String,
    /// `ok`, `warning` or `error`.
    pub status: String,
    /// In words.
    pub message: String,
    /// What the entry counts, where it counts something.
    pub count: Option<u64>,
}

/// The merchant's readiness in the key's mode.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessOut {
    /// Always `diagnostics`.
    pub object: String,
    pub mode: String,
    /// The worst status of the entries: `ok`, `warning` or `error`.
    pub status: String,
    pub entries: Vec<ReadinessEntryOut>,
    pub as_of: String,
}

impl ReadinessOut {
    pub fn new(r: &MerchantReadiness, mode: &str) -> Self {
        Self {
            object: "diagnostics".into(),
            mode: mode.into(),
            status: r.status.as_str().into(),
            entries: r
                .entries
                .iter()
                .map(|e| ReadinessEntryOut {
                    code: e.code.into(),
                    status: e.status.as_str().into(),
                    message: e.message.clone(),
                    count: e.count,
                })
                .collect(),
            as_of: timestamp(r.as_of),
        }
    }
}

envelope!(/// The merchant's readiness.
    ReadinessEnvelope, ReadinessOut);
