//! Public routes (no merchant key): what a customer's browser or wallet may call. The
//! unguessable checkout session id or invoice token is the capability, as for the hosted pages.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde_json::Value;
use stablepay_domain::ids::{CheckoutSessionId, PublicToken, RelayId};
use stablepay_domain::invoice::InvoiceKey;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::public::InvoiceView;
use stablepay_domain::invoice::service::Invoices;
use stablepay_domain::invoice::wallet::AuthorizationNonce;
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::ratelimit::{CHECKOUT_TELEMETRY, PUBLIC_CHECKOUT, PUBLIC_READ};
use stablepay_domain::telemetry::model::{MAX_DETAIL_BYTES, Step};
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::idempotency::{SubmissionKey, keyed, public_request};
use stablepay_http::ratelimit::enforce;
use stablepay_http::respond::{ok, to_data};
use stablepay_http::state::AppState;

use crate::json::ApiJson;
use crate::rebuild;
use crate::wire::public::{
    PublicCheckoutEnvelope, PublicCheckoutOut, PublicCheckoutSessionEnvelope, PublicCheckoutSessionOut,
    PublicInvoiceEnvelope, PublicInvoiceOut, RelayEnvelope, RelayIn, RelayOut, SubmitPaymentIn, SubmittedPaymentOut,
    TelemetryEnvelope, TelemetryIn, TelemetryOut, WalletAttemptEnvelope, WalletAttemptIn, WalletAttemptOut,
};

/// Report the transaction that pays a live checkout. The service verifies it onchain itself
/// (nothing the browser says is trusted): the answer is the payment as recorded, `detected`
/// until the transfer is seen, then `validating` until its block is final. The same hash for
/// the same checkout answers the same payment.
#[utoipa::path(
    tag = "public",
    request_body = SubmitPaymentIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 202, description = "The payment, accepted for verification", body = crate::wire::public::SubmittedPaymentEnvelope),
        crate::wire::common::Errors,
    )
)]
#[post("/public/checkout-sessions/{id}/payments")]
pub async fn submit_payment(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<SubmitPaymentIn>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_CHECKOUT, &["checkout_session", &id], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let ApiJson(input, _) = body;
    let tx = TxHash::parse(&input.transaction_hash).ok_or_else(|| {
        ApiError::field(ErrorCode::INVALID_TX_HASH, "transactionHash", "Must be 0x followed by 64 hexadecimal digits.")
    })?;
    let payment = state.use_cases.invoices().submit_payment(&id, &tx).await?;
    ok(StatusCode::ACCEPTED, &SubmittedPaymentOut::from(&payment))
}

/// A checkout as its customer sees it: the live status behind the checkout page.
#[utoipa::path(
    tag = "public",
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 200, description = "The checkout", body = PublicCheckoutSessionEnvelope),
        crate::wire::common::Errors,
    )
)]
#[get("/public/checkout-sessions/{id}")]
pub async fn get_public_checkout(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_READ, &["checkout_session"], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let view = state.use_cases.public_views().checkout(&id).await?;
    ok(StatusCode::OK, &PublicCheckoutSessionOut::from(&view))
}

async fn public_invoice(state: &AppState, token: &str) -> Result<InvoiceView, ApiError> {
    let token = PublicToken::parse(token).ok_or(Error::NotFound(Resource::Invoice))?;
    Ok(state.use_cases.public_views().invoice(&token).await?)
}

/// The invoice behind a hosted invoice link (the link's token is the capability).
#[utoipa::path(
    tag = "public",
    params(("token" = String, Path, description = "The token of the hosted invoice URL")),
    responses(
        (status = 200, description = "The invoice as its customer may see it", body = PublicInvoiceEnvelope),
        crate::wire::common::Errors,
    )
)]
#[get("/public/invoices/{token}")]
pub async fn get_public_invoice(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_READ, &["invoice"], ErrorCode::RATE_LIMITED).await?;
    let view = public_invoice(&state, &token).await?;
    ok(StatusCode::OK, &PublicInvoiceOut::new(&view, state.use_cases.pages()))
}

