//! What the public routes (no merchant key) take and answer: only what a customer may see.

use serde::{Deserialize, Serialize};
use stablepay_domain::Mode;
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::payment::Payment;
use stablepay_domain::invoice::public::{CheckoutView, InvoiceView};
use stablepay_domain::url::PublicPages;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::envelope;

/// A payment as the public submission route shows it: no merchant data.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmittedPaymentOut {
    pub id: String,
    /// The literal `payment`.
    pub object: String,
    /// detected, validating, confirmed, underpaid, overpaid, failed or duplicate.
    pub status: String,
    pub checkout_session_id: String,
    pub transaction_hash: String,
    pub failure_reason: Option<String>,
}

impl From<&Payment> for SubmittedPaymentOut {
    fn from(p: &Payment) -> Self {
        Self {
            id: p.id.to_string(),
            object: "payment".into(),
            status: p.status.as_str().into(),
            checkout_session_id: p.checkout_session_id.to_string(),
            transaction_hash: p.transaction_hash.as_str().into(),
            failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
        }
    }
}

envelope!(/// A reported payment.
    SubmittedPaymentEnvelope, SubmittedPaymentOut);

/// `POST /v1/public/checkout-sessions/{id}/payments` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubmitPaymentIn {
    /// The hash of the customer's transfer: 0x followed by 64 hexadecimal digits.
    #[schema(pattern = r"^0x[0-9a-fA-F]{64}$")]
    pub transaction_hash: String,
}

/// Whether a transfer sent without its hash (scanned or copied) can be matched to this checkout.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanOrCopyOut {
    pub available: bool,
    /// `SCAN_OR_COPY_UNAVAILABLE` when not available.
    pub code: Option<String>,
    /// Why, in the customer's words.
    pub message: Option<String>,
}

/// The latest payment of a checkout, as its customer may see it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicPaymentOut {
    /// detected, validating, confirmed, underpaid, overpaid, failed or duplicate.
    pub status: String,
    pub amount_received: String,
    pub transaction_hash: String,
    pub failure_reason: Option<String>,
}

/// A checkout as its customer's page sees it (what the checkout page shows, for its live
/// status).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicCheckoutSessionOut {
    /// The literal `public_checkout_session`.
    pub object: String,
    pub id: String,
    pub mode: String,
    /// pending, completed, expired or cancelled.
    pub status: String,
    /// pay, validating, paid, underpaid (the rest is due), failed (pay again), held (a reported
    /// transfer is held for the merchant to decide: do not pay it again; still payable), expired
    /// or cancelled.
    pub phase: String,
    pub merchant_name: String,
    pub invoice_number: Option<String>,
    /// What to pay now (the remainder after a partial payment).
    pub amount_due: String,
    /// The same in the token's smallest units (6 decimals).
    pub amount_due_units: String,
    pub currency_code: String,
    pub chain_id: u64,
    /// Live mode only: where to send the transfer (test checkouts take no real transfer).
    pub settlement_wallet_address: Option<String>,
    /// Live mode only.
    pub token_contract: Option<String>,
    /// Live mode, when scan and copy are available: the EIP-681 transfer request.
    pub payment_uri: Option<String>,
    /// Live mode only.
    pub scan_or_copy: Option<ScanOrCopyOut>,
    pub expires_at: String,
    /// Seconds until it expires, by the service's clock (0 once expired).
    pub seconds_left: i64,
    pub latest_payment: Option<PublicPaymentOut>,
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
}

envelope!(/// A public checkout view.
    PublicCheckoutSessionEnvelope, PublicCheckoutSessionOut);

/// A line of a public invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicLineOut {
    pub description: String,
    pub quantity: String,
    pub unit_amount: String,
    pub amount: String,
}

/// The checkout a customer can pay now.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicCheckoutOut {
    pub checkout_session_id: String,
    pub checkout_url: String,
    pub amount_due: String,
    pub expires_at: String,
}

