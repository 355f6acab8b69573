use chrono::{TimeZone, Utc};

use super::*;
use crate::invoice::wallet::AuthorizationNonce;
use crate::money::Decimal6;

fn terms(valid_before: i64) -> AuthorizationTerms {
    AuthorizationTerms {
        token_contract: WalletAddress::parse("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359").unwrap(),
        from: WalletAddress::parse("0x00000000000000000000000000000000000000aa").unwrap(),
        to: WalletAddress::parse("0x52908400098527886E0F7030069857D2E4169EE7").unwrap(),
        value: Decimal6::parse("10").unwrap(),
        valid_after: 0,
        valid_before,
        nonce: AuthorizationNonce([7; 32]),
    }
}

fn at(unix: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(unix, 0).unwrap()
}

#[test]
fn a_signature_is_65_bytes_with_v_normalised_and_a_malleable_s_refused() {
    let r = "11".repeat(32);
    let low_s = format!("7f{}", "00".repeat(31));
    for (v, expected) in [("00", 27), ("01", 28), ("1b", 27), ("1c", 28)] {
        let sig = Signature::parse(&format!("0x{r}{low_s}{v}")).unwrap();
        assert_eq!(sig.v, expected, "{v}");
        assert_eq!(Signature::from_bytes(&sig.bytes()), Some(sig));
    }
    assert_eq!(Signature::parse(&format!("0x{r}{low_s}02")), None, "v must be 27 or 28");
    let high_s = "ff".repeat(32);
    assert_eq!(Signature::parse(&format!("0x{r}{high_s}1b")), None, "high s is malleable (EIP-2)");
    let half = "7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0";
    assert!(Signature::parse(&format!("0x{r}{half}1b")).is_some(), "half the order is the highest s");
    let above = "7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a1";
    assert!(Signature::parse(&format!("0x{r}{above}1b")).is_none());
    assert_eq!(Signature::parse(&format!("{r}{low_s}1b")), None, "needs 0x");
    assert_eq!(Signature::parse(&format!("0x{r}{low_s}")), None, "64 bytes");
    assert_eq!(Signature::parse(&format!("0x{r}{low_s}1bzz")), None);
}

#[test]
fn a_replacement_raises_both_fees_by_an_eighth_or_to_the_suggestion_within_the_cap() {
    let fees = |max, tip| Fees { max_fee_per_gas: max, max_priority_fee_per_gas: tip };
    let sent = fees(80 * GWEI, 30 * GWEI);
    // | suggested now | cap | replacement |
    let cases = [
        (fees(40 * GWEI, 25 * GWEI), 1000 * GWEI, Some(fees(90 * GWEI + 1, 33_750_000_001))),
        (fees(200 * GWEI, 40 * GWEI), 1000 * GWEI, Some(fees(200 * GWEI, 40 * GWEI))),
        (fees(200 * GWEI, 40 * GWEI), 150 * GWEI, Some(fees(150 * GWEI, 40 * GWEI))),
        // The cap leaves less than a tenth more: no replacement (sent again as it is).
        (fees(40 * GWEI, 25 * GWEI), 85 * GWEI, None),
        (fees(40 * GWEI, 25 * GWEI), 80 * GWEI, None),
    ];
    for (suggested, cap, expected) in cases {
        assert_eq!(sent.bumped(&suggested, cap), expected, "{suggested:?} cap {cap}");
    }
    assert_eq!(fees(100, 200).capped(50), fees(50, 50), "the tip never above the fee");
    assert_eq!(fees(10 * GWEI, GWEI).worst_cost(100_000), 1_000_000 * GWEI);
}

