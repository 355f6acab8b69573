//! Attribution by evidence: which checkout a transfer into a shared wallet pays.
//!
//! A merchant's wallet receives every customer's transfers, so a transfer log names no checkout
//! by itself. What names one is evidence, of different strength:
//!
//! 1. an **authorization**: the transfer was made by an EIP-3009 authorization whose nonce the
//!    service derived for a wallet payment attempt of the checkout by the sender's wallet (the
//!    token pairs the nonce with the transfer in its `AuthorizationUsed` log): it decides alone,
//!    whatever amount, report or binding names another checkout;
//! 2. a **bound wallet**: the sender's wallet was bound to the checkout by a wallet payment
//!    attempt before the transfer, and the transfer is exactly what the checkout asks now;
//! 3. a **unique amount**: the transfer is exactly the unique amount the checkout asks;
//! 4. a **reported hash**: someone reported the transaction for the checkout (or bound the
//!    sender's wallet to it, with another amount);
//! 5. an **amount** the checkout asks now, which other checkouts could ask as well.
//!
//! Ranks 1 to 3 are carried by the transfer itself (its sender, its amount): the strongest of
//! them present decides, alone. Ranks 4 and 5 are claims anyone holding a checkout id can make,
//! or amounts several checkouts may ask: they decide only when they all name the same checkout.
//! Wherever evidence of the deciding strength names several checkouts, nothing is guessed: the
//! transfer is held for a person (a dispute, or several matching amounts).
//!
//! A checkout created after the transfer's block (by the service's clock, which may run ahead
//! of the chain's) takes it only on evidence of rank 2 or 3, within the clock skew allowed.

use chrono::{DateTime, Duration, SubsecRound, Utc};

use crate::chain::model::{LoggedTransfer, OpenCheckout, TokenTransfer, UnattributedReason};
use crate::chain::verify::in_range;
use crate::ids::CheckoutSessionId;
use crate::invoice::payment::{Evidence, FailureReason};
use crate::invoice::wallet::AuthorizationNonce;
use crate::merchant::model::WalletAddress;
use crate::money::Amount;

/// What attribution weighs for one transfer log besides the log itself.
#[derive(Clone, Copy, Debug)]
pub struct Claims<'a> {
    /// The checkouts of the log's wallet and token that may take it at its block's time and
    /// that its amount, its sender or its reports may name (others cannot be named).
    pub open: &'a [OpenCheckout],
    /// Some checkout of the wallet and token was open at the block's time, named or not.
    pub any_open: bool,
    /// The checkouts its transaction's hash was reported for.
    pub reported: &'a [CheckoutSessionId],
    /// How far the service's clock may run ahead of the chain's: a checkout created up to this
    /// long after the block takes the transfer on evidence of rank 2 or 3.
    pub skew: Duration,
}

/// Where the evidence puts one transfer log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attribution<'a> {
    /// The one checkout the deciding evidence names.
    Checkout {
        /// The checkout.
        checkout: &'a OpenCheckout,
        /// The strongest evidence naming it.
        evidence: Evidence,
    },
    /// Evidence of the deciding strength names several checkouts: held for a person.
    Held {
        /// The strength that decided ([`Evidence::Amount`] when only amounts name them).
        evidence: Evidence,
        /// The checkouts it names.
        candidates: Vec<&'a OpenCheckout>,
    },
    /// Nothing names a checkout.
    Unattributed(UnattributedReason),
}

impl Attribution<'_> {
    /// Why the log is recorded unattributed, with the candidate checkouts (of every merchant;
    /// the recording keeps each merchant's own), or `None` when a checkout takes it.
    pub fn unattributed(&self) -> Option<(UnattributedReason, Vec<CheckoutSessionId>)> {
        match self {
            Self::Checkout { .. } => None,
            Self::Held { evidence, candidates } => {
                let reason = if *evidence == Evidence::Amount {
                    UnattributedReason::SeveralMatchingCheckouts
                } else {
                    UnattributedReason::Disputed
                };
                Some((reason, candidates.iter().map(|c| c.session_id.clone()).collect()))
            }
            Self::Unattributed(reason) => Some((*reason, Vec::new())),
        }
    }
}

/// Whether `checkout` existed at `at` (to the second: block times are whole seconds).
fn on_time(checkout: &OpenCheckout, at: DateTime<Utc>) -> bool {
    checkout.created_at.trunc_subsecs(0) <= at
}

