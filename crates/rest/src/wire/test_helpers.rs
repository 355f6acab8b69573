//! The test helpers' bodies and answers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::wire::common::envelope;

/// `POST /v1/test-helpers/checkout-sessions/{id}/payments` body (all optional).
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestPaymentIn {
    /// Default: the session's amountDue.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: Option<String>,
    /// Default: a random hash.
    pub transaction_hash: Option<String>,
    /// `confirmed` (default) or `failed`.
    pub outcome: Option<String>,
}

/// `POST /v1/test-helpers/clock/advance` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClockAdvanceIn {
    /// Seconds to move the test clock forward (1 to 316224000).
    #[schema(minimum = 1, maximum = 316224000)]
    pub seconds: i64,
}

/// `POST /v1/test-helpers/clock/advance` answer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockOut {
    /// Total offset of the test clock from real time.
    pub offset_seconds: i64,
    /// The test clock's time now.
    pub now: String,
    /// Invoices changed by the transitions that became due.
    pub transitions_run: u64,
}
envelope!(/// The test clock.
    ClockEnvelope, ClockOut);