/// The invoice behind a hosted invoice link as a PDF to download (its receipt once paid), with
/// the same token rule and the same limit as the page.
#[utoipa::path(
    tag = "public",
    params(("token" = String, Path, description = "The token of the hosted invoice URL")),
    responses(
        (status = 200, description = "application/pdf bytes (not enveloped), Content-Disposition: attachment; filename=\"<invoice number>.pdf\", Cache-Control: no-store", content_type = "application/pdf", body = Vec<u8>),
        crate::wire::common::Errors,
    )
)]
#[get("/public/invoices/{token}/pdf")]
pub async fn public_invoice_pdf(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_READ, &["invoice"], ErrorCode::RATE_LIMITED).await?;
    let token = PublicToken::parse(&token).ok_or(Error::NotFound(Resource::Invoice))?;
    let document = state.use_cases.public_views().invoice_document(&token, state.use_cases.pages()).await?;
    stablepay_http::download::pdf_file(state, document).await
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
        crate::wire::common::Errors,
    )
)]
#[post("/public/invoices/{token}/checkout")]
pub async fn public_invoice_checkout(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_CHECKOUT, &["invoice", &token], ErrorCode::RATE_LIMITED).await?;
    let invoice = public_invoice(&state, &token).await?.aggregate.invoice;
    let (scope, id) = (invoice.scope, invoice.id);
    let run_state = state.clone();
    let again = rebuild::public_invoice_checkout(state.clone(), scope.clone());
    let work_scope = scope.clone();
    let work = move |claim| async move {
        let invoices = Invoices { claim, ..run_state.use_cases.invoices() };
        let opened = invoices.open_checkout(&work_scope, &InvoiceKey::Id(id)).await?;
        let session = opened.aggregate.session(&opened.session_id).ok_or_else(ApiError::internal)?;
        let out = PublicCheckoutOut::new(session, run_state.use_cases.pages());
        Ok((StatusCode::CREATED, to_data(&out)?))
    };
    let request = public_request(&state, scope, (&token, SubmissionKey::Header), &req, &[])?;
    Ok(keyed(state, request, (work, again)).await)
}

/// The wallet and chain of a wallet payment attempt, or the attempt's precise refusal
/// (INVALID_WALLET_PAYMENT_ATTEMPT naming the field).
fn wallet_attempt(body: &Value) -> Result<(WalletAddress, i64), Error> {
    let invalid = |field: &str, message: &str| Error::InvalidWalletPaymentAttempt {
        field: field.into(),
        message: message.into(),
    };
    let fields = body.as_object().ok_or_else(|| invalid("body", "must be a JSON object"))?;
    if let Some(unknown) = fields.keys().find(|k| !["walletAddress", "chainId"].contains(&k.as_str())) {
        return Err(invalid(unknown, "is not a field of a wallet payment attempt"));
    }
    let address = fields.get("walletAddress").and_then(Value::as_str).ok_or_else(|| {
        invalid("wallet_address", "the connected wallet's address (0x followed by 40 hexadecimal digits) is required")
    })?;
    let wallet = WalletAddress::parse(address).map_err(|e| invalid("wallet_address", &e.to_string()))?;
    let chain =
        fields.get("chainId").and_then(Value::as_i64).filter(|c| *c >= 0).ok_or_else(|| {
            invalid("chain_id", "the wallet's chain id (a non-negative integer such as 137) is required")
        })?;
    Ok((wallet, chain))
}

/// Ask what the customer's connected wallet must sign to pay a live checkout: the exact
/// ERC-20 transfer (token contract, recipient, amount in base units, chain) and, for a USDC
/// checkout, the EIP-3009 authorization to sign instead, whose nonce names this checkout. The
/// hosted checkout page calls it after connecting the wallet; the attempt (with the wallet's address)
/// is kept in the checkout's telemetry. Test checkouts are simulated (WALLET_PAYMENTS_UNAVAILABLE);
/// a wallet on another chain is INVALID_DEPOSIT_NETWORK (switch it, then ask again).
#[utoipa::path(
    tag = "public",
    request_body = WalletAttemptIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 200, description = "The transfer to sign", body = WalletAttemptEnvelope),
        crate::wire::common::Errors,
    )
)]
#[post("/public/checkout-sessions/{id}/wallet-payment-attempts")]
pub async fn wallet_payment_attempt(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<Value>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_CHECKOUT, &["wallet_attempt", &id], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let (wallet, chain) = wallet_attempt(&body.0)?;
    let chain = u64::try_from(chain).unwrap_or(u64::MAX);
    let transfer = state.use_cases.public_views().wallet_transfer(&id, wallet, chain).await?;
    // The wallet is evidence for this checkout from now on, and the authorization's nonce names
    // it (answered only once kept).
    let terms = transfer.terms();
    let kept = state.use_cases.invoices().bind_payer(&id, &transfer.payer, terms.as_ref()).await?;
    ok(StatusCode::OK, &WalletAttemptOut::new(&transfer, (kept, state.use_cases.relays().offered())))
}