/// Whether `from` was bound to `c` by the block's time (within the skew).
fn bound(c: &OpenCheckout, from: Option<&WalletAddress>, at: DateTime<Utc>, skew: Duration) -> bool {
    from.is_some_and(|from| c.bindings.iter().any(|b| b.wallet == *from && b.bound_at <= at + skew))
}

/// The evidence the transfer itself carries for `c` (rank 2 or 3), if any.
fn strong(c: &OpenCheckout, t: &Sent<'_>, at: DateTime<Utc>, skew: Duration) -> Option<Evidence> {
    if c.due_now() != *t.amount {
        return None;
    }
    if bound(c, t.from, at, skew) {
        Some(Evidence::BoundWallet)
    } else if c.asks_unique_amount() {
        Some(Evidence::UniqueAmount)
    } else {
        None
    }
}

/// The claims naming `c` (rank 4 or 5), if any: only for a checkout that existed at the block.
fn weak(c: &OpenCheckout, t: &Sent<'_>, at: DateTime<Utc>, claims: &Claims<'_>) -> Option<Evidence> {
    if !on_time(c, at) {
        return None;
    }
    if bound(c, t.from, at, claims.skew) || claims.reported.contains(&c.session_id) {
        Some(Evidence::ReportedHash)
    } else if c.due_now() == *t.amount {
        Some(Evidence::Amount)
    } else {
        None
    }
}

/// What attribution reads of a transfer: who sent how much, and by which authorization.
struct Sent<'a> {
    /// The wallet whose tokens moved (`None`: one nobody bound).
    from: Option<&'a WalletAddress>,
    amount: &'a Amount,
    /// The nonce of the EIP-3009 authorization that made it.
    authorization: Option<&'a AuthorizationNonce>,
}

/// Whether `c` derived `nonce` for an attempt of `from`'s wallet.
fn authorized(c: &OpenCheckout, from: Option<&WalletAddress>, nonce: &AuthorizationNonce) -> bool {
    from.is_some_and(|from| c.bindings.iter().any(|b| b.wallet == *from && b.nonces.contains(nonce)))
}

/// The checkout `logged` pays by the evidence in `claims`, a hold, or why it is unattributed.
pub fn attribute<'a>(logged: &LoggedTransfer, claims: &Claims<'a>) -> Attribution<'a> {
    let t = &logged.transfer;
    let sent = Sent { from: Some(&t.from), amount: &t.amount, authorization: t.authorization.as_ref() };
    attribute_sent(&sent, logged.block_time, claims)
}

/// Whether a transfer of `amount` at `at`, sent without its hash from a wallet nobody bound (a
/// scanned or copied payment), would pay checkout `own` among `open`.
pub fn pays_without_hash(own: &CheckoutSessionId, amount: &Amount, open: &[OpenCheckout], at: DateTime<Utc>) -> bool {
    let claims = Claims { open, any_open: true, reported: &[], skew: Duration::zero() };
    matches!(attribute_sent(&Sent { from: None, amount, authorization: None }, at, &claims),
        Attribution::Checkout { checkout, .. } if checkout.session_id == *own)
}

fn attribute_sent<'a>(t: &Sent<'_>, at: DateTime<Utc>, claims: &Claims<'a>) -> Attribution<'a> {
    if !in_range(t.amount) {
        return Attribution::Unattributed(UnattributedReason::AmountOutOfRange);
    }
    let open: Vec<&OpenCheckout> =
        claims.open.iter().filter(|c| c.created_at.trunc_subsecs(0) <= at + claims.skew).collect();
    // Rank 1: the nonce names its checkout, whatever it moved and whatever else is claimed.
    if let Some(nonce) = t.authorization {
        let named: Vec<(&OpenCheckout, Evidence)> =
            open.iter().filter(|c| authorized(c, t.from, nonce)).map(|c| (*c, Evidence::Authorization)).collect();
        if !named.is_empty() {
            return decided(named);
        }
    }
    let strongest = open.iter().filter_map(|c| strong(c, t, at, claims.skew)).min();
    if let Some(evidence) = strongest {
        let named: Vec<(&OpenCheckout, Evidence)> =
            open.iter().filter(|c| strong(c, t, at, claims.skew) == Some(evidence)).map(|c| (*c, evidence)).collect();
        return decided(named);
    }
    let named: Vec<(&OpenCheckout, Evidence)> =
        open.iter().filter_map(|c| weak(c, t, at, claims).map(|e| (*c, e))).collect();
    if named.is_empty() {
        let reason = if claims.any_open || open.iter().any(|c| on_time(c, at)) {
            UnattributedReason::NoMatchingAmount
        } else {
            UnattributedReason::NoOpenCheckout
        };
        return Attribution::Unattributed(reason);
    }
    decided(named)
}

