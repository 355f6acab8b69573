//! API-key authentication extractors.
//!
//! The key is read from `Authorization: Bearer <key>` or `X-API-Key: <key>`. It alone selects
//! the merchant and mode. The plaintext never leaves this module except as a digest.

use actix_web::dev::Payload;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use stablepay_domain::Mode;
use stablepay_domain::api_key::{ApiKeySecret, KeyType, Principal, authenticate};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

fn presented_key(req: &HttpRequest) -> Result<ApiKeySecret, ApiError> {
    let invalid = || ApiError::new(ErrorCode::INVALID_API_KEY, "The API key is invalid, revoked or expired.");
    if let Some(value) = req.headers().get(AUTHORIZATION) {
        let text = value.to_str().map_err(|_| invalid())?;
        let (scheme, key) = text.split_once(' ').ok_or_else(invalid)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(invalid());
        }
        return Ok(ApiKeySecret::presented(key.trim()));
    }
    if let Some(value) = req.headers().get("x-api-key") {
        return Ok(ApiKeySecret::presented(value.to_str().map_err(|_| invalid())?.trim()));
    }
    Err(ApiError::new(
        ErrorCode::API_KEY_REQUIRED,
        "An API key is required: send Authorization: Bearer <key> or X-API-Key: <key>.",
    ))
}

async fn principal(req: HttpRequest) -> Result<Principal, ApiError> {
    let presented = presented_key(&req)?;
    let state = req.app_data::<web::Data<AppState>>().ok_or_else(ApiError::internal)?.clone();
    let now = state.clock.system_now();
    let principal = authenticate(state.keys.as_ref(), state.crypto.as_ref(), &presented, now).await?;
    tracing::Span::current().record("merchant", principal.scope.merchant_id.as_str());
    Ok(principal)
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(ErrorCode::API_KEY_FORBIDDEN, message)
}

/// Any valid key (publishable or secret).
pub struct AnyKey(pub Principal);

impl FromRequest for AnyKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { principal(req).await.map(AnyKey) })
    }
}

/// A secret key.
pub struct SecretKey(pub Principal);

impl FromRequest for SecretKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let p = principal(req).await?;
            if p.key_type != KeyType::Secret {
                return Err(forbidden("This operation requires a secret key."));
            }
            Ok(SecretKey(p))
        })
    }
}

/// A secret test-mode key (test helpers).
pub struct SecretTestKey(pub Principal);

impl FromRequest for SecretTestKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let p = principal(req).await?;
            if p.key_type != KeyType::Secret || p.scope.mode != Mode::Test {
                return Err(forbidden("Test helpers require a secret test-mode key."));
            }
            Ok(SecretTestKey(p))
        })
    }
}
