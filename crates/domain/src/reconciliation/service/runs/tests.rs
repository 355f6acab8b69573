use std::sync::{Arc, Mutex};

use chrono::{Duration, TimeZone};

use super::*;
use crate::chain::model::TokenTransfer;
use crate::chain::ports::MockChain;
use crate::clock::MockClock;
use crate::ids::{CheckoutSessionId, InvoiceId, MerchantId, PaymentId, UnattributedTransferId};
use crate::invoice::payment::{BlockRef, FailureReason, Payment, PaymentStatus, TxHash};
use crate::merchant::model::{LiveSettlement, MerchantStatus, Token};
use crate::merchant::ports::MockMerchantStore;
use crate::money::Decimal6;
use crate::reconciliation::ports::MockReconciliationRunStore;
use crate::reconciliation::run::{LogOwner, RunOutcome, RunTotals};
use crate::testing::SeqCrypto;

fn genesis() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
}

fn live() -> Scope {
    Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Live)
}

fn addr(last: char) -> WalletAddress {
    WalletAddress::from_trusted(format!("0x{}{last}", "0".repeat(39)))
}

fn tx(n: u8) -> TxHash {
    TxHash::from_trusted(format!("0x{}", format!("{n:02x}").repeat(32)))
}

fn settings() -> ChainSettings {
    ChainSettings { usdc: addr('c'), usdt: addr('d'), ..ChainSettings::default() }
}

fn amount(text: &str) -> Decimal6 {
    Decimal6::parse(text).unwrap()
}

/// A log of `units` of USDC into wallet `a` in block `block` (2 s per block from genesis).
fn log(n: u8, index: u64, block: u64, value: &str) -> LoggedTransfer {
    LoggedTransfer {
        tx_hash: tx(n),
        block: BlockRef { number: block, hash: format!("0x{block:064x}") },
        block_time: genesis() + Duration::seconds(2 * i64::try_from(block).unwrap()),
        transfer: TokenTransfer {
            log_index: index,
            token_contract: addr('c'),
            from: addr('f'),
            to: addr('a'),
            amount: amount(value),
            authorization: None,
        },
    }
}

fn credited(n: u8, logs: Vec<u64>, block: u64, settled: &str) -> Payment {
    Payment {
        id: PaymentId::from_trusted(format!("pay_{n}")),
        scope: live(),
        invoice_id: InvoiceId::from_trusted(format!("inv_{n}")),
        checkout_session_id: CheckoutSessionId::from_trusted(format!("cs_{n}")),
        status: PaymentStatus::Confirmed,
        amount_expected: amount(settled),
        amount_received: amount(settled),
        customer_amount_credited: amount(settled),
        merchant_amount_settled: amount(settled),
        transaction_hash: tx(n),
        chain_id: 137,
        token_contract: addr('c'),
        settlement_wallet: addr('a'),
        payer_address: None,
        failure_reason: None,
        block: Some(BlockRef { number: block, hash: format!("0x{block:064x}") }),
        block_time: Some(genesis()),
        diagnostic: None,
        detected_at: genesis(),
        confirmed_at: Some(genesis()),
        claimed_log: None,
        logs,
        missing_since: None,
        evidence: None,
    }
}

