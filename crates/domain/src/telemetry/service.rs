//! The telemetry use cases: the hosted page reports a step; the merchant reads the funnel.

use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::Error;
use crate::ids::CheckoutSessionId;
use crate::mode::Scope;
use crate::telemetry::model::{Funnel, Step, StepRecord, detail};
use crate::telemetry::ports::TelemetryStore;

/// The telemetry use cases over their store.
pub struct CheckoutTelemetry<'a> {
    /// The reported steps.
    pub store: &'a dyn TelemetryStore,
    /// The real time of a report.
    pub clock: &'a dyn Clock,
}

impl CheckoutTelemetry<'_> {
    /// Records `step` of checkout `session_id`, with an optional short `text` (kept clean and
    /// at most 200 bytes). Errors: `NotFound(CheckoutSession)`.
    pub async fn report(&self, session_id: &CheckoutSessionId, step: Step, text: Option<&str>) -> Result<(), Error> {
        let record = StepRecord {
            session_id: session_id.clone(),
            step,
            wallet: None,
            detail: text.and_then(detail),
            at: self.clock.system_now(),
        };
        self.store.record_step(&record).await
    }

    /// How many checkouts of `scope` reached each step in `[from, to)`. Errors: `Validation`
    /// on `to` when it is not after `from`.
    pub async fn funnel(&self, scope: &Scope, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Funnel, Error> {
        if to <= from {
            return Err(Error::validation("to", "must be after from"));
        }
        self.store.funnel(scope, from, to).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MockClock;
    use crate::telemetry::ports::MockTelemetryStore;

    #[tokio::test]
    async fn a_report_is_recorded_clean_at_the_real_time() {
        let now = Utc::now();
        let mut clock = MockClock::new();
        clock.expect_system_now().return_const(now);
        let mut store = MockTelemetryStore::new();
        store
            .expect_record_step()
            .withf(move |r| {
                r.step == Step::ErrorShown
                    && r.detail.as_deref() == Some("rejected")
                    && r.at == now
                    && r.wallet.is_none()
            })
            .times(1)
            .returning(|_| Ok(()));
        let telemetry = CheckoutTelemetry { store: &store, clock: &clock };
        let id = CheckoutSessionId::parse("cs_abc").unwrap();
        telemetry.report(&id, Step::ErrorShown, Some(" rejected\n")).await.unwrap();
    }

    #[tokio::test]
    async fn a_funnel_needs_a_period() {
        let (store, clock) = (MockTelemetryStore::new(), MockClock::new());
        let telemetry = CheckoutTelemetry { store: &store, clock: &clock };
        let scope = crate::testing::merchant(crate::merchant::MerchantStatus::Active, Utc::now()).id;
        let scope = Scope::new(scope, crate::mode::Mode::Test);
        let now = Utc::now();
        assert!(matches!(telemetry.funnel(&scope, now, now).await, Err(Error::Validation { .. })));
    }
}