/// What a customer holding the hosted invoice link may see: no settlement wallet, token
/// contract, metadata, fees or internal ids.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicInvoiceOut {
    /// The literal `public_invoice`.
    pub object: String,
    pub mode: String,
    pub invoice_number: Option<String>,
    pub collection_state: String,
    pub status: String,
    pub currency_code: String,
    pub customer_name: Option<String>,
    pub lines: Vec<PublicLineOut>,
    pub subtotal: String,
    pub discount: String,
    pub tax: String,
    pub total: String,
    pub amount_paid: String,
    pub amount_remaining: String,
    pub due_at: Option<String>,
    pub memo: Option<String>,
    pub footer: Option<String>,
    /// The open checkout, when one is payable now.
    pub checkout: Option<PublicCheckoutOut>,
}

envelope!(/// A public invoice.
    PublicInvoiceEnvelope, PublicInvoiceOut);
envelope!(/// A checkout opened from a public invoice.
    PublicCheckoutEnvelope, PublicCheckoutOut);

impl PublicCheckoutOut {
    /// A checkout the customer can pay now, on the hosted `pages`.
    pub fn new(s: &CheckoutSession, pages: &PublicPages) -> Self {
        Self {
            checkout_session_id: s.id.to_string(),
            checkout_url: pages.checkout(&s.id),
            amount_due: s.amount_due.to_string(),
            expires_at: timestamp(s.expires_at),
        }
    }
}

impl From<&CheckoutView> for PublicCheckoutSessionOut {
    fn from(v: &CheckoutView) -> Self {
        let s = &v.session;
        let live = s.scope.mode == Mode::Live;
        let scan = live.then(|| match v.scan_or_copy {
            Ok(()) => ScanOrCopyOut { available: true, code: None, message: None },
            Err(reason) => ScanOrCopyOut {
                available: false,
                code: Some("SCAN_OR_COPY_UNAVAILABLE".into()),
                message: Some(reason.message().into()),
            },
        });
        Self {
            object: "public_checkout_session".into(),
            id: s.id.to_string(),
            mode: s.scope.mode.as_str().into(),
            status: s.status.as_str().into(),
            phase: v.phase.as_str().into(),
            merchant_name: v.merchant_name.clone(),
            invoice_number: v.aggregate.invoice.number.clone(),
            amount_due: v.amount_due.to_string(),
            amount_due_units: v.amount_due.to_units(),
            currency_code: s.currency.symbol().into(),
            chain_id: s.chain_id,
            settlement_wallet_address: live.then(|| s.settlement_wallet.as_str().to_owned()),
            token_contract: live.then(|| s.token_contract.as_str().to_owned()),
            payment_uri: (live && v.scan_or_copy.is_ok() && v.phase.payable()).then(|| v.payment_uri()),
            scan_or_copy: scan,
            expires_at: timestamp(s.expires_at),
            seconds_left: v.seconds_left(),
            latest_payment: v.latest.as_ref().map(|p| PublicPaymentOut {
                status: p.status.as_str().into(),
                amount_received: p.amount_received.to_string(),
                transaction_hash: p.transaction_hash.as_str().into(),
                failure_reason: p.failure_reason.map(|r| r.as_str().into()),
            }),
            success_url: s.success_url.as_ref().map(ToString::to_string),
            cancel_url: s.cancel_url.as_ref().map(ToString::to_string),
        }
    }
}

impl PublicInvoiceOut {
    /// The invoice of `view`, its open checkout on the hosted `pages`.
    pub fn new(view: &InvoiceView, pages: &PublicPages) -> Self {
        let (agg, now) = (&view.aggregate, view.now);
        let inv = &agg.invoice;
        let content = &inv.fields.content;
        Self {
            object: "public_invoice".into(),
            mode: inv.scope.mode.as_str().into(),
            invoice_number: inv.number.clone(),
            collection_state: inv.collection_state.as_str().into(),
            status: inv.status.as_str().into(),
            currency_code: inv.fields.currency.symbol().into(),
            customer_name: content.customer.as_ref().and_then(|c| c.name.clone()),
            lines: content
                .lines
                .iter()
                .map(|l| PublicLineOut {
                    description: l.description.clone(),
                    quantity: l.quantity.to_string(),
                    unit_amount: l.unit_amount.to_string(),
                    amount: l.amount().to_string(),
                })
                .collect(),
            subtotal: inv.totals.subtotal.to_string(),
            discount: inv.totals.discount.to_string(),
            tax: inv.totals.tax.to_string(),
            total: inv.totals.total.to_string(),
            amount_paid: inv.customer_amount_paid.to_string(),
            amount_remaining: inv.remaining().to_string(),
            due_at: content.due_at.map(timestamp),
            memo: content.memo.clone(),
            footer: content.footer.clone(),
            checkout: agg.sessions.iter().rev().find(|s| s.is_payable(now)).map(|s| PublicCheckoutOut::new(s, pages)),
        }
    }
}