#[test]
fn every_log_and_every_credited_payment_ends_as_one_item() {
    let transfers = vec![
        log(1, 0, 10, "10.00"),
        log(2, 3, 11, "4.00"),
        log(2, 4, 11, "1.50"),
        log(3, 0, 12, "3.00"),
        log(4, 1, 13, "7.00"),
        log(5, 0, 14, "2.00"),
        log(6, 0, 15, "9.99"),
        log(7, 0, 16, "1.00"),
    ];
    let payments = vec![
        credited(1, vec![0], 10, "10.00"),
        // Two logs of one transaction credited to one payment: both matched.
        credited(2, vec![3, 4], 11, "5.50"),
        // Credited with a transfer the chain does not show.
        credited(8, vec![0], 17, "6.00"),
        // Credited with more than the chain shows.
        credited(6, vec![0], 15, "10.00"),
        // A payment that recorded no log index claims its transaction's logs to its wallet.
        credited(7, vec![], 16, "1.00"),
    ];
    let mut owners = HashMap::new();
    owners.insert((tx(3), 0), LogOwner::Unattributed(UnattributedTransferId::from_trusted("utr_3".into())));
    owners.insert(
        (tx(4), 1),
        LogOwner::Uncredited {
            payment_id: PaymentId::from_trusted("pay_4".into()),
            invoice_id: InvoiceId::from_trusted("inv_4".into()),
            status: PaymentStatus::Failed,
            failure_reason: Some(FailureReason::CheckoutExpired),
        },
    );
    owners.insert((tx(5), 0), LogOwner::Elsewhere);
    let (items, elsewhere) = reconcile(&transfers, &payments, &owners, &settings());
    assert_eq!(elsewhere, 1);
    let seen: Vec<(u64, RunOutcome, String, Option<String>)> = items
        .iter()
        .map(|i| {
            (
                i.line,
                i.outcome,
                i.transaction_hash.as_str()[2..4].to_owned(),
                i.payment_id.as_ref().map(|p| p.to_string()),
            )
        })
        .collect();
    let m = RunOutcome::Matched;
    let on = RunOutcome::OnchainNotCredited;
    let off = RunOutcome::CreditedNotOnchain;
    let p = |s: &str| Some(s.to_owned());
    assert_eq!(
        seen,
        vec![
            (1, m, "01".into(), p("pay_1")),
            (2, m, "02".into(), p("pay_2")),
            (3, m, "02".into(), p("pay_2")),
            (4, on, "03".into(), None),
            (5, on, "04".into(), p("pay_4")),
            (6, off, "06".into(), p("pay_6")),
            (7, m, "07".into(), p("pay_7")),
            (8, off, "08".into(), p("pay_8")),
        ]
    );
    assert_eq!(items[3].unattributed_transfer_id.as_ref().map(|u| u.as_str()), Some("utr_3"));
    assert!(items[4].detail.contains("checkout_expired"), "{}", items[4].detail);
    assert_eq!((items[4].invoice_id.as_ref().map(|i| i.as_str())), Some("inv_4"));
    assert_eq!(
        (items[5].amount_onchain.clone(), items[5].amount_credited.clone()),
        (Some(amount("9.99")), Some(amount("10")))
    );
    assert_eq!((items[7].amount_onchain.clone(), items[7].log_index), (None, None));
    let usdc = RunTotals::of(&items).into_iter().find(|t| t.token == Token::Usdc).unwrap();
    assert_eq!((usdc.matched, usdc.onchain_not_credited, usdc.credited_not_onchain), (4, 2, 2));
    assert_eq!(usdc.onchain_total, amount("36.49"));
    assert_eq!(usdc.credited_total, amount("32.50"));
}

#[test]
fn a_log_of_a_token_the_service_does_not_take_is_not_listed() {
    let mut other = log(1, 0, 10, "10.00");
    other.transfer.token_contract = addr('e');
    let (items, elsewhere) = reconcile(&[other], &[], &HashMap::new(), &settings());
    assert!(items.is_empty());
    assert_eq!(elsewhere, 0);
}

fn merchant_live() -> crate::merchant::model::Merchant {
    let mut m = crate::testing::merchant(MerchantStatus::Active, genesis());
    m.live =
        Some(LiveSettlement { wallet: addr('a'), token: Token::Usdc, activated_at: genesis(), unique_amounts: false });
    m
}

#[tokio::test]
async fn test_mode_and_merchants_not_live_cannot_ask_for_a_run() {
    let (store, chain, crypto, settings) =
        (MockReconciliationRunStore::new(), MockChain::new(), SeqCrypto::default(), settings());
    let mut merchants = MockMerchantStore::new();
    merchants.expect_get_merchant().returning(|_| Ok(crate::testing::merchant(MerchantStatus::Active, genesis())));
    let clock = MockClock::new();
    let runs = ReconciliationRuns {
        store: &store,
        chain: &chain,
        merchants: &merchants,
        settings: &settings,
        crypto: &crypto,
        clock: &clock,
        claim: None,
    };
    let test = Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Test);
    let (from, to) = (genesis(), genesis() + Duration::days(30));
    assert!(matches!(runs.create(&test, from, to).await, Err(Error::FeatureUnavailable(_))));
    assert_eq!(runs.create(&live(), from, to).await, Err(Error::ActiveMerchantRequired));
    assert!(matches!(runs.create(&live(), to, from).await, Err(Error::Validation { .. })));
}

/// A chain of 101 blocks 2 s apart (block 0 at genesis), final to block 100.
fn chain_with(transfers: Vec<LoggedTransfer>, asked: Arc<Mutex<Vec<(u64, u64)>>>) -> MockChain {
    let mut chain = MockChain::new();
    chain.expect_final_head().returning(|| Ok(100));
    chain
        .expect_block_time()
        .returning(|n| Ok((n <= 120).then(|| genesis() + Duration::seconds(2 * i64::try_from(n).unwrap()))));
    chain.expect_transfers().returning(move |q| {
        let (from, to) = q.blocks;
        asked.lock().unwrap().push((from, to));
        assert_eq!(q.tokens, [addr('c'), addr('d')]);
        assert!(q.wallets.contains(&addr('a')));
        let logs = transfers.iter().filter(|t| (from..=to).contains(&t.block.number)).cloned().collect();
        Ok(crate::chain::model::TransferScan { logs, ..Default::default() })
    });
    chain
}

