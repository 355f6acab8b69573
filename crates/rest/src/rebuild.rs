//! Answers rebuilt after a crash. A keyed request's work marks its key committed in its own
//! transaction; when the process stopped before the answer was recorded, the retry is answered
//! from what the work committed (its invoice, session, email or link, as they are now), with
//! the status the request answers, and that answer is recorded for later retries. Each keyed
//! route names its rebuild here; a route whose use cases carry no claim ([`none`]) never meets
//! a committed key.

use actix_web::http::StatusCode;
use futures_util::future::LocalBoxFuture;
use stablepay_domain::idempotency::Committed;
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, PaymentLinkId};
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::payment_link::model::LinkCheckout;
use stablepay_domain::url::PublicPages;
use stablepay_http::error::ApiError;
use stablepay_http::idempotency::Outcome;
use stablepay_http::respond::to_data;
use stablepay_http::state::AppState;

use crate::auth::Caller;
use crate::wire::checkout::{SessionView, checkout_session, payment};
use crate::wire::invoices::output::{InvoiceEmailOut, RefundRecordedOut, RemainderCheckoutOut, invoice, refund};
use crate::wire::links::{LinkCheckoutOut, PaymentLinkOut};
use crate::wire::public::PublicCheckoutOut;

/// A rebuilt answer, to come.
pub type Rebuilt = LocalBoxFuture<'static, Outcome>;

/// What the committed work names, or the failure to rebuild from it.
fn committed_invoice(committed: &Committed) -> Result<InvoiceKey, ApiError> {
    let id = committed.invoice.as_deref().and_then(InvoiceId::parse).ok_or_else(ApiError::internal)?;
    Ok(InvoiceKey::Id(id))
}

/// The session the work created or changed last, in `agg`.
fn committed_session<'a>(agg: &'a InvoiceAggregate, committed: &Committed) -> Result<&'a CheckoutSession, ApiError> {
    let id = committed.session.as_deref().and_then(CheckoutSessionId::parse).ok_or_else(ApiError::internal)?;
    agg.session(&id).ok_or_else(ApiError::internal)
}

async fn load(c: &Caller, committed: &Committed) -> Result<InvoiceAggregate, ApiError> {
    Ok(c.cases().invoices().get(c.scope(), &committed_invoice(committed)?).await?)
}

/// A route whose work never marks its key (its use cases carry no claim).
pub fn none(_: Caller, _: Committed) -> Rebuilt {
    Box::pin(async { Err(ApiError::internal()) })
}

/// The invoice the work changed, as its route renders it, with `status`.
pub fn invoice_with(status: StatusCode) -> impl FnOnce(Caller, Committed) -> Rebuilt {
    move |c, committed| {
        Box::pin(async move {
            let agg = load(&c, &committed).await?;
            Ok((status, to_data(&invoice(&agg, &c.links(), c.now().await?)?)?))
        })
    }
}

/// `POST /v1/checkout-sessions`: the created checkout session.
pub fn checkout_created(c: Caller, committed: Committed) -> Rebuilt {
    Box::pin(async move {
        let agg = load(&c, &committed).await?;
        let session = committed_session(&agg, &committed)?;
        let view = SessionView { retrieval: false, secret: c.principal.key_type.sees_settlement() };
        Ok((StatusCode::CREATED, to_data(&checkout_session(&agg, session, view, &c.links()))?))
    })
}

