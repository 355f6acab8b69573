//! The relayer's use cases over mock ports: what is refused before anything is recorded, and
//! what the sender does with its lease, its nonce and what the chain says.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::chain::model::Candidates;
use crate::chain::ports::MockChain;
use crate::clock::MockClock;
use crate::invoice::aggregate::InvoiceAggregate;
use crate::invoice::input::CheckoutInput;
use crate::invoice::payment::TxHash;
use crate::invoice::ports::MockInvoiceStore;
use crate::invoice::service::decide_checkout;
use crate::invoice::wallet::{AuthorizationTerms, TokenDomain};
use crate::merchant::model::{ChainSettings, LiveSettlement, MerchantStatus, Token, WalletAddress};
use crate::merchant::ports::MockMerchantStore;
use crate::mode::Scope;
use crate::money::Decimal6;
use crate::payment_link::ports::MockPaymentLinkStore;
use crate::relay::model::{Fees, GWEI, Preflight, RelayReceipt, RelayTransaction, RelayUsage};
use crate::relay::ports::{MockRelayStore, MockRelayer};
use crate::telemetry::ports::MockTelemetryStore;
use crate::testing::SeqCrypto;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap()
}

fn wallet(byte: &str) -> WalletAddress {
    WalletAddress::parse(&format!("0x{}", byte.repeat(20))).unwrap()
}

fn relayer() -> WalletAddress {
    wallet("bb")
}

/// A live checkout of 10 USDC, open.
fn checkout() -> InvoiceAggregate {
    let mut merchant = crate::testing::merchant(MerchantStatus::Active, now());
    merchant.live = Some(LiveSettlement {
        wallet: WalletAddress::parse("0x52908400098527886E0F7030069857D2E4169EE7").unwrap(),
        token: Token::Usdc,
        activated_at: now(),
        unique_amounts: false,
    });
    let scope = Scope::new(merchant.id.clone(), Mode::Live);
    let input = CheckoutInput { amount: Some(Decimal6::parse("10").unwrap()), ..Default::default() };
    let mut change =
        decide_checkout(&SeqCrypto::default(), &ChainSettings::default(), &merchant, &scope, input, now()).unwrap();
    change.finalize(Some(1));
    change.aggregate
}

fn terms(agg: &InvoiceAggregate) -> AuthorizationTerms {
    let s = &agg.sessions[0];
    AuthorizationTerms {
        token_contract: s.token_contract.clone(),
        from: wallet("aa"),
        to: s.settlement_wallet.clone(),
        value: s.amount_due.clone(),
        valid_after: 0,
        valid_before: s.expires_at.timestamp(),
        nonce: AuthorizationNonce([7; 32]),
    }
}

fn signature() -> String {
    format!("0x{}{}1b", "11".repeat(32), "22".repeat(32))
}

fn fees() -> Fees {
    Fees { max_fee_per_gas: 60 * GWEI, max_priority_fee_per_gas: 30 * GWEI }
}

fn good_preflight() -> Preflight {
    Preflight { chain_time: now(), used: false, payer_balance: Decimal6::parse("50").unwrap(), call: Ok(60_000) }
}

/// Every port of the relayer's use cases, as mocks.
struct World {
    invoices: MockInvoiceStore,
    merchants: MockMerchantStore,
    links: MockPaymentLinkStore,
    clock: MockClock,
    telemetry: MockTelemetryStore,
    chain: MockChain,
    crypto: SeqCrypto,
    chain_settings: ChainSettings,
    store: MockRelayStore,
    relayer: MockRelayer,
    settings: RelaySettings,
}

impl World {
    /// The relayer on (`relayer()`), a live checkout that can be paid and whose attempt kept
    /// `terms`; no other call expected.
    fn new() -> Self {
        let agg = checkout();
        let mut invoices = MockInvoiceStore::new();
        let loaded = agg.clone();
        invoices.expect_load_public().returning(move |_| Ok(loaded.clone()));
        invoices.expect_open_checkouts().returning(|_| Ok(Candidates::default()));
        let kept = terms(&agg);
        invoices.expect_authorization_terms().returning(move |_, _, _| Ok(Some(kept.clone())));
        let mut merchants = MockMerchantStore::new();
        merchants.expect_get_merchant().returning(|_| Ok(crate::testing::merchant(MerchantStatus::Active, now())));
        let mut clock = MockClock::new();
        clock.expect_now().returning(|_| Ok(now()));
        clock.expect_system_now().returning(now);
        let mut chain = MockChain::new();
        chain.expect_token_domain().returning(|c| {
            Ok(Some(TokenDomain {
                name: "USD Coin".into(),
                version: "2".into(),
                chain_id: 137,
                verifying_contract: c.clone(),
            }))
        });
        let mut relayer_port = MockRelayer::new();
        relayer_port.expect_address().returning(|| Some(relayer()));
        relayer_port.expect_submits_to().returning(|_| true);
        Self {
            invoices,
            merchants,
            links: MockPaymentLinkStore::new(),
            clock,
            telemetry: MockTelemetryStore::new(),
            chain,
            crypto: SeqCrypto::default(),
            chain_settings: ChainSettings::default(),
            store: MockRelayStore::new(),
            relayer: relayer_port,
            settings: RelaySettings::default(),
        }
    }