/// `POST /v1/public/checkout-sessions/{id}/wallet-payment-attempts` body: the wallet the hosted
/// page connected, and the chain it is on.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WalletAttemptIn {
    /// The customer's wallet: 0x followed by 40 hexadecimal digits (EIP-55 checked when mixed
    /// case).
    #[schema(pattern = r"^0x[0-9a-fA-F]{40}$", example = "0x52908400098527886E0F7030069857D2E4169EE7")]
    pub wallet_address: String,
    /// The chain the wallet is on, as a number (`eth_chainId` read as an integer); the
    /// checkout's chain (137) is the only one accepted.
    #[schema(example = 137, minimum = 0)]
    pub chain_id: i64,
}

/// The transaction a wallet signs (an `eth_sendTransaction` request), exactly.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletTransactionOut {
    /// The customer's wallet.
    pub from: String,
    /// The token's contract.
    pub to: String,
    /// ERC-20 `transfer(recipient, amountBaseUnits)`, ABI-encoded.
    pub data: String,
    /// Always `0x0`: no native currency moves.
    pub value: String,
    /// The chain, in hexadecimal (`0x89`).
    pub chain_id: String,
}

/// The EIP-712 domain of the token, as its contract says it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedDomainOut {
    #[schema(example = "USD Coin")]
    pub name: String,
    #[schema(example = "2")]
    pub version: String,
    #[schema(example = 137)]
    pub chain_id: u64,
    pub verifying_contract: String,
}

/// One field of an EIP-712 type.
#[derive(Serialize, ToSchema)]
pub struct TypedFieldOut {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// The EIP-712 types of the authorization.
#[derive(Serialize, ToSchema)]
pub struct TypedTypesOut {
    #[serde(rename = "EIP712Domain")]
    pub eip712_domain: Vec<TypedFieldOut>,
    #[serde(rename = "TransferWithAuthorization")]
    pub transfer_with_authorization: Vec<TypedFieldOut>,
}

/// The message the payer signs: EIP-3009 `TransferWithAuthorization`. Integers are decimal
/// strings (`value` in the token's smallest units).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationMessageOut {
    pub from: String,
    pub to: String,
    #[schema(example = "12500000")]
    pub value: String,
    #[schema(example = "0")]
    pub valid_after: String,
    #[schema(example = "1795000000")]
    pub valid_before: String,
    /// 32 bytes the service derived for this attempt: a transfer carrying it pays this
    /// checkout, whatever else is claimed.
    pub nonce: String,
}

/// The EIP-712 typed data for `eth_signTypedData_v4`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedDataOut {
    pub types: TypedTypesOut,
    /// Always `TransferWithAuthorization`.
    pub primary_type: &'static str,
    pub domain: TypedDomainOut,
    pub message: AuthorizationMessageOut,
}

/// The call that spends a signed authorization.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCallOut {
    /// The token's contract (the transaction's `to`).
    pub to: String,
    /// The function to call with the message's fields and the signature split in `v`, `r`,
    /// `s`.
    #[schema(
        example = "transferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce,uint8 v,bytes32 r,bytes32 s)"
    )]
    pub function: &'static str,
    /// Its 4-byte selector.
    #[schema(example = "0xe3ee160e")]
    pub selector: &'static str,
}

/// An EIP-3009 authorization to sign instead of the plain transfer (USDC): its nonce names
/// this checkout, so the transfer it makes pays this checkout and no other.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationOut {
    pub typed_data: TypedDataOut,
    pub call: AuthorizationCallOut,
    /// Where to post the signature (`{nonce, signature}`) for the service to submit the call
    /// itself and pay its network fee (the customer needs no POL); `null` when this service
    /// runs no relayer (the wallet sends the call). Added in 1.0.0 of the document, optional.
    #[schema(example = "/v1/public/checkout-sessions/cs_2hQm/authorizations")]
    pub relay_url: Option<String>,
}

