//! The customer's side: a checkout and an invoice as the hosted pages and the public routes
//! show them. The unguessable session id or public token is the capability.

use crate::chain::evidence::pays_without_hash;
use crate::chain::model::{CandidateQuery, Naming};
use crate::clock::Clock;
use crate::error::{Error, Resource};
use crate::ids::{CheckoutSessionId, PublicToken};
use crate::invoice::aggregate::PublicRef;
use crate::invoice::checkout::CheckoutSession;
use crate::invoice::document::InvoiceDocument;
use crate::invoice::ports::InvoiceStore;
use crate::invoice::public::{CheckoutPhase, CheckoutView, InvoiceView, ScanOrCopyUnavailable};
use crate::invoice::wallet::{Authorization, AuthorizationNonce, WalletTransfer};
use crate::merchant::model::{Token, WalletAddress};
use crate::merchant::ports::MerchantStore;
use crate::mode::Mode;
use crate::money::Amount;
use crate::payment_link::ports::PaymentLinkStore;
use crate::telemetry::model::{Step, StepRecord};
use crate::telemetry::ports::TelemetryStore;
use crate::url::PublicPages;

/// The public views over their ports.
pub struct PublicViews<'a> {
    /// Invoices, looked up by session id or public token, and the open checkouts of a wallet
    /// (whether a transfer without its hash can be attributed).
    pub invoices: &'a dyn InvoiceStore,
    /// The merchant's name.
    pub merchants: &'a dyn MerchantStore,
    /// A paid checkout's payment link (its success message).
    pub links: &'a dyn PaymentLinkStore,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// Where a wallet payment attempt is recorded (the checkout's telemetry).
    pub telemetry: &'a dyn TelemetryStore,
    /// The token contracts' EIP-712 domains (EIP-3009 authorizations).
    pub chain: &'a dyn crate::chain::ports::Chain,
    /// Attempt ids and nonces.
    pub crypto: &'a dyn crate::crypto::Crypto,
    /// The USDC contract and the nonces' key.
    pub chain_settings: &'a crate::merchant::model::ChainSettings,
}

