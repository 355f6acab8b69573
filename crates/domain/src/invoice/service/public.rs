//! The customer's side: a checkout and an invoice as the hosted pages and the public routes
//! show them. The unguessable session id or public token is the capability.

use crate::chain::model::UnattributedReason;
use crate::chain::ports::FollowerStore;
use crate::chain::verify::attribute;
use crate::clock::Clock;
use crate::error::{Error, Resource};
use crate::ids::{CheckoutSessionId, PublicToken};
use crate::invoice::aggregate::PublicRef;
use crate::invoice::checkout::CheckoutSession;
use crate::invoice::ports::InvoiceStore;
use crate::invoice::public::{CheckoutPhase, CheckoutView, InvoiceView, ScanOrCopyUnavailable};
use crate::merchant::ports::MerchantStore;
use crate::mode::Mode;
use crate::money::Amount;
use crate::payment_link::ports::PaymentLinkStore;

/// The public views over their ports.
pub struct PublicViews<'a> {
    /// Invoices, looked up by session id or public token.
    pub invoices: &'a dyn InvoiceStore,
    /// The merchant's name.
    pub merchants: &'a dyn MerchantStore,
    /// The open checkouts of a wallet (whether a transfer without its hash can be attributed).
    pub follower: &'a dyn FollowerStore,
    /// A paid checkout's payment link (its success message).
    pub links: &'a dyn PaymentLinkStore,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
}

impl PublicViews<'_> {
    /// Checkout `id` as its customer sees it. Errors: `NotFound(CheckoutSession)`.
    pub async fn checkout(&self, id: &CheckoutSessionId) -> Result<CheckoutView, Error> {
        let aggregate = self.invoices.load_public(&PublicRef::Session(id.clone())).await?;
        let session = aggregate.session(id).cloned().ok_or(Error::NotFound(Resource::CheckoutSession))?;
        let now = self.clock.now(&session.scope).await?;
        let latest = aggregate.latest_payment_of(id).cloned();
        let phase = CheckoutPhase::of(&session, latest.as_ref(), now);
        let amount_due = session.amount_due.clone().min(aggregate.invoice.remaining());
        let merchant_name = self.merchants.get_merchant(&session.scope.merchant_id).await?.name;
        let scan_or_copy = if session.scope.mode == Mode::Live && phase.payable() {
            self.scan_or_copy(&session, &amount_due, now).await?
        } else {
            Ok(())
        };
        let mut success_message = None;
        if let (CheckoutPhase::Paid, Some(link)) = (phase, &aggregate.invoice.fields.payment_link) {
            // A link archived or gone meanwhile only loses its message.
            success_message =
                self.links.get_link(&session.scope, &link.id).await.ok().and_then(|l| l.config.success_message);
        }
        Ok(CheckoutView {
            aggregate,
            session,
            merchant_name,
            phase,
            amount_due,
            latest,
            scan_or_copy,
            success_message,
            now,
        })
    }

    /// Whether a transfer of `amount_due` sent without its hash would be attributed to
    /// `session` by the follower's rule.
    async fn scan_or_copy(
        &self,
        session: &CheckoutSession,
        amount_due: &Amount,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Result<(), ScanOrCopyUnavailable>, Error> {
        if *amount_due != session.amount_due {
            return Ok(Err(ScanOrCopyUnavailable::PartlyPaid));
        }
        let open = self.follower.open_checkouts(&session.settlement_wallet, &session.token_contract, now).await?;
        Ok(match attribute(amount_due, &open) {
            Err(UnattributedReason::SeveralMatchingCheckouts) => Err(ScanOrCopyUnavailable::SameAmount),
            _ => Ok(()),
        })
    }

    /// The invoice behind a hosted invoice link. Errors: `NotFound(Invoice)`.
    pub async fn invoice(&self, token: &PublicToken) -> Result<InvoiceView, Error> {
        let aggregate = self.invoices.load_public(&PublicRef::Token(token.clone())).await?;
        let scope = &aggregate.invoice.scope;
        let now = self.clock.now(scope).await?;
        let merchant_name = self.merchants.get_merchant(&scope.merchant_id).await?.name;
        Ok(InvoiceView { aggregate, merchant_name, now })
    }
}