/// `POST /v1/invoices/{id}/checkout-sessions`: the checkout opened for the remainder.
pub fn remainder_checkout(c: Caller, committed: Committed) -> Rebuilt {
    Box::pin(async move {
        let agg = load(&c, &committed).await?;
        let session = committed_session(&agg, &committed)?;
        let expires = stablepay_http::timestamp::timestamp(session.expires_at);
        let out = RemainderCheckoutOut {
            invoice_id: agg.invoice.id.to_string(),
            checkout_session_id: session.id.to_string(),
            checkout_url: c.links().checkout(session),
            amount: session.amount_due.to_string(),
            expiry: expires.clone(),
            expires_at: expires,
            reused: false,
        };
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
}

/// `POST /v1/invoices/{id}/refund-references`: the invoice and the reference the work recorded
/// (not the newest: other keys may have recorded references on the same invoice since).
pub fn refund_recorded(c: Caller, committed: Committed) -> Rebuilt {
    Box::pin(async move {
        let agg = load(&c, &committed).await?;
        let id = committed.refund.as_deref().ok_or_else(ApiError::internal)?;
        let recorded = agg.invoice.refunds.iter().find(|r| r.id.as_str() == id).ok_or_else(ApiError::internal)?;
        let out =
            RefundRecordedOut { invoice: invoice(&agg, &c.links(), c.now().await?)?, adjustment: refund(recorded) };
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
}

/// `POST /v1/invoices/{id}/send` and `/remind`: the email the work queued.
pub fn email_queued(c: Caller, committed: Committed) -> Rebuilt {
    Box::pin(async move {
        let InvoiceKey::Id(invoice) = committed_invoice(&committed)? else { return Err(ApiError::internal()) };
        let id = committed.email.as_deref().ok_or_else(ApiError::internal)?;
        let email = c.cases().emails().get(c.scope(), &invoice, id).await?;
        Ok((StatusCode::ACCEPTED, to_data(&InvoiceEmailOut::from(&email))?))
    })
}

/// `POST /v1/test-helpers/checkout-sessions/{id}/payments`: the payment the work recorded.
pub fn test_payment(c: Caller, committed: Committed) -> Rebuilt {
    Box::pin(async move {
        let agg = load(&c, &committed).await?;
        let id = committed.payment.as_deref().ok_or_else(ApiError::internal)?;
        let recorded = agg.payments.iter().find(|p| p.id.as_str() == id).ok_or_else(ApiError::internal)?;
        Ok((StatusCode::CREATED, to_data(&payment(recorded))?))
    })
}

/// A payment link route: the link the work wrote, with `status`.
pub fn link_with(status: StatusCode) -> impl FnOnce(Caller, Committed) -> Rebuilt {
    move |c, committed| {
        Box::pin(async move {
            let id = committed.link.as_deref().and_then(PaymentLinkId::parse).ok_or_else(ApiError::internal)?;
            let (link, now) = c.cases().links().get(c.scope(), &id).await?;
            Ok((status, to_data(&PaymentLinkOut::new(&link, c.state.use_cases.pages(), now)?)?))
        })
    }
}

/// A public submission's answer (201): `render` of the invoice and the checkout its work
/// created, in its scope, on the hosted pages.
fn public_checkout<O: serde::Serialize>(
    state: actix_web::web::Data<AppState>,
    scope: stablepay_domain::Scope,
    render: impl FnOnce(&InvoiceAggregate, &CheckoutSession, &PublicPages) -> O + 'static,
) -> impl FnOnce(Committed) -> Rebuilt {
    move |committed| {
        Box::pin(async move {
            let agg = state.use_cases.invoices().get(&scope, &committed_invoice(&committed)?).await?;
            let session = committed_session(&agg, &committed)?;
            Ok((StatusCode::CREATED, to_data(&render(&agg, session, state.use_cases.pages()))?))
        })
    }
}

/// A payment link's public submission (the API's and the hosted form's): the checkout created.
pub fn link_checkout(
    state: actix_web::web::Data<AppState>,
    scope: stablepay_domain::Scope,
) -> impl FnOnce(Committed) -> Rebuilt {
    public_checkout(state, scope, |agg, session, pages| {
        let created = LinkCheckout {
            invoice_id: agg.invoice.id.clone(),
            checkout_session_id: session.id.clone(),
            expires_at: session.expires_at,
        };
        LinkCheckoutOut::new(&created, pages)
    })
}

/// `POST /v1/public/invoices/{token}/checkout`: the checkout opened for the remainder.
pub fn public_invoice_checkout(
    state: actix_web::web::Data<AppState>,
    scope: stablepay_domain::Scope,
) -> impl FnOnce(Committed) -> Rebuilt {
    public_checkout(state, scope, |_, session, pages| PublicCheckoutOut::new(session, pages))
}

/// `POST /v1/unattributed-transfers/{id}/attribute`: the transfer as it stands now (attributed).
pub fn attributed(c: Caller, _: Committed, id: String) -> Rebuilt {
    Box::pin(async move {
        let id = stablepay_domain::ids::UnattributedTransferId::parse(&id).ok_or_else(ApiError::internal)?;
        let record = c.state.use_cases.follower().unattributed_transfer(c.scope(), &id).await?;
        Ok((StatusCode::OK, to_data(&crate::wire::events::UnattributedTransferOut::from(record))?))
    })
}