#[test]
fn what_is_refused_before_sending_in_order_window_nonce_balance_call() {
    let now = 1_800_000_000;
    let ok =
        Preflight { chain_time: at(now), used: false, payer_balance: Decimal6::parse("25").unwrap(), call: Ok(70_000) };
    let with = |edit: &dyn Fn(&mut Preflight)| {
        let mut p = ok.clone();
        edit(&mut p);
        p
    };
    let poor = Decimal6::parse("9.999999").unwrap();
    // | valid before | chain says | refusal |
    let cases: Vec<(i64, Preflight, Option<Refusal>)> = vec![
        (now + 600, ok.clone(), None),
        (now + MIN_VALIDITY_SECONDS + 1, ok.clone(), None),
        (now + MIN_VALIDITY_SECONDS, ok.clone(), Some(Refusal::Expired)),
        (now - 1, ok.clone(), Some(Refusal::Expired)),
        // Expiry is told before use: an expired used authorization is expired.
        (now - 1, with(&|p| p.used = true), Some(Refusal::Expired)),
        (now + 600, with(&|p| p.used = true), Some(Refusal::Used)),
        (
            now + 600,
            with(&|p| {
                p.used = true;
                p.payer_balance = poor.clone()
            }),
            Some(Refusal::Used),
        ),
        (now + 600, with(&|p| p.payer_balance = poor.clone()), Some(Refusal::PayerBalance { balance: poor.clone() })),
        (now + 600, with(&|p| p.payer_balance = Decimal6::parse("10").unwrap()), None),
        (now + 600, with(&|p| p.call = Err("balance".into())), Some(Refusal::Rejected("balance".into()))),
        (
            now + 600,
            with(&|p| p.call = Ok(MAX_GAS_PER_SUBMISSION + 1)),
            Some(Refusal::Rejected(format!(
                "the call needs {} gas, more than the {MAX_GAS_PER_SUBMISSION} the relayer spends on one payment",
                MAX_GAS_PER_SUBMISSION + 1
            ))),
        ),
    ];
    for (valid_before, preflight, expected) in cases {
        assert_eq!(Refusal::of(&terms(valid_before), &preflight), expected, "{valid_before} {preflight:?}");
    }
    let not_yet = AuthorizationTerms { valid_after: now, ..terms(now + 600) };
    assert_eq!(Refusal::of(&not_yet, &ok), Some(Refusal::Expired), "validAfter must have passed");
    let t = terms(now + 600);
    assert_eq!(Refusal::Used.into_error(&t), Error::AuthorizationUsed);
    assert_eq!(
        Refusal::PayerBalance { balance: poor }.into_error(&t),
        Error::PayerBalanceInsufficient { balance: "9.999999".into(), required: "10.000000".into() }
    );
    assert_eq!(Refusal::Used.outcome().0, RelayStatus::FrontRun, "used before sending: another transaction paid");
}

fn sent_relay(valid_before: i64, broadcast_at: i64) -> Relay {
    let crypto = crate::testing::SeqCrypto::default();
    let fees = Fees { max_fee_per_gas: 80 * GWEI, max_priority_fee_per_gas: 30 * GWEI };
    Relay {
        id: RelayId::generate(&crypto),
        scope: Scope::new(crate::ids::MerchantId::from_trusted("mer_a".into()), crate::mode::Mode::Live),
        session_id: CheckoutSessionId::parse("cs_a").unwrap(),
        authorization: SignedAuthorization {
            terms: terms(valid_before),
            signature: Signature { r: [1; 32], s: [2; 32], v: 27 },
        },
        relayer: WalletAddress::parse("0x00000000000000000000000000000000000000bb").unwrap(),
        status: RelayStatus::Sent,
        gas_limit: 100_000,
        tx_nonce: Some(5),
        transactions: vec![RelayTransaction {
            hash: TxHash::parse(&format!("0x{}", "a".repeat(64))).unwrap(),
            raw: vec![2],
            fees,
            signed_at: at(broadcast_at),
        }],
        broadcast_at: Some(at(broadcast_at)),
        receipt: None,
        detail: None,
        created_at: at(broadcast_at),
    }
}