    fn relays(&self) -> Relays<'_> {
        Relays {
            views: PublicViews {
                invoices: &self.invoices,
                merchants: &self.merchants,
                links: &self.links,
                clock: &self.clock,
                telemetry: &self.telemetry,
                chain: &self.chain,
                crypto: &self.crypto,
                chain_settings: &self.chain_settings,
            },
            invoices: Invoices::new(&self.invoices, &self.crypto, &self.clock, (&self.chain, &self.chain_settings)),
            store: &self.store,
            relayer: &self.relayer,
            settings: &self.settings,
        }
    }

    /// The chain and the store agree to everything up to the budget check.
    fn all_good(&mut self) {
        self.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
        self.store.expect_relay_in_flight().returning(|_, _| Ok(None));
        self.relayer.expect_signer().returning(|_, a| Some(a.terms.from.clone()));
        self.relayer.expect_preflight().returning(|_| Ok(good_preflight()));
        self.relayer.expect_fees().returning(|| Ok(fees()));
        self.relayer.expect_balance().returning(|| Ok(1_000_000_000 * GWEI));
    }
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

fn session(agg: &InvoiceAggregate) -> CheckoutSessionId {
    agg.sessions[0].id.clone()
}

#[test]
fn an_accepted_submission_is_queued_with_its_gas_limit_within_the_days_budget() {
    let mut w = World::new();
    w.all_good();
    w.store
        .expect_insert_relay()
        .withf(|r, (day, limit)| {
            r.status == RelayStatus::Queued
                && r.gas_limit == 85_000
                && r.tx_nonce.is_none()
                && r.relayer == relayer()
                && *day == Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
                && *limit == 10_000_000
        })
        .times(1)
        .returning(|_, _| Ok(Inserted::New));
    let agg = checkout();
    let relay = run(w.relays().submit(&session(&agg), &AuthorizationNonce([7; 32]), &signature())).unwrap();
    assert_eq!(relay.authorization.terms, terms(&agg));
    assert_eq!(relay.authorization.signature.v, 27);
}