/// The nonce and signature of a relayed authorization, or the precise refusal
/// (INVALID_WALLET_PAYMENT_ATTEMPT naming the field).
fn relay_body(body: &Value) -> Result<(AuthorizationNonce, String), Error> {
    let invalid = |field: &str, message: &str| Error::InvalidWalletPaymentAttempt {
        field: field.into(),
        message: message.into(),
    };
    let fields = body.as_object().ok_or_else(|| invalid("body", "must be a JSON object"))?;
    if let Some(unknown) = fields.keys().find(|k| !["nonce", "signature"].contains(&k.as_str())) {
        return Err(invalid(unknown, "is not a field of a signed authorization"));
    }
    let nonce =
        fields.get("nonce").and_then(Value::as_str).and_then(AuthorizationNonce::parse).ok_or_else(|| {
            invalid("nonce", "the attempt's nonce (0x followed by 64 hexadecimal digits) is required")
        })?;
    let signature = fields.get("signature").and_then(Value::as_str).ok_or_else(|| {
        invalid("signature", "the 65-byte signature (0x followed by 130 hexadecimal digits, r, s, v) is required")
    })?;
    Ok((nonce, signature.to_owned()))
}

/// Submit a signed EIP-3009 authorization for the service to send (gasless for the customer:
/// the service's relayer pays the network fee, for the merchant). Everything is checked before
/// it is accepted: the attempt is this checkout's, the signature is its wallet's, and on the
/// chain the authorization is unused and valid for at least a minute more, the wallet holds
/// what it authorizes and the exact call succeeds. One submission per attempt: posting it again
/// answers the same submission. Offered only where `authorization.relayUrl` of the attempt says
/// so (else 422 FEATURE_UNAVAILABLE, `details.reason` `relayer_off`: send the call from the
/// wallet).
#[utoipa::path(
    tag = "public",
    request_body = RelayIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 202, description = "Accepted: the service sends it (follow `url`)", body = RelayEnvelope),
        crate::wire::common::Errors,
    )
)]
#[post("/public/checkout-sessions/{id}/authorizations")]
pub async fn relay_authorization(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<Value>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_CHECKOUT, &["authorization", &id], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let (nonce, signature) = relay_body(&body.0)?;
    let relay = state.use_cases.relays().submit(&id, &nonce, &signature).await?;
    ok(StatusCode::ACCEPTED, &RelayOut::from(&relay))
}

/// A submitted authorization as it stands: queued, sent (with its transaction's hash), and its
/// outcome. The checkout page follows it until it is mined.
#[utoipa::path(
    tag = "public",
    params(
        ("id" = String, Path, description = "Checkout session id"),
        ("relayId" = String, Path, description = "The submission's id (`rel_...`)"),
    ),
    responses(
        (status = 200, description = "The submission", body = RelayEnvelope),
        crate::wire::common::Errors,
    )
)]
#[get("/public/checkout-sessions/{id}/authorizations/{relayId}")]
pub async fn get_relayed_authorization(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_READ, &["relayed_authorization"], ErrorCode::RATE_LIMITED).await?;
    let (id, relay) = path.into_inner();
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let relay = RelayId::parse(&relay).ok_or(Error::NotFound(Resource::RelayedAuthorization))?;
    let relay = state.use_cases.relays().get(&id, &relay).await?;
    ok(StatusCode::OK, &RelayOut::from(&relay))
}

/// Report a step of the hosted checkout page (viewed, wallet connected, transfer sent, error
/// shown) for the merchant's conversion funnel. Limited per client address and checkout.
#[utoipa::path(
    tag = "public",
    request_body = TelemetryIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 202, description = "The step, recorded", body = TelemetryEnvelope),
        crate::wire::common::Errors,
    )
)]
#[post("/public/checkout-sessions/{id}/telemetry")]
pub async fn checkout_telemetry(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<TelemetryIn>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &CHECKOUT_TELEMETRY, &["checkout_session", &id], ErrorCode::RATE_LIMITED).await?;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let ApiJson(input, _) = body;
    let step = Step::parse(&input.step).ok_or_else(|| {
        ApiError::validation("step", "step must be viewed, wallet_connected, transfer_sent or error_shown.")
    })?;
    if input.detail.as_ref().is_some_and(|d| d.len() > MAX_DETAIL_BYTES) {
        return Err(ApiError::validation("detail", format!("detail must be at most {MAX_DETAIL_BYTES} bytes.")));
    }
    state.use_cases.telemetry().report(&id, step, input.detail.as_deref()).await?;
    let out = TelemetryOut { object: "checkout_telemetry", checkout_session_id: id.to_string(), step: input.step };
    ok(StatusCode::ACCEPTED, &out)
}