#[test]
fn a_sent_submission_is_settled_from_its_receipt_and_the_authorizations_state() {
    let now = 1_800_000_000;
    let bump = Duration::seconds(30);
    let receipt = |succeeded| RelayReceipt {
        hash: TxHash::parse(&format!("0x{}", "a".repeat(64))).unwrap(),
        succeeded,
        block_number: 9,
        gas_used: 60_000,
        fee_wei: 60_000 * 50 * GWEI,
    };
    let relay = sent_relay(now + 600, now - 5);
    let step = |r: &Relay, receipt: Option<RelayReceipt>, mined: u64, used: bool, chain: i64| {
        sent_step(r, receipt, (mined, used, at(chain)), (at(now), bump))
    };
    // | receipt | mined nonce | used | chain time | step |
    assert_eq!(step(&relay, Some(receipt(true)), 6, true, now), SentStep::Mined(RelayStatus::Confirmed, receipt(true)));
    assert_eq!(
        step(&relay, Some(receipt(false)), 6, true, now),
        SentStep::Mined(RelayStatus::FrontRun, receipt(false))
    );
    assert_eq!(
        step(&relay, Some(receipt(false)), 6, false, now + 600),
        SentStep::Mined(RelayStatus::Expired, receipt(false))
    );
    assert_eq!(step(&relay, Some(receipt(false)), 6, false, now), SentStep::Mined(RelayStatus::Failed, receipt(false)));
    // Waiting: the outcome may be known before it is mined; replaced after the bump interval.
    assert_eq!(step(&relay, None, 5, false, now), SentStep::Waiting(None, false));
    assert_eq!(step(&relay, None, 5, true, now), SentStep::Waiting(Some(RelayStatus::FrontRun), false));
    assert_eq!(step(&relay, None, 5, false, now + 600), SentStep::Waiting(Some(RelayStatus::Expired), false));
    let quiet = sent_relay(now + 600, now - 30);
    assert_eq!(step(&quiet, None, 5, false, now), SentStep::Waiting(None, true));
    assert_eq!(step(&quiet, None, 5, true, now), SentStep::Waiting(Some(RelayStatus::FrontRun), true));
    // Its nonce taken by a transaction not its own: after a quiet while, sent again.
    assert_eq!(step(&relay, None, 6, false, now), SentStep::Waiting(None, false));
    assert_eq!(step(&quiet, None, 6, false, now), SentStep::Requeue);
    assert_eq!(step(&quiet, None, 6, true, now), SentStep::Waiting(Some(RelayStatus::FrontRun), false));
}

#[test]
fn the_relayers_state_from_its_balance_fees_and_day() {
    let fees = Fees { max_fee_per_gas: 100 * GWEI, max_priority_fee_per_gas: 30 * GWEI };
    let typical = fees.worst_cost(TYPICAL_GAS);
    let status = |balance: Option<u128>, gas: u64| RelayerStatus {
        address: WalletAddress::parse("0x00000000000000000000000000000000000000bb").unwrap(),
        balance_wei: balance,
        fees: Some(fees),
        today: RelayUsage { gas, ..Default::default() },
        daily_gas_limit: 1_000_000,
    };
    assert_eq!(status(None, 0).state(), RelayerState::Unreachable);
    assert_eq!(status(Some(typical - 1), 0).state(), RelayerState::Unfunded);
    assert_eq!(status(Some(typical), 0).state(), RelayerState::LowBalance);
    assert_eq!(status(Some(typical * LOW_BALANCE_SUBMISSIONS), 0).state(), RelayerState::Ok);
    assert_eq!(status(Some(typical * LOW_BALANCE_SUBMISSIONS), 900_000).state(), RelayerState::Ok);
    assert_eq!(status(Some(typical * LOW_BALANCE_SUBMISSIONS), 900_001).state(), RelayerState::AtDailyLimit);
}

#[test]
fn wei_reads_as_pol_exactly() {
    assert_eq!(pol(0), "0");
    assert_eq!(pol(1), "0.000000000000000001");
    assert_eq!(pol(1_500_000_000_000_000_000), "1.5");
    assert_eq!(pol(u128::MAX), "340282366920938463463.374607431768211455");
}

#[test]
fn the_budget_day_and_a_submissions_gas_limit() {
    assert_eq!(
        day_start(Utc.with_ymd_and_hms(2026, 12, 1, 23, 59, 59).unwrap()),
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
    );
    assert_eq!(gas_limit(60_000), 85_000);
    assert_eq!(gas_limit(MAX_GAS_PER_SUBMISSION), MAX_GAS_PER_SUBMISSION);
    for s in RelayStatus::ALL {
        assert_eq!(RelayStatus::parse(s.as_str()), Some(s));
    }
    assert!(!RelayStatus::Sent.is_final() && RelayStatus::FrontRun.is_final());
}