#[test]
fn refusals_come_before_anything_is_recorded_in_their_order() {
    let agg = checkout();
    let nonce = AuthorizationNonce([7; 32]);
    let submit = |w: &World, sig: &str| run(w.relays().submit(&session(&agg), &nonce, sig));
    let invalid = |field: &'static str| move |e: &Error| matches!(e, Error::InvalidWalletPaymentAttempt { field: f, .. } if f == field);

    // The relayer off: nothing else is asked.
    let mut off = World::new();
    off.relayer = MockRelayer::new();
    off.relayer.expect_address().returning(|| None);
    assert_eq!(submit(&off, &signature()), Err(Error::RelayerUnavailable(RelayerUnavailable::Off)));

    // An unknown nonce.
    let mut w = World::new();
    w.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
    w.store.expect_relay_in_flight().returning(|_, _| Ok(None));
    w.invoices = MockInvoiceStore::new();
    let loaded = agg.clone();
    w.invoices.expect_load_public().returning(move |_| Ok(loaded.clone()));
    w.invoices.expect_open_checkouts().returning(|_| Ok(Candidates::default()));
    w.invoices.expect_authorization_terms().returning(|_, _, _| Ok(None));
    assert!(invalid("nonce")(&submit(&w, &signature()).unwrap_err()));

    // A signature that is not one, or not the payer's.
    let mut w = World::new();
    w.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
    w.store.expect_relay_in_flight().returning(|_, _| Ok(None));
    assert!(invalid("signature")(&submit(&w, "0x1234").unwrap_err()));
    w.relayer.expect_signer().returning(|_, _| Some(wallet("cc")));
    assert!(invalid("signature")(&submit(&w, &signature()).unwrap_err()));

    // The chain's refusal.
    let mut w = World::new();
    w.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
    w.store.expect_relay_in_flight().returning(|_, _| Ok(None));
    w.relayer.expect_signer().returning(|_, a| Some(a.terms.from.clone()));
    w.relayer.expect_preflight().returning(|_| Ok(Preflight { used: true, ..good_preflight() }));
    assert_eq!(submit(&w, &signature()), Err(Error::AuthorizationUsed));

    // A relayer that cannot pay the gas.
    let mut w = World::new();
    w.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
    w.store.expect_relay_in_flight().returning(|_, _| Ok(None));
    w.relayer.expect_signer().returning(|_, a| Some(a.terms.from.clone()));
    w.relayer.expect_preflight().returning(|_| Ok(good_preflight()));
    w.relayer.expect_fees().returning(|| Ok(fees()));
    w.relayer.expect_balance().returning(|| Ok(60 * GWEI * 85_000 - 1));
    assert_eq!(submit(&w, &signature()), Err(Error::RelayerUnavailable(RelayerUnavailable::Unfunded)));

    // The day's budget.
    let mut w = World::new();
    w.all_good();
    w.store.expect_insert_relay().returning(|_, _| Ok(Inserted::OverBudget));
    assert_eq!(submit(&w, &signature()), Err(Error::RelayerUnavailable(RelayerUnavailable::DailyGasLimit)));

    // Another submission of the checkout is being sent: one payment at a time.
    let mut w = World::new();
    w.store.expect_relay_for_nonce().returning(|_, _, _| Ok(None));
    let other = queued(&agg, &SeqCrypto::default());
    let id = other.id.clone();
    w.store.expect_relay_in_flight().returning(move |_, _| Ok(Some(other.clone())));
    assert_eq!(submit(&w, &signature()), Err(Error::RelayInFlight(id)));
}

#[test]
fn a_queued_submission_whose_checkout_was_paid_meanwhile_is_cancelled_without_a_nonce() {
    let mut w = World::new();
    let mut agg = checkout();
    let relay = queued(&agg, &SeqCrypto::default());
    agg.sessions[0].status = crate::invoice::checkout::CheckoutStatus::Completed;
    w.invoices = MockInvoiceStore::new();
    w.invoices.expect_load_public().returning(move |_| Ok(agg.clone()));
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().returning(|_, _, _| Ok(Some(0)));
    w.relayer.expect_mined_nonce().returning(|| Ok(0));
    w.store.expect_in_flight().returning(|_, _| Ok(Vec::new()));
    w.store.expect_queued().returning(move |_, _| Ok(vec![relay.clone()]));
    w.store
        .expect_record_outcome()
        .withf(|r, _| r.status == RelayStatus::Cancelled && r.tx_nonce.is_none())
        .times(1)
        .returning(|_, _| Ok(true));
    let pass = run(w.relays().send_pass("worker-a")).unwrap();
    assert_eq!((pass.sent, pass.settled.clone()), (0, vec![RelayStatus::Cancelled]));
}

fn queued(agg: &InvoiceAggregate, crypto: &SeqCrypto) -> Relay {
    let authorization = SignedAuthorization { terms: terms(agg), signature: Signature::parse(&signature()).unwrap() };
    Relay::queued(crypto, (agg.invoice.scope.clone(), session(agg)), (authorization, relayer()), 85_000, now())
}

#[test]
fn an_attempt_submitted_before_answers_its_submission_without_asking_the_chain() {
    let mut w = World::new();
    let agg = checkout();
    let before = Relay { status: RelayStatus::Confirmed, ..queued(&agg, &SeqCrypto::default()) };
    let answer = before.clone();
    w.store.expect_relay_for_nonce().returning(move |_, _, _| Ok(Some(answer.clone())));
    let again = run(w.relays().submit(&session(&agg), &AuthorizationNonce([7; 32]), "not even a signature")).unwrap();
    assert_eq!(again, before);
}

fn signed(nonce: u64, fees: &Fees) -> RelayTransaction {
    RelayTransaction {
        hash: TxHash::parse(&format!("0x{:064x}", nonce + 1)).unwrap(),
        raw: vec![2, u8::try_from(nonce).unwrap()],
        fees: *fees,
        signed_at: now(),
    }
}