impl AuthorizationOut {
    fn of(
        t: &stablepay_domain::invoice::wallet::WalletTransfer,
        a: &stablepay_domain::invoice::wallet::Authorization,
        relay: bool,
    ) -> Self {
        let field = |name: &'static str, kind: &'static str| TypedFieldOut { name, kind };
        Self {
            typed_data: TypedDataOut {
                types: TypedTypesOut {
                    eip712_domain: vec![
                        field("name", "string"),
                        field("version", "string"),
                        field("chainId", "uint256"),
                        field("verifyingContract", "address"),
                    ],
                    transfer_with_authorization: vec![
                        field("from", "address"),
                        field("to", "address"),
                        field("value", "uint256"),
                        field("validAfter", "uint256"),
                        field("validBefore", "uint256"),
                        field("nonce", "bytes32"),
                    ],
                },
                primary_type: "TransferWithAuthorization",
                domain: TypedDomainOut {
                    name: a.domain.name.clone(),
                    version: a.domain.version.clone(),
                    chain_id: a.domain.chain_id,
                    verifying_contract: a.domain.verifying_contract.as_str().to_owned(),
                },
                message: AuthorizationMessageOut {
                    from: t.payer.as_str().to_owned(),
                    to: t.recipient.as_str().to_owned(),
                    value: t.units(),
                    valid_after: a.valid_after.to_string(),
                    valid_before: a.valid_before.to_string(),
                    nonce: a.nonce.hex(),
                },
            },
            call: AuthorizationCallOut {
                to: t.token_contract.as_str().to_owned(),
                function: "transferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce,uint8 v,bytes32 r,bytes32 s)",
                selector: stablepay_domain::invoice::wallet::TRANSFER_WITH_AUTHORIZATION_SELECTOR,
            },
            relay_url: relay.then(|| format!("/v1/public/checkout-sessions/{}/authorizations", t.session_id)),
        }
    }
}

/// What the customer's wallet must sign to pay the checkout.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletAttemptOut {
    /// The literal `wallet_payment_attempt`.
    pub object: &'static str,
    pub checkout_session_id: String,
    /// The connected wallet (the payer).
    pub wallet_address: String,
    pub chain_id: u64,
    /// USDC or USDT.
    pub token: String,
    pub token_contract: String,
    /// The merchant's settlement wallet: the transfer's recipient.
    pub recipient: String,
    /// The amount due now (6 decimals).
    pub amount: String,
    /// The same amount in the token's smallest units (an integer string).
    pub amount_base_units: String,
    /// The plain ERC-20 transfer (every token and wallet).
    pub transaction: WalletTransactionOut,
    /// For a USDC checkout whose token contract says its EIP-712 domain: the EIP-3009
    /// authorization to sign instead (`eth_signTypedData_v4` of `typedData`, then
    /// `call.function` with the signature). Its nonce names this checkout: the transfer pays
    /// it, whoever reports what. `null` otherwise.
    pub authorization: Option<AuthorizationOut>,
    /// Where to report the transaction's hash once the wallet sent it.
    pub submit_url: String,
    pub expires_at: String,
}

impl WalletAttemptOut {
    /// The attempt's answer; `authorized`: whether its nonce was kept (else the plain transfer
    /// only); `relay`: whether the service submits signed authorizations.
    pub fn new(t: &stablepay_domain::invoice::wallet::WalletTransfer, (authorized, relay): (bool, bool)) -> Self {
        Self {
            object: "wallet_payment_attempt",
            checkout_session_id: t.session_id.to_string(),
            wallet_address: t.payer.as_str().to_owned(),
            chain_id: t.chain_id,
            token: t.token.symbol().to_owned(),
            token_contract: t.token_contract.as_str().to_owned(),
            recipient: t.recipient.as_str().to_owned(),
            amount: t.amount.to_string(),
            amount_base_units: t.units(),
            transaction: WalletTransactionOut {
                from: t.payer.as_str().to_owned(),
                to: t.token_contract.as_str().to_owned(),
                data: t.calldata(),
                value: "0x0".into(),
                chain_id: t.chain_hex(),
            },
            authorization: t.authorization.as_ref().filter(|_| authorized).map(|a| AuthorizationOut::of(t, a, relay)),
            submit_url: format!("/v1/public/checkout-sessions/{}/payments", t.session_id),
            expires_at: stablepay_http::timestamp::timestamp(t.expires_at),
        }
    }
}