impl PublicViews<'_> {
    /// Checkout `id` as its customer sees it. Errors: `NotFound(CheckoutSession)`.
    pub async fn checkout(&self, id: &CheckoutSessionId) -> Result<CheckoutView, Error> {
        let aggregate = self.invoices.load_public(&PublicRef::Session(id.clone())).await?;
        let session = aggregate.session(id).cloned().ok_or(Error::NotFound(Resource::CheckoutSession))?;
        let now = self.clock.now(&session.scope).await?;
        let latest = aggregate.latest_payment_of(id).cloned();
        let phase = CheckoutPhase::of(&session, latest.as_ref(), now);
        // What to send now: the session's amount (with its unique-amount offset), or what
        // remains of the invoice when less (after a partial payment).
        let amount_due = session.due_now(&aggregate.invoice.remaining());
        let merchant = self.merchants.get_merchant(&session.scope.merchant_id).await?;
        let (merchant_name, support_email, logo) = (merchant.name, merchant.profile.support_email, merchant.logo);
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
            support_email,
            logo,
            phase,
            amount_due,
            latest,
            scan_or_copy,
            success_message,
            now,
        })
    }

    /// The transfer a customer's wallet `payer`, connected on `chain_id`, must sign to pay
    /// checkout `id`: the exact amount due, to the settlement wallet, in the checkout's token
    /// and chain. The attempt (with the payer's address) is recorded in the checkout's
    /// telemetry; a failure to record it does not refuse the payment. Errors:
    /// `NotFound(CheckoutSession)`, `WalletPaymentsUnavailable` (test mode: simulated),
    /// `CheckoutSessionNotPayable` (paid, being verified, expired or closed),
    /// `InvalidDepositNetwork` on `chain_id` (another chain).
    pub async fn wallet_transfer(
        &self,
        id: &CheckoutSessionId,
        payer: WalletAddress,
        chain_id: u64,
    ) -> Result<WalletTransfer, Error> {
        let view = self.checkout(id).await?;
        let s = &view.session;
        if s.scope.mode == Mode::Test {
            return Err(Error::WalletPaymentsUnavailable(
                "test checkouts are simulated: use the page's simulate buttons or the test helpers",
            ));
        }
        if !view.phase.payable() {
            return Err(Error::CheckoutSessionNotPayable);
        }
        if chain_id != s.chain_id {
            return Err(Error::InvalidDepositNetwork {
                field: "chain_id".into(),
                message: format!("must be {} (the checkout's chain); switch the wallet to it", s.chain_id),
            });
        }
        let record = StepRecord {
            session_id: s.id.clone(),
            step: Step::WalletConnected,
            wallet: Some(payer.clone()),
            detail: None,
            at: self.clock.system_now(),
        };
        // Telemetry: losing it never refuses a payment.
        let _ = self.telemetry.record_step(&record).await;
        let authorization = self.authorization(s, &payer).await;
        Ok(WalletTransfer {
            session_id: s.id.clone(),
            payer,
            chain_id: s.chain_id,
            token: s.currency,
            token_contract: s.token_contract.clone(),
            recipient: s.settlement_wallet.clone(),
            amount: view.amount_due.clone(),
            expires_at: s.expires_at,
            authorization,
        })
    }

    /// The EIP-3009 authorization a USDC checkout's attempt by `payer` may sign instead of the
    /// plain transfer: the token's own EIP-712 domain (when the contract says one, on the
    /// checkout's chain), valid until the checkout expires, with a nonce derived for this
    /// attempt. `None` for another token, or when the domain cannot be read now (the plain
    /// transfer still pays).
    async fn authorization(&self, s: &CheckoutSession, payer: &WalletAddress) -> Option<Authorization> {
        if s.currency != Token::Usdc || s.token_contract != self.chain_settings.usdc {
            return None;
        }
        // A domain the chain adapter cannot read now (it logs why): the plain transfer only.
        let domain = match self.chain.token_domain(&s.token_contract).await {
            Ok(Some(d)) if d.chain_id == s.chain_id && d.verifying_contract == s.token_contract => d,
            Ok(_) | Err(_) => return None,
        };
        let mut attempt = [0u8; 16];
        self.crypto.fill_random(&mut attempt);
        let key = &self.chain_settings.nonce_key.0;
        let nonce = AuthorizationNonce::derive(self.crypto, key, (&s.id, payer), &attempt);
        Some(Authorization { domain, valid_after: 0, valid_before: s.expires_at.timestamp(), nonce })
    }

    /// Whether a transfer of `amount_due` sent without its hash, from a wallet nobody bound,
    /// would be attributed to `session` by the follower's rule (`chain::evidence`).
    async fn scan_or_copy(
        &self,
        session: &CheckoutSession,
        amount_due: &Amount,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Result<(), ScanOrCopyUnavailable>, Error> {
        let (wallet, token) = (&session.settlement_wallet, &session.token_contract);
        let naming = Naming { amount: amount_due.clone(), from: None, reported: Vec::new(), authorization: None };
        let asked = CandidateQuery {
            wallet: wallet.clone(),
            token_contract: token.clone(),
            at: now,
            early: chrono::Duration::zero(),
            naming,
        };
        let open = self.invoices.open_checkouts(&asked).await?;
        if pays_without_hash(&session.id, amount_due, &open.named, now) {
            return Ok(Ok(()));
        }
        Ok(Err(if *amount_due != session.amount_due {
            ScanOrCopyUnavailable::PartlyPaid
        } else {
            ScanOrCopyUnavailable::SameAmount
        }))
    }

    /// The PNG file of the merchant logo named `digest` (hosted pages show it), or `None` when
    /// `digest` names no logo.
    pub async fn logo(&self, digest: &str) -> Result<Option<Vec<u8>>, Error> {
        if !crate::merchant::logo::Logo::is_digest(digest) {
            return Ok(None);
        }
        self.merchants.logo_png(digest).await
    }

    /// The invoice behind a hosted invoice link. Errors: `NotFound(Invoice)`.
    pub async fn invoice(&self, token: &PublicToken) -> Result<InvoiceView, Error> {
        let aggregate = self.invoices.load_public(&PublicRef::Token(token.clone())).await?;
        let scope = &aggregate.invoice.scope;
        let now = self.clock.now(scope).await?;
        let merchant = self.merchants.get_merchant(&scope.merchant_id).await?;
        let support_email = merchant.profile.support_email;
        Ok(InvoiceView { aggregate, merchant_name: merchant.name, support_email, logo: merchant.logo, now })
    }

    /// The document (invoice, or receipt once paid) behind a hosted invoice link, for its
    /// customer to download. Errors: `NotFound(Invoice)`.
    pub async fn invoice_document(&self, token: &PublicToken, pages: &PublicPages) -> Result<InvoiceDocument, Error> {
        let aggregate = self.invoices.load_public(&PublicRef::Token(token.clone())).await?;
        let merchant = self.merchants.get_merchant(&aggregate.invoice.scope.merchant_id).await?;
        if aggregate.invoice.number.is_none() {
            return Err(Error::NotFound(Resource::Invoice));
        }
        let logo = self.merchants.logo_image(&merchant).await?;
        Ok(InvoiceDocument::new(aggregate.invoice.clone(), &aggregate.payments, &merchant, pages).with_logo(logo))
    }
}
