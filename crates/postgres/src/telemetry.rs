//! Checkout telemetry: one row per reported step, in the merchant and mode of its checkout.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use stablepay_domain::telemetry::model::{Funnel, Step, StepRecord};
use stablepay_domain::telemetry::ports::TelemetryStore;
use stablepay_domain::{Error, Resource, Scope};

use crate::error::db;
use crate::pool::PgStore;

/// The step, in the scope of the checkout the session id names (its capability): nothing is
/// written for an unknown checkout.
const RECORD: &str = "INSERT INTO checkout_telemetry \
    (merchant_id, mode, checkout_session_id, step, wallet_address, detail, created_at) \
    SELECT merchant_id, mode, id, $2, $3, $4, $5 FROM checkout_sessions WHERE id = $1";

/// Checkouts per step in a period.
const FUNNEL: &str = "SELECT step, count(DISTINCT checkout_session_id) AS checkouts FROM checkout_telemetry \
    WHERE merchant_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4 GROUP BY step";

#[derive(QueryableByName)]
struct StepCount {
    #[diesel(sql_type = Text)]
    step: String,
    #[diesel(sql_type = BigInt)]
    checkouts: i64,
}

#[async_trait]
impl TelemetryStore for PgStore {
    async fn record_step(&self, record: &StepRecord) -> Result<(), Error> {
        let written = diesel::sql_query(RECORD)
            .bind::<Text, _>(record.session_id.as_str())
            .bind::<Text, _>(record.step.as_str())
            .bind::<Nullable<Text>, _>(record.wallet.as_ref().map(|w| w.as_str().to_owned()))
            .bind::<Nullable<Text>, _>(record.detail.as_deref())
            .bind::<Timestamptz, _>(record.at)
            .execute(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        if written == 0 {
            return Err(Error::NotFound(Resource::CheckoutSession));
        }
        Ok(())
    }

    async fn funnel(&self, scope: &Scope, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Funnel, Error> {
        let rows: Vec<StepCount> = diesel::sql_query(FUNNEL)
            .bind::<Text, _>(scope.merchant_id.as_str())
            .bind::<Text, _>(scope.mode.as_str())
            .bind::<Timestamptz, _>(from)
            .bind::<Timestamptz, _>(to)
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        let mut funnel = Funnel::default();
        for row in rows {
            let n = u64::try_from(row.checkouts).unwrap_or(0);
            match Step::parse(&row.step) {
                Some(Step::Viewed) => funnel.viewed = n,
                Some(Step::WalletConnected) => funnel.wallet_connected = n,
                Some(Step::TransferSent) => funnel.transfer_sent = n,
                Some(Step::ErrorShown) => funnel.error_shown = n,
                None => return Err(crate::rows::corrupt("telemetry step")),
            }
        }
        Ok(funnel)
    }
}