/// One checkout named: it. Several of one invoice (a remainder's checkout and the first one,
/// both asking the rest): the money pays that invoice whichever takes it, so the one the
/// strongest evidence names, the newest of those. Several invoices: held.
fn decided(named: Vec<(&OpenCheckout, Evidence)>) -> Attribution<'_> {
    let evidence = named.iter().map(|(_, e)| *e).min().unwrap_or(Evidence::Amount);
    let Some((first, _)) = named.first() else {
        return Attribution::Unattributed(UnattributedReason::NoMatchingAmount);
    };
    if named.iter().all(|(c, _)| c.invoice_id == first.invoice_id) {
        let best = named.iter().filter(|(_, e)| *e == evidence).max_by_key(|(c, _)| c.created_at);
        if let Some((checkout, evidence)) = best {
            return Attribution::Checkout { checkout, evidence: *evidence };
        }
    }
    Attribution::Held { evidence, candidates: named.into_iter().map(|(c, _)| c).collect() }
}

/// The logs a hash reported for checkout `own` may count, and the strongest evidence naming
/// `own` for them: those whose attribution is `own`. Errors, when none is: `Disputed` (held,
/// `own` among the candidates), `TransferBeforeCheckout` (`own` came after the block, and only
/// the report names it), or `AttributedToAnotherCheckout`.
pub fn claimable(
    own: &CheckoutSessionId,
    logs: &[LoggedTransfer],
    claims: &Claims<'_>,
) -> Result<(Vec<TokenTransfer>, Evidence), FailureReason> {
    let mut counted = Vec::new();
    let mut best: Option<Evidence> = None;
    let mut held = false;
    for logged in logs {
        match attribute(logged, claims) {
            Attribution::Checkout { checkout, evidence } if checkout.session_id == *own => {
                counted.push(logged.transfer.clone());
                best = Some(best.map_or(evidence, |b| b.min(evidence)));
            }
            Attribution::Held { candidates, .. } if candidates.iter().any(|c| c.session_id == *own) => held = true,
            _ => {}
        }
    }
    if let Some(evidence) = best {
        return Ok((counted, evidence));
    }
    let early = claims
        .open
        .iter()
        .find(|c| c.session_id == *own)
        .is_some_and(|c| logs.first().is_some_and(|l| !on_time(c, l.block_time)));
    Err(if held {
        FailureReason::Disputed
    } else if early {
        FailureReason::TransferBeforeCheckout
    } else {
        FailureReason::AttributedToAnotherCheckout
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::MerchantId;
    use crate::invoice::checkout::Binding;
    use crate::invoice::payment::{BlockRef, TxHash};
    use crate::mode::{Mode, Scope};
    use crate::money::Decimal6;

    fn address(n: u8) -> WalletAddress {
        WalletAddress::parse(&format!("0x{}", format!("{n:02x}").repeat(20))).unwrap()
    }

    fn d(s: &str) -> Amount {
        Decimal6::parse(s).unwrap()
    }

    fn block_time() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// A checkout asking `amount` (with `offset` of it unique), created a minute before the block.
    fn checkout(name: &str, amount: &str, offset: &str) -> OpenCheckout {
        OpenCheckout {
            scope: Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Live),
            session_id: CheckoutSessionId::from_trusted(format!("cs_{name}")),
            invoice_id: crate::ids::InvoiceId::from_trusted(format!("inv_{name}")),
            amount_due: d(amount),
            amount_offset: d(offset),
            invoice_remaining: d(amount).saturating_sub(&d(offset)),
            created_at: block_time() - Duration::minutes(1),
            bindings: Vec::new(),
        }
    }

    fn bound(mut c: OpenCheckout, wallet: u8) -> OpenCheckout {
        c.bindings.push(Binding {
            wallet: address(wallet),
            bound_at: block_time() - Duration::seconds(10),
            nonces: Vec::new(),
        });
        c
    }

    /// A transfer of `amount` from wallet 9, log `index`.
    fn log(amount: &str, index: u64) -> LoggedTransfer {
        LoggedTransfer {
            tx_hash: TxHash::parse(&format!("0x{}", "a".repeat(64))).unwrap(),
            block: BlockRef { number: 7, hash: format!("0x{}", "b".repeat(64)) },
            block_time: block_time(),
            transfer: TokenTransfer {
                log_index: index,
                token_contract: address(1),
                from: address(9),
                to: address(2),
                amount: d(amount),
                authorization: None,
            },
        }
    }

    fn id(name: &str) -> CheckoutSessionId {
        CheckoutSessionId::from_trusted(format!("cs_{name}"))
    }

    /// Where a transfer of `amount` from wallet 9 goes among `open`, reported for `reported`:
    /// the checkout's name and evidence, `held <names>`, or the unattributed reason.
    fn outcome(amount: &str, open: &[OpenCheckout], reported: &[&str]) -> String {
        let reported: Vec<CheckoutSessionId> = reported.iter().map(|r| id(r)).collect();
        let claims = Claims { open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        match attribute(&log(amount, 0), &claims) {
            Attribution::Checkout { checkout, evidence } => {
                format!("{} by {}", &checkout.session_id.as_str()[3..], evidence.as_str())
            }
            Attribution::Held { evidence, candidates } => {
                let names: Vec<&str> = candidates.iter().map(|c| &c.session_id.as_str()[3..]).collect();
                format!("held {} by {}", names.join(","), evidence.as_str())
            }
            Attribution::Unattributed(reason) => reason.as_str().to_owned(),
        }
    }

    #[test]
    fn the_strongest_evidence_decides_and_equal_evidence_is_held() {
        let plain = |n: &str, a: &str| checkout(n, a, "0");
        let unique = |n: &str, a: &str| checkout(n, a, "0.000347");
        let cases: Vec<(&str, Vec<OpenCheckout>, Vec<&str>, &str)> = vec![
            ("5", vec![], vec![], "no_open_checkout"),
            ("5", vec![plain("a", "7")], vec![], "no_matching_amount"),
            ("7", vec![plain("a", "7"), plain("b", "5")], vec![], "a by amount"),
            ("5", vec![plain("a", "5"), plain("b", "5")], vec![], "held a,b by amount"),
            // A report alone decides; a report agreeing with the amount too.
            ("6", vec![plain("a", "7")], vec!["a"], "a by reported_hash"),
            ("7", vec![plain("a", "7")], vec!["a"], "a by reported_hash"),
            // Case 2: a report against another checkout's exact amount (not unique) is held.
            ("27.77", vec![plain("x", "71"), plain("y", "27.77")], vec!["x"], "held x,y by reported_hash"),
            // Case 4 with unique amounts off: a report on one twin against the other.
            ("30", vec![plain("v", "30"), plain("a", "30")], vec!["a"], "held v,a by reported_hash"),
            // Reports for two checkouts.
            ("30.5", vec![plain("v", "30"), plain("a", "31")], vec!["v", "a"], "held v,a by reported_hash"),
            // A unique amount beats any report, and twins cannot share it.
            ("30.000347", vec![unique("v", "30.000347"), plain("a", "31")], vec!["a"], "v by unique_amount"),
            (
                "30.000347",
                vec![unique("v", "30.000347"), unique("a", "30.000812")],
                vec!["a", "v"],
                "v by unique_amount",
            ),
            // Case 3: the bound twin beats the unbound one, whatever is reported.
            ("10", vec![bound(plain("a", "10"), 9), plain("b", "10")], vec!["b"], "a by bound_wallet"),
            // A binding with another amount is a claim like a report.
            ("9", vec![bound(plain("a", "10"), 9), plain("b", "9")], vec![], "held a,b by reported_hash"),
            ("9", vec![bound(plain("a", "10"), 9)], vec![], "a by reported_hash"),
            // Another wallet's binding names nothing.
            ("10", vec![bound(plain("a", "10"), 8), plain("b", "10")], vec![], "held a,b by amount"),
            // A binding outranks a unique amount; two bindings of the same wallet and amount are held.
            (
                "10.000347",
                vec![bound(plain("a", "10.000347"), 9), unique("b", "10.000347")],
                vec![],
                "a by bound_wallet",
            ),
            ("10", vec![bound(plain("a", "10"), 9), bound(plain("b", "10"), 9)], vec![], "held a,b by bound_wallet"),
        ];
        for (amount, open, reported, expected) in cases {
            assert_eq!(outcome(amount, &open, &reported), expected, "{amount} {reported:?}");
        }
    }

    #[test]
    fn a_partly_paid_checkout_asks_its_remainder_and_it_is_no_longer_unique() {
        let mut partly = checkout("x", "73.000347", "0.000347");
        partly.invoice_remaining = d("42.99");
        assert_eq!(partly.due_now(), d("42.99"));
        assert!(!partly.asks_unique_amount());
        assert_eq!(outcome("42.99", std::slice::from_ref(&partly), &[]), "x by amount");
        assert_eq!(outcome("73.000347", std::slice::from_ref(&partly), &[]), "no_matching_amount");
        // Two checkouts whose amounts due now collide are twins like any.
        let other = checkout("y", "42.99", "0");
        assert_eq!(outcome("42.99", &[partly.clone(), other], &[]), "held x,y by amount");
        // ... unless they collect for the same invoice: its remainder's checkout takes it.
        let mut remainder = checkout("r", "42.99", "0");
        remainder.invoice_id = partly.invoice_id.clone();
        remainder.created_at = partly.created_at + Duration::seconds(20);
        remainder.invoice_remaining = d("42.99");
        assert_eq!(outcome("42.99", &[partly.clone(), remainder.clone()], &[]), "r by amount");
        assert_eq!(outcome("42.99", &[partly, remainder], &["x"]), "x by reported_hash");
    }

    #[test]
    fn a_checkout_created_after_the_block_takes_it_only_on_evidence_the_transfer_carries() {
        let mut later = checkout("late", "12.000347", "0.000347");
        later.created_at = block_time() + Duration::seconds(5);
        assert_eq!(outcome("12.000347", std::slice::from_ref(&later), &[]), "late by unique_amount");
        let mut plain_later = checkout("late", "12", "0");
        plain_later.created_at = block_time() + Duration::seconds(5);
        assert_eq!(outcome("12", std::slice::from_ref(&plain_later), &["late"]), "no_open_checkout");
        let mut too_late = later.clone();
        too_late.created_at = block_time() + Duration::seconds(31);
        assert_eq!(outcome("12.000347", &[too_late], &[]), "no_open_checkout");
        // A binding made after the block (beyond the skew) is no evidence for it.
        let mut late_binding = checkout("a", "10", "0");
        late_binding.bindings.push(Binding {
            wallet: address(9),
            bound_at: block_time() + Duration::seconds(31),
            nonces: Vec::new(),
        });
        assert_eq!(outcome("10", &[late_binding, checkout("b", "10", "0")], &[]), "held a,b by amount");
    }

    #[test]
    fn an_absurd_amount_is_never_attributed() {
        let huge = Decimal6::from_units(&"9".repeat(78)).unwrap();
        let mut l = log("1", 0);
        l.transfer.amount = huge;
        let open = [checkout("a", "1", "0")];
        let claims = Claims { open: &open, any_open: false, reported: &[id("a")], skew: Duration::seconds(30) };
        assert_eq!(attribute(&l, &claims), Attribution::Unattributed(UnattributedReason::AmountOutOfRange));
    }

    #[test]
    fn a_report_counts_only_the_logs_the_evidence_gives_its_checkout() {
        let open = [checkout("v1", "10", "0"), checkout("v2", "20.000347", "0.000347")];
        let reported = [id("v1")];
        let claims = Claims { open: &open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        // One transaction paying both: the report takes its own log, never the unique one.
        let logs = [log("10", 0), log("20.000347", 1)];
        let (counted, evidence) = claimable(&id("v1"), &logs, &claims).unwrap();
        assert_eq!(counted.iter().map(|t| t.log_index).collect::<Vec<_>>(), [0]);
        assert_eq!(evidence, Evidence::ReportedHash);
        // A report of a transfer another checkout's unique amount names fails for the reporter.
        let reported = [id("v1")];
        let claims = Claims { open: &open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        assert_eq!(
            claimable(&id("v1"), &[log("20.000347", 0)], &claims),
            Err(FailureReason::AttributedToAnotherCheckout)
        );
        // Reports for two checkouts: held.
        let reported = [id("v1"), id("v2")];
        let claims = Claims { open: &open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        assert_eq!(claimable(&id("v1"), &[log("15", 0)], &claims), Err(FailureReason::Disputed));
        // A checkout made after the block, named only by its report.
        let mut later = checkout("late", "15", "0");
        later.created_at = block_time() + Duration::seconds(2);
        let open = [later];
        let reported = [id("late")];
        let claims = Claims { open: &open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        assert_eq!(claimable(&id("late"), &[log("15", 0)], &claims), Err(FailureReason::TransferBeforeCheckout));
    }

    #[test]
    fn a_known_nonce_names_its_checkout_whatever_else_is_claimed() {
        let nonce = AuthorizationNonce([7; 32]);
        let authorized = |name: &str, amount: &str, wallet: u8| {
            let mut c = checkout(name, amount, "0");
            c.bindings.push(Binding {
                wallet: address(wallet),
                bound_at: block_time() - Duration::seconds(10),
                nonces: vec![nonce],
            });
            c
        };
        let with_nonce = |amount: &str, n: AuthorizationNonce| {
            let mut l = log(amount, 0);
            l.transfer.authorization = Some(n);
            l
        };
        let decide = |logged: &LoggedTransfer, open: &[OpenCheckout], reported: &[&str]| {
            let reported: Vec<CheckoutSessionId> = reported.iter().map(|r| id(r)).collect();
            let claims = Claims { open, any_open: true, reported: &reported, skew: Duration::seconds(30) };
            match attribute(logged, &claims) {
                Attribution::Checkout { checkout, evidence } => {
                    format!("{} by {}", &checkout.session_id.as_str()[3..], evidence.as_str())
                }
                other => format!("{other:?}"),
            }
        };
        // A's nonce in a transfer of B's amount, reported on B and with B bound: A.
        let open = vec![authorized("a", "71", 9), bound(checkout("b", "27.77", "0"), 9)];
        assert_eq!(decide(&with_nonce("27.77", nonce), &open, &["b"]), "a by authorization");
        // A unique amount elsewhere does not outrank it either.
        let open = vec![authorized("a", "71", 9), checkout("u", "27.770347", "0.000347")];
        assert_eq!(decide(&with_nonce("27.770347", nonce), &open, &[]), "a by authorization");
        // An unknown nonce is an ordinary transfer; so is a known one from another wallet.
        let open = vec![authorized("a", "71", 8), checkout("b", "27.77", "0")];
        assert_eq!(decide(&with_nonce("27.77", AuthorizationNonce([8; 32])), &open, &[]), "b by amount");
        let open = vec![authorized("a", "71", 8), checkout("b", "27.77", "0")];
        assert_eq!(decide(&with_nonce("27.77", nonce), &open, &[]), "b by amount");
        // A report on B for a transfer A's nonce names counts nothing for B.
        let open = vec![authorized("a", "27.77", 9), checkout("b", "27.77", "0")];
        let reported = [id("b")];
        let claims = Claims { open: &open, any_open: true, reported: &reported, skew: Duration::seconds(30) };
        let refused = claimable(&id("b"), &[with_nonce("27.77", nonce)], &claims);
        assert_eq!(refused.err(), Some(FailureReason::AttributedToAnotherCheckout));
        let (counted, evidence) = claimable(&id("a"), &[with_nonce("27.77", nonce)], &claims).unwrap();
        assert_eq!((counted.len(), evidence), (1, Evidence::Authorization));
    }

    #[test]
    fn a_hold_lists_its_candidates_with_the_reason() {
        let open = [checkout("a", "5", "0"), checkout("b", "5", "0")];
        let claims = Claims { open: &open, any_open: false, reported: &[], skew: Duration::seconds(30) };
        let held = attribute(&log("5", 0), &claims).unattributed().unwrap();
        assert_eq!(held, (UnattributedReason::SeveralMatchingCheckouts, vec![id("a"), id("b")]));
        let reported = [id("a")];
        let claims = Claims { open: &open, any_open: false, reported: &reported, skew: Duration::seconds(30) };
        let held = attribute(&log("5", 0), &claims).unattributed().unwrap();
        assert_eq!(held.0, UnattributedReason::Disputed);
    }

    #[test]
    fn a_scanned_transfer_pays_a_checkout_only_when_its_amount_names_it_alone() {
        let open = [checkout("a", "5", "0"), checkout("b", "5", "0"), bound(checkout("c", "6", "0"), 9)];
        assert!(!pays_without_hash(&id("a"), &d("5"), &open, block_time()));
        // Bound to somebody: a transfer from another wallet still pays it by its amount.
        assert!(pays_without_hash(&id("c"), &d("6"), &open, block_time()));
    }
}
