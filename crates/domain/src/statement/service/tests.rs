use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::*;
use crate::clock::MockClock;
use crate::email::model::{EmailAbout, EmailKind, EmailStatus};
use crate::export::model::ExportType;
use crate::ids::{MerchantId, StatementId};
use crate::statement::model::{StatementMonth, StatementStatus};
use crate::statement::ports::MockStatementStore;
use crate::testing::SeqCrypto;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

fn scope(merchant: &str) -> Scope {
    Scope::new(MerchantId::from_trusted(merchant.into()), crate::Mode::Test)
}

fn clock(now: &'static str) -> MockClock {
    let mut c = MockClock::new();
    c.expect_now().returning(move |_| Ok(at(now)));
    c.expect_system_now().returning(move || at(now));
    c
}

fn setting(merchant: &str, enabled: &str) -> StatementSetting {
    StatementSetting { scope: scope(merchant), email: format!("finance@{merchant}.example"), enabled_at: at(enabled) }
}

fn statement(n: u32, status: StatementStatus) -> Statement {
    Statement {
        id: StatementId::from_trusted(format!("stm_{n}")),
        scope: scope("mer_1"),
        month: StatementMonth::new(2026, 11).unwrap(),
        email: "finance@shop.example".into(),
        token: PublicToken::from_trusted("t".repeat(43)),
        invoices_export: ExportId::from_trusted(format!("exp_i{n}")),
        payments_export: ExportId::from_trusted(format!("exp_p{n}")),
        status,
        failure: None,
        email_id: None,
        created_at: at("2026-12-01T00:00:00Z"),
    }
}

#[tokio::test]
async fn the_previous_month_is_issued_once_with_its_two_exports() {
    let mut store = MockStatementStore::new();
    // One setting from November, one asked for on December 1st (nothing due yet).
    store
        .expect_statement_settings()
        .returning(|_| Ok(vec![setting("mer_1", "2026-11-15T10:00:00Z"), setting("mer_2", "2026-12-01T00:00:00Z")]));
    let written = Arc::new(Mutex::new(Vec::new()));
    let w = written.clone();
    let mut first = true;
    store.expect_insert_statement().times(2).returning(move |s, e| {
        w.lock().unwrap().push((s.clone(), e.to_vec()));
        // The second pass finds November's statement already there.
        Ok(std::mem::replace(&mut first, false))
    });
    let (crypto, clock) = (SeqCrypto::default(), clock("2026-12-01T00:00:05Z"));
    let statements = Statements { store: &store, crypto: &crypto, clock: &clock };
    assert_eq!(statements.issue_due(None).await, Ok(1));
    assert_eq!(statements.issue_due(None).await, Ok(0));
    let written = written.lock().unwrap();
    let (s, exports) = &written[0];
    assert_eq!(
        (s.scope.clone(), s.month, s.status),
        (scope("mer_1"), StatementMonth::new(2026, 11).unwrap(), StatementStatus::Exporting)
    );
    assert_eq!(s.email, "finance@mer_1.example");
    assert_eq!(
        exports.iter().map(|e| e.spec.export_type).collect::<Vec<_>>(),
        [ExportType::Invoices, ExportType::Payments]
    );
    assert_eq!((&exports[0].id, &exports[1].id), (&s.invoices_export, &s.payments_export));
    for e in exports {
        assert_eq!(
            (e.status, e.spec.from, e.spec.to),
            (ExportStatus::Queued, at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"))
        );
        assert_eq!(e.scope, s.scope);
    }
    assert_ne!(written[0].0.token, written[1].0.token, "each statement has its own link");
}

#[tokio::test]
async fn a_statement_is_mailed_when_both_files_are_ready_and_given_up_when_one_failed() {
    let mut store = MockStatementStore::new();
    store.expect_exporting_statements().returning(|_| {
        Ok(vec![
            ExportingStatement {
                statement: statement(1, StatementStatus::Exporting),
                invoices: ExportStatus::Ready,
                payments: ExportStatus::Ready,
            },
            ExportingStatement {
                statement: statement(2, StatementStatus::Exporting),
                invoices: ExportStatus::Ready,
                payments: ExportStatus::Running,
            },
            ExportingStatement {
                statement: statement(3, StatementStatus::Exporting),
                invoices: ExportStatus::Ready,
                payments: ExportStatus::Failed,
            },
        ])
    });
    let mailed = Arc::new(Mutex::new(Vec::new()));
    let m = mailed.clone();
    store.expect_statement_mailed().times(1).returning(move |s, e| {
        m.lock().unwrap().push((s.id.clone(), e.clone()));
        Ok(true)
    });
    store
        .expect_statement_failed()
        .times(1)
        .withf(|s, message| s.id.as_str() == "stm_3" && message == "the payments export is failed")
        .returning(|_, _| Ok(()));
    let (crypto, clock) = (SeqCrypto::default(), clock("2026-12-01T00:10:00Z"));
    let statements = Statements { store: &store, crypto: &crypto, clock: &clock };
    assert_eq!(statements.mail_ready(50).await, Ok(MailingReport { mailed: 1, failed: 1 }));
    let mailed = mailed.lock().unwrap();
    let (id, email) = &mailed[0];
    assert_eq!(id.as_str(), "stm_1");
    assert_eq!(email.about, EmailAbout::Statement(scope("mer_1"), id.clone()));
    assert_eq!(
        (email.kind, email.status, email.slot.as_str()),
        (EmailKind::Statement, EmailStatus::Queued, "statement:2026-11")
    );
    assert_eq!((email.to.as_str(), email.next_attempt_at), ("finance@shop.example", at("2026-12-01T00:10:00Z")));
}

#[tokio::test]
async fn a_download_link_resolves_to_its_export_and_nothing_else_does() {
    let mut store = MockStatementStore::new();
    let token = "t".repeat(43);
    store.expect_statement_by_token().returning(|t| {
        if t.as_str() == "t".repeat(43) {
            Ok(statement(1, StatementStatus::Mailed))
        } else {
            Err(Error::NotFound(Resource::Statement))
        }
    });
    let (crypto, clock) = (SeqCrypto::default(), clock("2026-12-02T00:00:00Z"));
    let statements = Statements { store: &store, crypto: &crypto, clock: &clock };
    let (s, id) = statements.file(&token, "payments").await.unwrap();
    assert_eq!((s, id.as_str()), (scope("mer_1"), "exp_p1"));
    assert_eq!(statements.file(&token, "invoices").await.unwrap().1.as_str(), "exp_i1");
    let not_found = Err(Error::NotFound(Resource::Statement));
    assert_eq!(statements.file(&token, "refunds").await, not_found);
    assert_eq!(statements.file("short", "invoices").await, not_found);
    assert_eq!(statements.file(&"u".repeat(43), "invoices").await, not_found);
}

#[tokio::test]
async fn an_implausible_billing_email_is_refused_before_anything_is_written() {
    let mut store = MockStatementStore::new();
    store.expect_set_statement_email().never();
    let (crypto, clock) = (SeqCrypto::default(), clock("2026-12-02T00:00:00Z"));
    let statements = Statements { store: &store, crypto: &crypto, clock: &clock };
    for bad in ["", "finance", "a b@shop.example", "x@shop"] {
        let refused = statements.set_email(&scope("mer_1"), Some(bad)).await;
        assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "email"), "{bad}: {refused:?}");
    }
}
