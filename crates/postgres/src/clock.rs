//! The clock port: real time, plus the merchant's test-clock offset in test mode (the rule
//! itself is the domain's `clock::time_in_mode`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use stablepay_domain::clock::{Clock, time_in_mode};
use stablepay_domain::{Error, Mode, Scope};

use crate::error::db;
use crate::pool::PgStore;
use crate::schema::test_clocks;

/// Reads the test-mode offset from `test_clocks`; live mode is always the real time.
#[derive(Clone)]
pub struct PgClock {
    store: PgStore,
}

impl PgClock {
    pub fn new(store: PgStore) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Clock for PgClock {
    async fn now(&self, scope: &Scope) -> Result<DateTime<Utc>, Error> {
        let real = Utc::now();
        if scope.mode == Mode::Live {
            return Ok(real);
        }
        let mut conn = self.store.conn().await?;
        let offset: Option<i64> = test_clocks::table
            .find(scope.merchant_id.as_str())
            .select(test_clocks::offset_seconds)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        time_in_mode(real, scope.mode, offset.unwrap_or(0))
    }

    fn system_now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}
