//! Public routes (no merchant key): what a customer's browser or wallet may call. The
//! unguessable checkout session id is the capability, as for the hosted page.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::{Deserialize, Serialize};
use stablepay_domain::ids::{CheckoutSessionId, PublicToken};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::{InvoiceAggregate, InvoiceKey, PublicRef};
use stablepay_domain::{Error, Resource};
use utoipa::ToSchema;

use crate::envelope::ok;
use crate::error::{ApiError, ErrorCode};
use crate::json::ApiJson;
use crate::state::AppState;
use crate::wire::Meta;
use crate::wire_out::SubmittedPaymentOut;

/// `POST /v1/public/checkout-sessions/{id}/payments` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubmitPaymentIn {
    /// The hash of the customer's transfer: 0x followed by 64 hexadecimal digits.
    #[schema(pattern = r"^0x[0-9a-fA-F]{64}$")]
    pub transaction_hash: String,
}

/// Report the transaction that pays a live checkout. The service verifies it onchain itself
/// (nothing the browser says is trusted): the answer is the payment as recorded, `detected`
/// until the transfer is seen, then `validating` until its block is final. The same hash for
/// the same checkout answers the same payment.
#[utoipa::path(
    tag = "public",
    request_body = SubmitPaymentIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 202, description = "The payment, accepted for verification", body = crate::wire_out::SubmittedPaymentEnvelope),
        crate::wire::Errors,
    )
)]
#[post("/public/checkout-sessions/{id}/payments")]
pub async fn submit_payment(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<SubmitPaymentIn>,
) -> Result<HttpResponse, ApiError> {
    let policy = &stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
    crate::ratelimit::enforce(&req, &state, policy, &["checkout_session", &id], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let ApiJson(input, _) = body;
    let tx = TxHash::parse(&input.transaction_hash).ok_or_else(|| {
        ApiError::field(ErrorCode::INVALID_TX_HASH, "transactionHash", "Must be 0x followed by 64 hexadecimal digits.")
    })?;
    let payment = state.billing().submit_payment(&id, &tx).await?;
    ok(StatusCode::ACCEPTED, &SubmittedPaymentOut::from(&payment))
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
    /// pay, validating, paid, underpaid (the rest is due), failed (pay again), expired or
    /// cancelled.
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

crate::wire::envelope!(/// A public checkout view.
    PublicCheckoutSessionEnvelope, PublicCheckoutSessionOut);

/// A checkout as its customer sees it: the live status behind the checkout page.
#[utoipa::path(
    tag = "public",
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 200, description = "The checkout", body = PublicCheckoutSessionEnvelope),
        crate::wire::Errors,
    )
)]
#[get("/public/checkout-sessions/{id}")]
pub async fn get_public_checkout(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    use crate::pages::checkout::load;
    let policy = &stablepay_domain::ratelimit::PUBLIC_READ;
    crate::ratelimit::enforce(&req, &state, policy, &["checkout_session"], ErrorCode::RATE_LIMITED).await?;
    let v = load(&state, &id).await?.ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let s = &v.session;
    let live = s.scope.mode == stablepay_domain::Mode::Live;
    let scan = live.then(|| match v.scan_or_copy {
        Ok(()) => ScanOrCopyOut { available: true, code: None, message: None },
        Err(reason) => ScanOrCopyOut {
            available: false,
            code: Some("SCAN_OR_COPY_UNAVAILABLE".into()),
            message: Some(reason.into()),
        },
    });
    let out = PublicCheckoutSessionOut {
        object: "public_checkout_session".into(),
        id: s.id.to_string(),
        mode: s.scope.mode.as_str().into(),
        status: s.status.as_str().into(),
        phase: v.phase.as_str().into(),
        merchant_name: v.merchant_name.clone(),
        invoice_number: v.agg.invoice.number.clone(),
        amount_due: v.amount_due.to_string(),
        amount_due_units: v.amount_due.to_units(),
        currency_code: s.currency.symbol().into(),
        chain_id: s.chain_id,
        settlement_wallet_address: live.then(|| s.settlement_wallet.as_str().to_owned()),
        token_contract: live.then(|| s.token_contract.as_str().to_owned()),
        payment_uri: (live && v.scan_or_copy.is_ok() && v.phase.payable()).then(|| v.payment_uri()),
        scan_or_copy: scan,
        expires_at: crate::wire::timestamp(s.expires_at),
        seconds_left: v.seconds_left(),
        latest_payment: v.latest.as_ref().map(|p| PublicPaymentOut {
            status: p.status.as_str().into(),
            amount_received: p.amount_received.to_string(),
            transaction_hash: p.transaction_hash.as_str().into(),
            failure_reason: p.failure_reason.map(|r| r.as_str().into()),
        }),
        success_url: s.success_url.as_ref().map(ToString::to_string),
        cancel_url: s.cancel_url.as_ref().map(ToString::to_string),
    };
    ok(StatusCode::OK, &out)
}

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