#[test]
fn an_idle_sender_asks_nothing_but_whether_work_waits() {
    let mut w = World::new();
    w.store.expect_has_work().times(1).returning(|_| Ok(false));
    assert_eq!(run(w.relays().send_pass("worker-a")).unwrap(), RelayPass::default());
}

#[test]
fn without_the_lease_a_worker_sends_nothing_and_asks_the_chain_nothing() {
    let mut w = World::new();
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().times(1).returning(|_, _, _| Ok(None));
    let pass = run(w.relays().send_pass("worker-b")).unwrap();
    assert_eq!(pass, RelayPass::default());
}

#[test]
fn the_sender_takes_the_higher_of_its_nonce_and_the_chains_and_stops_when_the_nonce_moved() {
    let mut w = World::new();
    let agg = checkout();
    let crypto = SeqCrypto::default();
    let (first, second) = (queued(&agg, &crypto), queued(&agg, &crypto));
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().returning(|_, holder, _| {
        assert_eq!(holder, "worker-a");
        Ok(Some(3))
    });
    w.relayer.expect_mined_nonce().returning(|| Ok(5));
    w.store.expect_in_flight().returning(|_, _| Ok(Vec::new()));
    let both = vec![first.clone(), second.clone()];
    w.store.expect_queued().returning(move |_, _| Ok(both.clone()));
    w.relayer.expect_preflight().returning(|_| Ok(good_preflight()));
    w.relayer.expect_fees().returning(|| Ok(fees()));
    w.relayer.expect_sign().returning(|_, (nonce, gas), f, _| {
        assert_eq!(gas, 85_000);
        Ok(signed(nonce, f))
    });
    let first_id = first.id.clone();
    // The first is recorded with nonce 5 (the chain's, above the store's 3); the second finds
    // the next nonce moved under it (another worker): nothing written, the pass stops.
    w.store.expect_record_first().times(2).returning(move |id, _, (expected, nonce), _| {
        if *id == first_id {
            assert_eq!((expected, nonce), (3, 5));
            Ok(true)
        } else {
            assert_eq!((expected, nonce), (6, 6));
            Ok(false)
        }
    });
    w.relayer.expect_broadcast().times(1).withf(|t| t.raw == vec![2, 5]).returning(|_| Ok(()));
    let pass = run(w.relays().send_pass("worker-a")).unwrap();
    assert_eq!((pass.sender, pass.sent, pass.broadcast_failures), (true, 1, 0));
}

#[test]
fn a_queued_submission_refused_on_the_last_look_is_settled_without_a_nonce() {
    let mut w = World::new();
    let agg = checkout();
    let relay = queued(&agg, &SeqCrypto::default());
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().returning(|_, _, _| Ok(Some(0)));
    w.relayer.expect_mined_nonce().returning(|| Ok(0));
    w.store.expect_in_flight().returning(|_, _| Ok(Vec::new()));
    w.store.expect_queued().returning(move |_, _| Ok(vec![relay.clone()]));
    w.relayer.expect_preflight().returning(|_| Ok(Preflight { used: true, ..good_preflight() }));
    w.store
        .expect_record_outcome()
        .withf(|r, _| r.status == RelayStatus::FrontRun && r.tx_nonce.is_none())
        .times(1)
        .returning(|_, _| Ok(true));
    let pass = run(w.relays().send_pass("worker-a")).unwrap();
    assert_eq!((pass.sent, pass.settled.clone()), (0, vec![RelayStatus::FrontRun]));
}

