//! The store of checkout telemetry.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::mode::Scope;
use crate::telemetry::model::{Funnel, StepRecord};

/// Reported steps of checkouts, per checkout.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait TelemetryStore: Send + Sync {
    /// Records a step of the checkout `record.session_id` names, in that checkout's merchant
    /// and mode (the unguessable session id is the capability, as for the hosted page).
    /// Errors: `NotFound(CheckoutSession)`.
    async fn record_step(&self, record: &StepRecord) -> Result<(), Error>;
    /// How many checkouts of `scope` reached each step between `from` (inclusive) and `to`.
    async fn funnel(&self, scope: &Scope, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Funnel, Error>;
}