fn run_of(from: DateTime<Utc>, to: DateTime<Utc>) -> ReconciliationRun {
    ReconciliationRun {
        id: ReconciliationRunId::from_trusted("rcr_1".into()),
        scope: live(),
        from,
        to,
        status: RunStatus::Running,
        coverage: RunCoverage::default(),
        totals: Vec::new(),
        failure_message: None,
        created_at: genesis(),
        completed_at: None,
    }
}

#[tokio::test]
async fn a_run_reads_the_blocks_of_its_period_and_stores_the_matched_items() {
    // The period [block 10's time + 1 s, block 40's time): blocks 11 to 39.
    let (from, to) = (genesis() + Duration::seconds(21), genesis() + Duration::seconds(80));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chain = chain_with(vec![log(1, 0, 11, "10.00"), log(2, 0, 39, "2.00")], asked.clone());
    let mut store = MockReconciliationRunStore::new();
    store.expect_claim_run().returning(move |_| Ok(Some(run_of(from, to))));
    store.expect_extend_run().returning(|_, _| Ok(true));
    store
        .expect_credited_payments()
        .withf(|_, chain, blocks| (*chain, *blocks) == (137, (11, 39)))
        .returning(|_, _, _| Ok(vec![credited(1, vec![0], 11, "10.00")]));
    store.expect_log_owners().returning(|_, _, logs| {
        assert_eq!(logs, [(tx(2), 0)]);
        Ok(HashMap::new())
    });
    store
        .expect_finish_run()
        .withf(|_, found| {
            let coverage = &found.coverage;
            (coverage.from_block, coverage.to_block, coverage.final_block, coverage.complete)
                == (Some(11), Some(39), Some(100), true)
                && found.items.iter().map(|i| i.outcome).collect::<Vec<_>>()
                    == [RunOutcome::Matched, RunOutcome::OnchainNotCredited]
        })
        .returning(|_, _| Ok(true));
    let step = step_of_live_run((&store, &chain), false).await;
    assert_eq!(step, RunStep::Completed(ReconciliationRunId::from_trusted("rcr_1".into())));
    assert_eq!(*asked.lock().unwrap(), vec![(11, 39)]);
}

#[tokio::test]
async fn a_period_not_final_to_its_end_is_read_to_the_final_block() {
    // From block 90's time to far past block 100 (the final one).
    let (from, to) = (genesis() + Duration::seconds(180), genesis() + Duration::days(2));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chain = chain_with(Vec::new(), asked.clone());
    let mut store = MockReconciliationRunStore::new();
    store.expect_claim_run().returning(move |_| Ok(Some(run_of(from, to))));
    store.expect_extend_run().returning(|_, _| Ok(true));
    store.expect_credited_payments().returning(|_, _, _| Ok(Vec::new()));
    store
        .expect_finish_run()
        .withf(|_, found| {
            let c = &found.coverage;
            (c.from_block, c.to_block, c.complete) == (Some(90), Some(100), false) && found.items.is_empty()
        })
        .returning(|_, _| Ok(true));
    assert!(matches!(step_of_live_run((&store, &chain), false).await, RunStep::Completed(_)));
    assert_eq!(*asked.lock().unwrap(), vec![(90, 100)]);
    // A worker that is stopping leaves the run to its lease.
    let mut store = MockReconciliationRunStore::new();
    store.expect_claim_run().returning(move |_| Ok(Some(run_of(from, to))));
    store.expect_credited_payments().returning(|_, _, _| Ok(Vec::new()));
    assert!(matches!(step_of_live_run((&store, &chain), true).await, RunStep::Interrupted(_)));
}

/// One step of the run `store` claims, for a live merchant a day after genesis, over `chain`
/// (`stopping`: the worker is stopping).
async fn step_of_live_run((store, chain): (&MockReconciliationRunStore, &MockChain), stopping: bool) -> RunStep {
    let mut merchants = MockMerchantStore::new();
    merchants.expect_get_merchant().returning(|_| Ok(merchant_live()));
    let mut clock = MockClock::new();
    clock.expect_now().returning(|_| Ok(genesis() + Duration::days(1)));
    let (crypto, settings) = (SeqCrypto::default(), settings());
    let runs = ReconciliationRuns {
        store,
        chain,
        merchants: &merchants,
        settings: &settings,
        crypto: &crypto,
        clock: &clock,
        claim: None,
    };
    runs.run_one(&|| stopping, None).await.unwrap()
}