#[test]
fn a_mined_version_settles_its_submission_and_a_waiting_one_is_replaced_with_higher_fees() {
    let agg = checkout();
    let crypto = SeqCrypto::default();
    let sent_at = now() - Duration::seconds(31);
    let sent = |nonce: u64| Relay {
        status: RelayStatus::Sent,
        tx_nonce: Some(nonce),
        transactions: vec![signed(nonce, &fees())],
        broadcast_at: Some(sent_at),
        ..queued(&agg, &crypto)
    };
    let (mined, waiting) = (sent(0), sent(1));
    let mut w = World::new();
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().returning(|_, _, _| Ok(Some(2)));
    w.relayer.expect_mined_nonce().returning(|| Ok(1));
    let both = vec![mined.clone(), waiting.clone()];
    w.store.expect_in_flight().returning(move |_, _| Ok(both.clone()));
    w.store.expect_queued().returning(|_, _| Ok(Vec::new()));
    w.relayer.expect_authorization_used().returning(|_| Ok((false, now())));
    let mined_hash = mined.transactions[0].hash.clone();
    w.relayer.expect_receipt().returning(move |h| {
        Ok((*h == mined_hash).then(|| RelayReceipt {
            hash: h.clone(),
            succeeded: true,
            block_number: 10,
            gas_used: 61_000,
            fee_wei: 61_000 * 40 * GWEI,
        }))
    });
    w.store
        .expect_record_outcome()
        .withf(|r, _| r.status == RelayStatus::Confirmed && r.receipt.as_ref().is_some_and(|x| x.gas_used == 61_000))
        .times(1)
        .returning(|_, _| Ok(true));
    // The report to the checkout fails here (the mock store saves nothing): counted, not fatal.
    w.invoices.expect_load_invoice().returning(|_, _| Err(Error::Unavailable));
    w.relayer.expect_fees().returning(|| Ok(fees()));
    w.relayer.expect_sign().times(1).returning(|_, (nonce, _), f, _| {
        assert_eq!(nonce, 1, "a replacement keeps its nonce");
        assert!(f.max_fee_per_gas > fees().max_fee_per_gas + fees().max_fee_per_gas / 10);
        Ok(RelayTransaction { hash: TxHash::parse(&format!("0x{}", "e".repeat(64))).unwrap(), ..signed(nonce, f) })
    });
    w.store.expect_record_broadcast().times(1).returning(|_, _, again| {
        assert!(again.replacement.is_some());
        Ok(true)
    });
    w.relayer.expect_broadcast().times(1).returning(|_| Ok(()));
    let pass = run(w.relays().send_pass("worker-a")).unwrap();
    assert_eq!((pass.settled.clone(), pass.bumped, pass.reports_failed), (vec![RelayStatus::Confirmed], 1, 1));
}

/// The chain is read before the receipts; a version mined and reverted between the two reads
/// is judged by the chain as of its block (a second read), not by the block before it.
#[test]
fn a_version_reverted_after_the_first_read_is_judged_by_the_chain_at_its_block() {
    let agg = checkout();
    let crypto = SeqCrypto::default();
    let relay = Relay {
        status: RelayStatus::Sent,
        tx_nonce: Some(0),
        transactions: vec![signed(0, &fees())],
        broadcast_at: Some(now()),
        ..queued(&agg, &crypto)
    };
    let valid_before = relay.authorization.terms.valid_before;
    let mut w = World::new();
    w.store.expect_has_work().returning(|_| Ok(true));
    w.store.expect_take_lease().returning(|_, _, _| Ok(Some(1)));
    w.relayer.expect_mined_nonce().returning(|| Ok(1));
    w.store.expect_in_flight().returning(move |_, _| Ok(vec![relay.clone()]));
    w.store.expect_queued().returning(|_, _| Ok(Vec::new()));
    // First read: the block before it (still valid); second: its block, past validBefore.
    let reads = std::sync::atomic::AtomicU32::new(0);
    w.relayer.expect_authorization_used().times(2).returning(move |_| {
        let n = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let at = if n == 0 { valid_before - 10 } else { valid_before + 5 };
        Ok((false, DateTime::from_timestamp(at, 0).unwrap()))
    });
    w.relayer.expect_receipt().returning(|h| {
        Ok(Some(RelayReceipt { hash: h.clone(), succeeded: false, block_number: 10, gas_used: 30_000, fee_wei: 1 }))
    });
    w.store.expect_record_outcome().withf(|r, _| r.status == RelayStatus::Expired).times(1).returning(|_, _| Ok(true));
    let pass = run(w.relays().send_pass("worker-a")).unwrap();
    assert_eq!(pass.settled, vec![RelayStatus::Expired]);
}

#[test]
fn the_status_reads_todays_use_and_what_the_chain_says_when_it_answers() {
    let mut w = World::new();
    w.store
        .expect_usage()
        .withf(|_, since| *since == Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap())
        .returning(|_, _| Ok(RelayUsage { gas: 120_000, confirmed: 2, ..Default::default() }));
    w.relayer.expect_balance().returning(|| Err(Error::Unavailable));
    w.relayer.expect_fees().returning(|| Ok(fees()));
    let status = run(w.relays().status()).unwrap().unwrap();
    assert_eq!((status.balance_wei, status.today.gas, status.today.confirmed), (None, 120_000, 2));
    assert_eq!(status.state(), crate::relay::model::RelayerState::Unreachable);
}