envelope!(/// A wallet payment attempt.
    WalletAttemptEnvelope, WalletAttemptOut);

/// `POST /v1/public/checkout-sessions/{id}/authorizations` body: the signed authorization of a
/// wallet payment attempt, for the service to submit.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RelayIn {
    /// The attempt's nonce (`authorization.typedData.message.nonce`): 0x and 64 hexadecimal
    /// digits.
    #[schema(pattern = r"^0x[0-9a-fA-F]{64}$")]
    pub nonce: String,
    /// The wallet's `eth_signTypedData_v4` signature of the attempt's `typedData`: 0x and 130
    /// hexadecimal digits (r, s, v).
    #[schema(pattern = r"^0x[0-9a-fA-F]{130}$")]
    pub signature: String,
}

/// A signed authorization the service submits for its customer (the merchant's service pays
/// the network fee).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelayOut {
    /// The literal `relayed_authorization`.
    pub object: &'static str,
    pub id: String,
    pub checkout_session_id: String,
    /// `queued` (accepted, waiting to be sent), `sent` (its transaction waits to be mined,
    /// replaced with higher fees while it waits), `confirmed` (mined: the transfer pays the
    /// checkout), `front_run` (another transaction used the authorization first: that transfer
    /// pays the checkout, its nonce names it), `expired` (its `validBefore` passed before it
    /// was mined: it did not pay; ask a new attempt), `failed` (the token refused it: it did
    /// not pay) or `cancelled` (its checkout was paid, expired or closed before it was sent:
    /// nothing was sent).
    #[schema(example = "sent")]
    pub status: String,
    /// The authorization's nonce.
    pub nonce: String,
    /// The paying wallet (the authorizer).
    pub payer: String,
    /// What it moves (6 decimals).
    #[schema(example = "10.000000")]
    pub amount: String,
    /// The hash of its transaction (the version mined, else the latest sent); `null` until
    /// sent. Every replacement has its own hash.
    pub transaction_hash: Option<String>,
    /// What happened, in words.
    pub detail: Option<String>,
    /// When the authorization stops being valid (its `validBefore`).
    pub valid_until: String,
    pub created_at: String,
    /// Where to follow it.
    pub url: String,
}

impl From<&stablepay_domain::relay::model::Relay> for RelayOut {
    fn from(r: &stablepay_domain::relay::model::Relay) -> Self {
        let terms = &r.authorization.terms;
        let until = chrono::DateTime::from_timestamp(terms.valid_before, 0).unwrap_or_default();
        Self {
            object: "relayed_authorization",
            id: r.id.to_string(),
            checkout_session_id: r.session_id.to_string(),
            status: r.status.as_str().to_owned(),
            nonce: terms.nonce.hex(),
            payer: terms.from.as_str().to_owned(),
            amount: terms.value.to_string(),
            transaction_hash: r.transaction_hash().map(|h| h.as_str().to_owned()),
            detail: r.detail.clone(),
            valid_until: stablepay_http::timestamp::timestamp(until),
            created_at: stablepay_http::timestamp::timestamp(r.created_at),
            url: format!("/v1/public/checkout-sessions/{}/authorizations/{}", r.session_id, r.id),
        }
    }
}

envelope!(/// A relayed authorization.
    RelayEnvelope, RelayOut);

/// `POST /v1/public/checkout-sessions/{id}/telemetry` body: one step of the checkout page.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TelemetryIn {
    /// `viewed`, `wallet_connected`, `transfer_sent` or `error_shown`.
    #[schema(example = "viewed")]
    pub step: String,
    /// A short text (the error shown), at most 200 bytes; kept without control characters.
    #[schema(max_length = 200)]
    pub detail: Option<String>,
}

/// A recorded step.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryOut {
    /// The literal `checkout_telemetry`.
    pub object: &'static str,
    pub checkout_session_id: String,
    pub step: String,
}

envelope!(/// A recorded checkout step.
    TelemetryEnvelope, TelemetryOut);