crate::wire::envelope!(/// A public invoice.
    PublicInvoiceEnvelope, PublicInvoiceOut);
crate::wire::envelope!(/// A checkout opened from a public invoice.
    PublicCheckoutEnvelope, PublicCheckoutOut);

fn public_checkout(base: &str, s: &stablepay_domain::invoice::checkout::CheckoutSession) -> PublicCheckoutOut {
    PublicCheckoutOut {
        checkout_session_id: s.id.to_string(),
        checkout_url: format!("{base}/checkout/{}", s.id),
        amount_due: s.amount_due.to_string(),
        expires_at: crate::wire::timestamp(s.expires_at),
    }
}

async fn public_invoice(state: &AppState, token: &str) -> Result<InvoiceAggregate, ApiError> {
    let token = PublicToken::parse(token).ok_or(Error::NotFound(Resource::Invoice))?;
    Ok(state.invoices.load_public(&PublicRef::Token(token)).await?)
}

/// The invoice behind a hosted invoice link (the link's token is the capability).
#[utoipa::path(
    tag = "public",
    params(("token" = String, Path, description = "The token of the hosted invoice URL")),
    responses(
        (status = 200, description = "The invoice as its customer may see it", body = PublicInvoiceEnvelope),
        crate::wire::Errors,
    )
)]
#[get("/public/invoices/{token}")]
pub async fn get_public_invoice(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let policy = &stablepay_domain::ratelimit::PUBLIC_READ;
    crate::ratelimit::enforce(&req, &state, policy, &["invoice"], ErrorCode::RATE_LIMITED).await?;
    let agg = public_invoice(&state, &token).await?;
    let inv = &agg.invoice;
    let now = state.clock.now(&inv.scope).await?;
    let content = &inv.fields.content;
    let out = PublicInvoiceOut {
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
        due_at: content.due_at.map(crate::wire::timestamp),
        memo: content.memo.clone(),
        footer: content.footer.clone(),
        checkout: agg
            .sessions
            .iter()
            .rev()
            .find(|s| s.is_payable(now))
            .map(|s| public_checkout(&state.public_base_url, s)),
    };
    ok(StatusCode::OK, &out)
}

/// Opens (or reuses) a checkout for the invoice's remainder. Needs an Idempotency-Key.
#[utoipa::path(
    tag = "public",
    params(
        ("token" = String, Path, description = "The token of the hosted invoice URL"),
        ("Idempotency-Key" = String, Header, description = "Required; replays the first answer"),
    ),
    responses(
        (status = 201, description = "The checkout to pay", body = PublicCheckoutEnvelope),
        crate::wire::Errors,
    )
)]
#[post("/public/invoices/{token}/checkout")]
pub async fn public_invoice_checkout(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let policy = &stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
    crate::ratelimit::enforce(&req, &state, policy, &["invoice", &token], ErrorCode::RATE_LIMITED).await?;
    let agg = public_invoice(&state, &token).await?;
    let scope = agg.invoice.scope.clone();
    let id = agg.invoice.id.clone();
    let run_state = state.clone();
    Ok(crate::idempotency::execute_public(state, scope.clone(), &token, &req, &[], move || async move {
        let opened = run_state.billing().open_checkout(&scope, &InvoiceKey::Id(id)).await?;
        let session = opened.aggregate.session(&opened.session_id).ok_or_else(ApiError::internal)?;
        let out = public_checkout(&run_state.public_base_url, session);
        Ok((StatusCode::CREATED, crate::envelope::to_data(&out)?))
    })
    .await)
}
