//! The reconciliation use case: a period's figures per token and its discrepancies.

use chrono::{DateTime, Duration, Utc};

use crate::clock::Clock;
use crate::error::Error;
use crate::export::model::check_range;
use crate::merchant::model::Token;
use crate::mode::Scope;
use crate::reconciliation::model::{
    DiscrepancyQuery, MAX_DISCREPANCIES, Reconciliation, TokenSummary, UNVERIFIED_AFTER_SECONDS,
};
use crate::reconciliation::ports::ReconciliationStore;

/// The reconciliation use cases.
pub struct Reconciliations<'a> {
    /// The books.
    pub store: &'a dyn ReconciliationStore,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
}

impl Reconciliations<'_> {
    /// `GET /v1/reconciliation`: the figures of `[from, to)` (at most 366 days) for every token,
    /// and what does not add up. Errors: `Validation` on `to`, `ExportRangeTooLarge`.
    pub async fn summary(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Reconciliation, Error> {
        check_range(from, to)?;
        let as_of = self.clock.now(scope).await?;
        let found = self.store.token_summaries(scope, from, to).await?;
        let tokens = Token::ALL
            .into_iter()
            .map(|t| found.iter().find(|s| s.token == t).cloned().unwrap_or_else(|| TokenSummary::empty(t)))
            .collect();
        let unverified_before = as_of - Duration::seconds(UNVERIFIED_AFTER_SECONDS);
        let asked = DiscrepancyQuery { from, to, unverified_before, limit: MAX_DISCREPANCIES + 1 };
        let mut discrepancies = self.store.discrepancies(scope, &asked).await?;
        let limit = usize::try_from(MAX_DISCREPANCIES).unwrap_or(usize::MAX);
        let has_more_discrepancies = discrepancies.len() > limit;
        discrepancies.truncate(limit);
        Ok(Reconciliation { from, to, as_of, tokens, discrepancies, has_more_discrepancies })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::clock::MockClock;
    use crate::ids::MerchantId;
    use crate::money::Decimal6;
    use crate::reconciliation::model::{Discrepancy, DiscrepancyKind};
    use crate::reconciliation::ports::MockReconciliationStore;
    use crate::{Amount, Mode};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()
    }

    #[tokio::test]
    async fn every_token_is_listed_and_discrepancies_are_capped() {
        let scope = Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Live);
        let mut clock = MockClock::new();
        clock.expect_now().returning(|_| Ok(now()));
        let mut store = MockReconciliationStore::new();
        let usdt = TokenSummary { invoices_issued: 2, ..TokenSummary::empty(Token::Usdt) };
        store.expect_token_summaries().returning(move |_, _, _| Ok(vec![usdt.clone()]));
        store
            .expect_discrepancies()
            .withf(|_, q| q.unverified_before == now() - Duration::hours(1) && q.limit == MAX_DISCREPANCIES + 1)
            .returning(|_, q| {
                let one = Discrepancy {
                    kind: DiscrepancyKind::UnattributedTransfer,
                    id: "utr_1".into(),
                    invoice_id: None,
                    token: Token::Usdc,
                    amount: Decimal6::parse("1").unwrap(),
                    at: now(),
                    detail: "x".into(),
                };
                Ok(vec![one; usize::try_from(q.limit).unwrap()])
            });
        let r = Reconciliations { store: &store, clock: &clock };
        let out = r.summary(&scope, now() - Duration::days(30), now()).await.unwrap();
        assert_eq!(
            out.tokens.iter().map(|t| (t.token, t.invoices_issued)).collect::<Vec<_>>(),
            vec![(Token::Usdc, 0), (Token::Usdt, 2)]
        );
        assert_eq!(out.tokens[0].collected, Amount::zero());
        assert_eq!(out.discrepancies.len(), 100);
        assert!(out.has_more_discrepancies);
        let too_long = r.summary(&scope, now() - Duration::days(367), now()).await;
        assert_eq!(too_long, Err(Error::ExportRangeTooLarge));
    }
}
