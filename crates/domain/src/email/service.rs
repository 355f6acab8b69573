//! The email use cases: queue the invoice or a reminder on request, deliver what is due (the
//! worker: the one loop over the one outbox, whatever an email is about), and queue the
//! reminders of schedules whose slot came due (the worker, and the test clock).

use chrono::{DateTime, Duration, Utc};

use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::email::compose::{Seller, compose, compose_statement};
use crate::email::model::{
    Attachment, EmailAbout, EmailKind, EmailMessage, EmailStatus, InlineImage, OutboundEmail, REMINDER_COOLDOWN_HOURS,
};
use crate::email::ports::{EmailStore, Mailer};
use crate::error::Error;
use crate::ids::InvoiceId;
use crate::ids::StatementId;
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceChange, InvoiceKey};
use crate::invoice::document::InvoiceDocument;
use crate::invoice::model::{Activity, ActivityAction, Actor, Invoice};
use crate::invoice::ports::{InvoiceRenderer, InvoiceStore};
use crate::merchant::ports::MerchantStore;
use crate::mode::Scope;
use crate::statement::model::StatementFile;
use crate::statement::ports::StatementStore;
use crate::url::PublicPages;

/// Times a use case reloads an invoice that changed under it.
const MAX_TRIES: usize = 8;
/// Reminder candidates read per page by the reminder pass.
pub const REMINDER_PAGE: u32 = 200;

/// The invoice email use cases: send, remind, the reminder schedule and delivery of the outbox.
pub struct Emails<'a> {
    /// The invoices emails are about.
    pub invoices: &'a dyn InvoiceStore,
    /// The outbox.
    pub store: &'a dyn EmailStore,
    /// Account links and notices (the emails about them).
    pub accounts: &'a dyn crate::account::ports::AccountStore,
    /// Merchants (the sender's name).
    pub merchants: &'a dyn MerchantStore,
    /// The mail transport.
    pub mailer: &'a dyn Mailer,
    /// Monthly statements (the emails of their download links).
    pub statements: &'a dyn StatementStore,
    /// The PDF attached to each email.
    pub renderer: &'a dyn InvoiceRenderer,
    /// Message ids.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// Where the hosted invoice pages are.
    pub pages: &'a PublicPages,
    /// The idempotency key of the request these use cases serve (`None`: no key, or the
    /// worker): the change that queues an email is marked in its transaction.
    pub claim: Option<crate::idempotency::model::IdempotencyClaim>,
    /// Who acts: an API key, or a dashboard member named in the activity of their requests.
    pub acting: crate::invoice::model::Acting,
    /// Days a statement's files can be downloaded (the deployment's retention setting).
    pub export_file_days: u32,
}

fn activity(at: DateTime<Utc>, action: ActivityAction, actor: Actor, detail: String) -> Activity {
    Activity { at, action, actor, detail: Some(detail), by: None }
}

/// A reminder slot of `invoice`'s schedule: its name and when it comes due.
fn slots(invoice: &Invoice) -> Vec<(String, DateTime<Utc>)> {
    let (Some(schedule), Some(due)) = (&invoice.fields.reminder_schedule, invoice.fields.content.due_at) else {
        return Vec::new();
    };
    if !schedule.enabled {
        return Vec::new();
    }
    let mut out: Vec<(String, DateTime<Utc>)> = schedule
        .days_before_due
        .iter()
        .map(|d| (format!("before:{d}"), due - Duration::days(i64::from(*d))))
        .chain(schedule.on_due.then(|| ("due".to_owned(), due)))
        .chain(schedule.days_after_due.iter().map(|d| (format!("after:{d}"), due + Duration::days(i64::from(*d)))))
        .collect();
    out.sort_by_key(|(_, at)| *at);
    out
}

impl Emails<'_> {
    /// Load the invoice and its emails, decide, save (all again when the invoice changed
    /// meanwhile: an email is written with its invoice's change, so a retry sees the emails of
    /// the change that won).
    async fn with_invoice<T>(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        decide: impl Fn(&InvoiceAggregate, &[OutboundEmail], DateTime<Utc>) -> Result<(Option<InvoiceChange>, T), Error>,
    ) -> Result<T, Error> {
        for _ in 0..MAX_TRIES {
            let agg = self.invoices.load_invoice(scope, key).await?;
            let emails = self.store.list_emails(scope, &agg.invoice.id).await?;
            let now = self.clock.now(scope).await?;
            let (change, output) = decide(&agg, &emails, now)?;
            let Some(mut change) = change else { return Ok(output) };
            change.claim = self.claim.clone();
            match self.invoices.save_invoice(change).await {
                Err(Error::InvoiceStateMismatch) => continue,
                Err(e) => return Err(e),
                Ok(_) => return Ok(output),
            }
        }
        Err(Error::InvoiceStateMismatch)
    }

    fn queued(
        &self,
        agg: &InvoiceAggregate,
        email: OutboundEmail,
        actor: Actor,
        what: &str,
        now: DateTime<Utc>,
    ) -> InvoiceChange {
        let mut change = InvoiceChange::update(agg.clone());
        let detail = format!("{what} to {}", email.to);
        let mut entry = activity(now, ActivityAction::EmailQueued, actor, detail);
        self.acting.attribute(std::slice::from_mut(&mut entry));
        change.aggregate.invoice.activity.push(entry);
        change.emails.push(email);
        change
    }

    /// One email of an invoice, as the outbox holds it now. Errors: `NotFound(Invoice)` when
    /// the invoice (in `scope`) has no such email.
    pub async fn get(&self, scope: &Scope, invoice: &InvoiceId, id: &str) -> Result<OutboundEmail, Error> {
        let emails = self.store.list_emails(scope, invoice).await?;
        emails.into_iter().find(|e| e.id.as_str() == id).ok_or(Error::NotFound(crate::error::Resource::Invoice))
    }

    /// `POST /v1/invoices/{id}/send`: queues the invoice (with its PDF) to the customer.
    /// Errors: `InvoiceTransitionGuardFailed` (a draft, or a void invoice),
    /// `CustomerEmailRequired`.
    pub async fn send(&self, scope: &Scope, key: &InvoiceKey) -> Result<OutboundEmail, Error> {
        let system_now = self.clock.system_now();
        self.with_invoice(scope, key, |agg, _, now| {
            let inv = &agg.invoice;
            inv.check_sendable()?;
            let mut email = OutboundEmail::queue(self.crypto, inv, EmailKind::Invoice, None, now)?;
            email.next_attempt_at = system_now;
            Ok((Some(self.queued(agg, email.clone(), Actor::Api, "invoice", now)), email))
        })
        .await
    }

    /// `POST /v1/invoices/{id}/remind`: queues a reminder of what is due. At most one reminder
    /// per invoice in [`REMINDER_COOLDOWN_HOURS`]. Errors: `InvoiceNotPayable` (not issued, or
    /// nothing collectible), `CustomerEmailRequired`, `ReminderCooldown`.
    pub async fn remind(&self, scope: &Scope, key: &InvoiceKey) -> Result<OutboundEmail, Error> {
        let system_now = self.clock.system_now();
        self.with_invoice(scope, key, |agg, emails, now| {
            let inv = &agg.invoice;
            inv.check_remindable()?;
            let last = emails.iter().filter(|e| e.kind == EmailKind::Reminder).map(|e| e.created_at).max();
            if let Some(last) = last {
                let available_at = last + Duration::hours(REMINDER_COOLDOWN_HOURS);
                if available_at > now {
                    return Err(Error::ReminderCooldown { available_at });
                }
            }
            let mut email = OutboundEmail::queue(self.crypto, inv, EmailKind::Reminder, None, now)?;
            email.next_attempt_at = system_now;
            Ok((Some(self.queued(agg, email.clone(), Actor::Api, "reminder", now)), email))
        })
        .await
    }

    /// Queues the reminder of the latest slot of each candidate's schedule that came due (at
    /// its scope's time) and was never queued; earlier missed slots are not sent. Every
    /// candidate is looked at, a page of [`REMINDER_PAGE`] at a time. Answers how many were
    /// queued.
    pub async fn schedule_reminders(&self, only: Option<&Scope>) -> Result<usize, Error> {
        let mut queued = 0;
        let mut after = None;
        loop {
            let page = self.store.reminder_candidates(only.cloned(), after.take(), REMINDER_PAGE).await?;
            for (scope, id) in &page {
                if self.queue_due_reminder(scope, id).await? {
                    queued += 1;
                }
            }
            if page.len() < usize::try_from(REMINDER_PAGE).unwrap_or(usize::MAX) {
                return Ok(queued);
            }
            after = page.last().map(|(_, id)| id.clone());
        }
    }

    /// Queues the reminder of `id`'s latest slot that came due, unless it was queued before;
    /// answers whether it queued one.
    async fn queue_due_reminder(&self, scope: &Scope, id: &InvoiceId) -> Result<bool, Error> {
        let system_now = self.clock.system_now();
        let done = self
            .with_invoice(scope, &InvoiceKey::Id(id.clone()), |agg, existing, now| {
                let inv = &agg.invoice;
                if !inv.collection_state.is_collectible() {
                    return Ok((None, false));
                }
                let issued = inv.issued_at.unwrap_or(inv.created_at);
                let Some((slot, _)) = slots(inv).into_iter().rev().find(|(_, at)| *at <= now && *at >= issued) else {
                    return Ok((None, false));
                };
                let key = format!("schedule:{slot}");
                if existing.iter().any(|e| e.kind == EmailKind::Reminder && e.slot == key) {
                    return Ok((None, false));
                }
                let Ok(mut email) =
                    OutboundEmail::queue(self.crypto, inv, EmailKind::Reminder, Some(slot.clone()), now)
                else {
                    return Ok((None, false));
                };
                email.next_attempt_at = system_now;
                let what = format!("scheduled reminder ({slot})");
                Ok((Some(self.queued(agg, email, Actor::System, &what, now)), true))
            })
            .await;
        match done {
            Ok(queued) => Ok(queued),
            // The invoice kept changing: its slot is tried again on the next pass.
            Err(Error::InvoiceStateMismatch) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Attempts up to `limit` due emails, claiming each one for `lease_seconds` just before its
    /// attempt (so a lease only has to cover one attempt and its recording: the mailer's timeout
    /// plus the store's round trips). A failure of one (the store, the invoice) is reported and
    /// the others go on; an email whose worker died is attempted again when its lease ends.
    pub async fn deliver_due(&self, limit: u32, lease_seconds: u32) -> Result<DeliveryReport, Error> {
        let mut report = DeliveryReport::default();
        for _ in 0..limit {
            let Some(email) = self.store.claim_emails(1, lease_seconds).await?.pop() else {
                break;
            };
            let id = email.id.clone();
            match self.deliver(email).await {
                Ok(EmailStatus::Sent) => report.sent += 1,
                Ok(EmailStatus::Skipped) => report.not_sent += 1,
                Ok(_) => {
                    report.not_sent += 1;
                    report.failed += 1;
                }
                Err(e) => report.errors.push((id, e)),
            }
        }
        Ok(report)
    }

    /// One attempt of `email`: an invoice's is recorded with the invoice's activity in one
    /// change; the others on their own.
    async fn deliver(&self, email: OutboundEmail) -> Result<EmailStatus, Error> {
        match email.about.clone() {
            EmailAbout::Invoice(scope, invoice) => self.deliver_invoice(email, (scope, invoice)).await,
            EmailAbout::Statement(scope, statement) => self.deliver_statement(email, (&scope, &statement)).await,
            EmailAbout::AccountLink(link) => self.deliver_link(email, &link).await,
            EmailAbout::Notice(notice) => self.deliver_notice(email, &notice).await,
        }
    }

    /// One attempt of a statement's email: its download links, from the service.
    async fn deliver_statement(
        &self,
        mut email: OutboundEmail,
        (scope, id): (&Scope, &StatementId),
    ) -> Result<EmailStatus, Error> {
        let statement = self.statements.get_statement(scope, id).await?;
        let merchant = self.merchants.get_merchant(&scope.merchant_id).await?;
        let links: Vec<(&str, String)> = StatementFile::ALL
            .iter()
            .map(|f| (f.label(), self.pages.statement_file(&statement.token, f.as_str())))
            .collect();
        let composed = compose_statement(
            &merchant.name,
            scope.mode.as_str(),
            &statement.month.label(),
            &links,
            self.export_file_days,
        );
        let message = composed.from_service(&email);
        match self.mailer.send(&message).await {
            Ok(()) => email.sent(self.clock.now(scope).await?),
            Err(e) => email.attempt_failed(&e.message, e.permanent, self.clock.system_now()),
        }
        self.store.record_email(&email).await?;
        Ok(email.status)
    }

    /// One attempt of an invoice's email, recorded with its activity in one change.
    async fn deliver_invoice(
        &self,
        mut email: OutboundEmail,
        (scope, invoice): (Scope, InvoiceId),
    ) -> Result<EmailStatus, Error> {
        let key = InvoiceKey::Id(invoice.clone());
        let agg = self.invoices.load_invoice(&scope, &key).await?;
        let what = email.kind.as_str();
        if email.kind == EmailKind::Reminder && !agg.invoice.collection_state.is_collectible() {
            email.skipped();
            let detail =
                format!("reminder to {} not sent: the invoice is {}", email.to, agg.invoice.collection_state.as_str());
            return self.record(email, (&scope, &invoice), ActivityAction::ReminderSkipped, detail).await;
        }
        let message = self.message(&agg, &email, &scope).await?;
        let sent = self.mailer.send(&message).await;
        let now = self.clock.now(&scope).await?;
        let (action, detail) = match sent {
            Ok(()) => {
                email.sent(now);
                (ActivityAction::EmailSent, format!("{what} to {} (attempt {})", email.to, email.attempts))
            }
            Err(e) => {
                email.attempt_failed(&e.message, e.permanent, self.clock.system_now());
                let next = if email.status == EmailStatus::Failed {
                    "given up".to_owned()
                } else {
                    format!("retried at {}", email.next_attempt_at.format("%Y-%m-%dT%H:%M:%SZ"))
                };
                (
                    ActivityAction::EmailFailed,
                    format!("{what} to {} attempt {}: {}; {next}", email.to, email.attempts, e.message),
                )
            }
        };
        self.record(email, (&scope, &invoice), action, detail).await
    }

    /// Writes `email` as it stands after an attempt, with its activity entry on `invoice`, in
    /// one change.
    async fn record(
        &self,
        email: OutboundEmail,
        (scope, invoice): (&Scope, &InvoiceId),
        action: ActivityAction,
        detail: String,
    ) -> Result<EmailStatus, Error> {
        let status = email.status;
        self.with_invoice(scope, &InvoiceKey::Id(invoice.clone()), |agg, _, now| {
            let mut change = InvoiceChange::update(agg.clone());
            change.aggregate.invoice.activity.push(activity(now, action, Actor::System, detail.clone()));
            change.emails.push(email.clone());
            Ok((Some(change), status))
        })
        .await
    }

    /// The message of `email`: its text, the merchant's logo inline, and the invoice's PDF
    /// attached.
    async fn message(
        &self,
        agg: &InvoiceAggregate,
        email: &OutboundEmail,
        scope: &Scope,
    ) -> Result<EmailMessage, Error> {
        let merchant = self.merchants.get_merchant(&scope.merchant_id).await?;
        let inv = &agg.invoice;
        let logo = self.merchants.logo_image(&merchant).await?;
        let document = InvoiceDocument::new(inv.clone(), &agg.payments, &merchant, self.pages);
        let seller = Seller { name: &merchant.name, profile: &merchant.profile, logo: logo.as_ref().map(|l| &l.logo) };
        let composed = compose(email.kind, inv, &agg.payments, seller, document.hosted_url.as_deref());
        let inline = logo.as_ref().map(|l| InlineImage {
            content_id: l.logo.content_id(),
            content_type: "image/png".into(),
            bytes: l.png.clone(),
        });
        let document = document.with_logo(logo);
        let attachment = self.renderer.render_pdf(&document).ok().map(|bytes| Attachment {
            filename: format!("{}.pdf", inv.number.as_deref().unwrap_or("invoice")),
            content_type: "application/pdf".into(),
            bytes,
        });
        Ok(EmailMessage {
            id: email.id.clone(),
            from_name: merchant.name.clone(),
            to: email.to.clone(),
            reply_to: merchant.profile.reply_to.clone(),
            subject: composed.subject,
            text: composed.text,
            html: composed.html,
            attachment,
            logo: inline,
        })
    }
}

/// What one delivery pass did.
#[derive(Debug, Default)]
pub struct DeliveryReport {
    /// Emails the server accepted.
    pub sent: usize,
    /// Attempts that failed (retried later or given up) and reminders skipped.
    pub not_sent: usize,
    /// Of those, the attempts that failed (the mail server refused or did not answer, or the
    /// message could not be built).
    pub failed: usize,
    /// Emails whose attempt could not be made or recorded (retried when their lease ends).
    pub errors: Vec<(crate::ids::EmailId, Error)>,
}

/// The slots of `invoice`'s schedule that came due by `at` (since it was issued).
pub fn due_slots(invoice: &Invoice, at: DateTime<Utc>) -> Vec<String> {
    let issued = invoice.issued_at.unwrap_or(invoice.created_at);
    slots(invoice).into_iter().filter(|(_, t)| *t <= at && *t >= issued).map(|(s, _)| s).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::clock::MockClock;
    use crate::email::ports::{MailError, MockEmailStore, MockMailer};
    use crate::ids::MerchantId;
    use crate::invoice::input::CheckoutInput;
    use crate::invoice::ports::{MockInvoiceRenderer, MockInvoiceStore};
    use crate::merchant::model::{ChainSettings, Merchant, MerchantStatus};
    use crate::merchant::ports::MockMerchantStore;
    use crate::money::Decimal6;
    use crate::statement::ports::MockStatementStore;
    use crate::testing::SeqCrypto;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn merchant() -> Merchant {
        crate::testing::merchant(MerchantStatus::Active, now())
    }

    fn scope() -> Scope {
        Scope::new(MerchantId::from_trusted("mer_1".into()), crate::Mode::Test)
    }

    /// An invoice of 10 with a customer email; `numbered`: issued.
    fn invoice(numbered: bool) -> InvoiceAggregate {
        let input = CheckoutInput {
            amount: Some(Decimal6::parse("10").unwrap()),
            customer_email: Some("ada@example.com".into()),
            ..Default::default()
        };
        let change = crate::invoice::service::decide_checkout(
            &SeqCrypto::default(),
            &ChainSettings::default(),
            &merchant(),
            &scope(),
            input,
            now(),
        )
        .unwrap();
        let mut agg = change.aggregate;
        if numbered {
            agg.invoice.number = Some("INV-000001".into());
        }
        agg
    }

    fn clock() -> MockClock {
        let mut c = MockClock::new();
        c.expect_now().returning(|_| Ok(now()));
        c.expect_system_now().returning(now);
        c
    }

    struct Ports {
        invoices: MockInvoiceStore,
        store: MockEmailStore,
        accounts: crate::account::ports::MockAccountStore,
        merchants: MockMerchantStore,
        mailer: MockMailer,
        statements: MockStatementStore,
        renderer: MockInvoiceRenderer,
        pages: PublicPages,
    }

    fn ports(agg: InvoiceAggregate, emails: Vec<OutboundEmail>) -> Ports {
        let mut invoices = MockInvoiceStore::new();
        invoices.expect_load_invoice().returning(move |_, _| Ok(agg.clone()));
        let mut store = MockEmailStore::new();
        store.expect_list_emails().returning(move |_, _| Ok(emails.clone()));
        let mut merchants = MockMerchantStore::new();
        merchants.expect_get_merchant().returning(|_| Ok(merchant()));
        Ports {
            invoices,
            store,
            accounts: crate::account::ports::MockAccountStore::new(),
            merchants,
            mailer: MockMailer::new(),
            statements: MockStatementStore::new(),
            renderer: MockInvoiceRenderer::new(),
            pages: PublicPages::new("https://pay.example"),
        }
    }

    fn run<'a>(p: &'a Ports, crypto: &'a SeqCrypto, clock: &'a MockClock) -> Emails<'a> {
        Emails {
            invoices: &p.invoices,
            store: &p.store,
            accounts: &p.accounts,
            merchants: &p.merchants,
            mailer: &p.mailer,
            statements: &p.statements,
            renderer: &p.renderer,
            crypto,
            clock,
            pages: &p.pages,
            claim: None,
            acting: crate::invoice::model::Acting::Api,
            export_file_days: 7,
        }
    }

    fn saved(p: &mut Ports) -> Arc<Mutex<Vec<InvoiceChange>>> {
        let sink = Arc::new(Mutex::new(Vec::new()));
        let s = sink.clone();
        p.invoices.expect_save_invoice().returning(move |c| {
            s.lock().unwrap().push(c.clone());
            Ok(c.aggregate)
        });
        sink
    }

    #[tokio::test]
    async fn the_reminder_pass_walks_every_page_of_candidates() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut p = ports(invoice(false), Vec::new());
        let id = |n: usize| InvoiceId::from_trusted(format!("inv_{n:022}"));
        let page = usize::try_from(REMINDER_PAGE).unwrap();
        p.store
            .expect_reminder_candidates()
            .withf(|only, after, limit| only.is_none() && after.is_none() && *limit == REMINDER_PAGE)
            .times(1)
            .returning(move |_, _, _| Ok((0..page).map(|n| (scope(), id(n))).collect()));
        let last = id(page - 1);
        p.store
            .expect_reminder_candidates()
            .withf(move |_, after, _| after.as_ref() == Some(&last))
            .times(1)
            .returning(move |_, _, _| Ok((page..page + 3).map(|n| (scope(), id(n))).collect()));
        // Each candidate is looked at once (none of them has a slot due: nothing is queued).
        p.invoices.checkpoint();
        let agg = invoice(false);
        p.invoices.expect_load_invoice().times(page + 3).returning(move |_, _| Ok(agg.clone()));
        p.invoices.expect_save_invoice().never();
        assert_eq!(run(&p, &crypto, &clock).schedule_reminders(None).await, Ok(0));
    }

    #[tokio::test]
    async fn refusals_write_nothing() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let key = InvoiceKey::Id(invoice(false).invoice.id);
        let mut p = ports(invoice(false), Vec::new());
        p.invoices.expect_save_invoice().never();
        let emails = run(&p, &crypto, &clock);
        assert!(matches!(emails.send(&scope(), &key).await, Err(Error::InvoiceTransitionGuardFailed(_))));
        assert_eq!(emails.remind(&scope(), &key).await, Err(Error::InvoiceNotPayable));

        // A reminder two hours ago: the next one in 22 hours.
        let mut last = OutboundEmail::queue(&crypto, &invoice(true).invoice, EmailKind::Reminder, None, now()).unwrap();
        last.created_at = now() - Duration::hours(2);
        let mut p = ports(invoice(true), vec![last]);
        p.invoices.expect_save_invoice().never();
        let emails = run(&p, &crypto, &clock);
        let available_at = now() + Duration::hours(22);
        assert_eq!(emails.remind(&scope(), &key).await, Err(Error::ReminderCooldown { available_at }));
    }

    #[tokio::test]
    async fn a_reminder_is_queued_with_its_activity_in_one_change() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let mut p = ports(invoice(true), Vec::new());
        let changes = saved(&mut p);
        let key = InvoiceKey::Id(invoice(true).invoice.id);
        let email = run(&p, &crypto, &clock).remind(&scope(), &key).await.unwrap();
        assert_eq!(
            (email.kind, email.status, email.to.as_str()),
            (EmailKind::Reminder, EmailStatus::Queued, "ada@example.com")
        );
        let changes = changes.lock().unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].emails, vec![email]);
        assert_eq!(changes[0].aggregate.invoice.activity.last().map(|a| a.action), Some(ActivityAction::EmailQueued));
    }

    #[tokio::test]
    async fn a_failed_attempt_is_recorded_with_its_retry() {
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let agg = invoice(true);
        let email = OutboundEmail::queue(&crypto, &agg.invoice, EmailKind::Invoice, None, now()).unwrap();
        let mut p = ports(agg, vec![email.clone()]);
        let claimed = email.clone();
        let mut outbox = vec![claimed];
        p.store
            .expect_claim_emails()
            .withf(|limit, lease| (*limit, *lease) == (1, 30))
            .returning(move |_, _| Ok(outbox.pop().into_iter().collect()));
        let logo = crate::merchant::logo::Logo { digest: "ab".repeat(32), width: 400, height: 100 };
        let image = crate::merchant::logo::LogoImage { logo: logo.clone(), png: b"png".to_vec() };
        p.merchants.expect_logo_image().returning(move |_| Ok(Some(image.clone())));
        // The PDF gets the logo too.
        p.renderer
            .expect_render_pdf()
            .withf(|d| d.logo.as_ref().is_some_and(|l| l.png == b"png"))
            .returning(|_| Ok(b"%PDF-".to_vec()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let s = sent.clone();
        p.mailer.expect_send().returning(move |m| {
            s.lock().unwrap().push(m.clone());
            Err(MailError { message: "451 try again later".into(), permanent: false })
        });
        let changes = saved(&mut p);
        let report = run(&p, &crypto, &clock).deliver_due(10, 30).await.unwrap();
        assert_eq!((report.sent, report.not_sent, report.errors.len()), (0, 1, 0));
        let message = sent.lock().unwrap()[0].clone();
        assert_eq!(message.id, email.id);
        assert_eq!(message.attachment.as_ref().map(|a| a.filename.as_str()), Some("INV-000001.pdf"));
        assert!(message.text.contains("https://pay.example/i/") || message.text.contains("10.00 USDC"));
        let inline = message.logo.as_ref().unwrap();
        assert_eq!((inline.content_type.as_str(), inline.bytes.as_slice()), ("image/png", b"png".as_slice()));
        assert_eq!(inline.content_id, format!("logo.{}@stablepay", "ab".repeat(8)));
        assert!(message.html.contains(&format!("src=\"cid:{}\"", inline.content_id)), "{}", message.html);
        assert!(message.html.contains("width=\"192\" height=\"48\""), "{}", message.html);
        let changes = changes.lock().unwrap();
        let written = &changes[0].emails[0];
        assert_eq!((written.status, written.attempts), (EmailStatus::Queued, 1));
        assert_eq!(written.next_attempt_at, now() + Duration::seconds(30));
        let last = changes[0].aggregate.invoice.activity.last().unwrap();
        assert_eq!(last.action, ActivityAction::EmailFailed);
        assert!(last.detail.as_deref().unwrap_or("").contains("451"), "{last:?}");
    }

    #[tokio::test]
    async fn a_statements_email_carries_both_links_and_is_recorded_on_its_own() {
        use crate::ids::{ExportId, PublicToken, StatementId};
        use crate::statement::model::{Statement, StatementMonth, StatementStatus};
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let statement = Statement {
            id: StatementId::from_trusted("stm_1".into()),
            scope: scope(),
            month: StatementMonth::new(2026, 5).unwrap(),
            email: "finance@shop.example".into(),
            token: PublicToken::from_trusted("T".repeat(43)),
            invoices_export: ExportId::from_trusted("exp_1".into()),
            payments_export: ExportId::from_trusted("exp_2".into()),
            status: StatementStatus::Mailed,
            failure: None,
            email_id: None,
            created_at: now(),
        };
        let email = OutboundEmail::statement(&crypto, &statement, now());
        let mut p = ports(invoice(true), Vec::new());
        p.invoices.expect_save_invoice().never();
        let mut outbox = vec![email.clone()];
        p.store.expect_claim_emails().returning(move |_, _| Ok(outbox.pop().into_iter().collect()));
        let found = statement.clone();
        p.statements.expect_get_statement().returning(move |_, _| Ok(found.clone()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let s = sent.clone();
        p.mailer.expect_send().returning(move |m| {
            s.lock().unwrap().push(m.clone());
            Ok(())
        });
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let r = recorded.clone();
        p.store.expect_record_email().returning(move |e| {
            r.lock().unwrap().push(e.clone());
            Ok(())
        });
        let report = run(&p, &crypto, &clock).deliver_due(10, 30).await.unwrap();
        assert_eq!((report.sent, report.errors.len()), (1, 0));
        let message = sent.lock().unwrap()[0].clone();
        let link = |file: &str| format!("https://pay.example/s/{}/{file}.csv", "T".repeat(43));
        assert_eq!(
            (message.to.as_str(), message.subject.as_str()),
            ("finance@shop.example", "Statement for May 2026: Shop")
        );
        for file in ["invoices", "payments"] {
            assert!(message.text.contains(&link(file)), "{}", message.text);
            assert!(message.html.contains(&format!("href=\"{}\"", link(file))), "{}", message.html);
        }
        assert!(message.attachment.is_none() && message.logo.is_none());
        let recorded = recorded.lock().unwrap();
        assert_eq!(
            (recorded[0].id.clone(), recorded[0].status, recorded[0].attempts),
            (email.id, EmailStatus::Sent, 1)
        );
    }

    /// The one loop delivers every kind from the one outbox: an account link's email gets a
    /// new token whose digest is stored before it goes; a link used (or replaced) before its
    /// email went and a reset for an address without an account are skipped; a notice's words
    /// are sent; each is recorded by the one retry policy.
    #[tokio::test]
    async fn the_one_loop_sends_links_and_notices_by_the_one_policy() {
        use crate::account::link::{AccountLink, LinkPurpose};
        use crate::account::notice::{Notice, NoticeKind};
        use crate::ids::{AccountLinkId, EmailId, NoticeId, UserId};
        let (crypto, clock) = (SeqCrypto::default(), clock());
        let user = Some(UserId::from_trusted("usr_1".into()));
        let link = |n: &str, purpose, user: Option<UserId>| {
            let ids = (AccountLinkId::from_trusted(format!("alk_{n}")), EmailId::from_trusted(format!("eml_{n}")));
            AccountLink::new(ids, (purpose, "ada@example.com"), user, None, now())
        };
        let live = link("live", LinkPurpose::VerifyEmail, user.clone());
        let mut used = link("used", LinkPurpose::ResetPassword, user);
        used.used_at = Some(now());
        let nobody = link("nobody", LinkPurpose::ResetPassword, None);
        let notice = Notice::new(
            (NoticeId::from_trusted("ntc_1".into()), EmailId::from_trusted("eml_ntc".into())),
            (&MerchantId::from_trusted("mer_1".into()), NoticeKind::WalletChanged),
            "owner@example.com",
            ("The settlement wallet of Shop changed".into(), "someone set it".into()),
            ("Open the settings".into(), "https://pay.example/dashboard/settings".into()),
            now(),
        );
        let mut p = ports(invoice(true), Vec::new());
        p.invoices.expect_save_invoice().never();
        let mut outbox = vec![notice.mail.clone(), nobody.mail.clone(), used.mail.clone(), live.mail.clone()];
        p.store.expect_claim_emails().returning(move |_, _| Ok(outbox.pop().into_iter().collect()));
        let links = [live.clone(), used, nobody];
        p.accounts.expect_link_by_id().returning(move |id| Ok(links.iter().find(|l| &l.id == id).cloned()));
        let found = notice.clone();
        p.accounts.expect_notice().returning(move |_| Ok(Some(found.clone())));
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
        p.accounts.expect_set_link_token().returning(move |id, digest| {
            l1.lock()
                .unwrap()
                .push(format!("token {id} {}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>()));
            Ok(())
        });
        let sent = Arc::new(Mutex::new(Vec::new()));
        let s = sent.clone();
        p.mailer.expect_send().returning(move |m| {
            l2.lock().unwrap().push(format!("send {}", m.id));
            s.lock().unwrap().push(m.clone());
            if m.to == "owner@example.com" {
                Err(MailError { message: "451 try again later".into(), permanent: false })
            } else {
                Ok(())
            }
        });
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let r = recorded.clone();
        p.store.expect_record_email().returning(move |e| {
            l3.lock().unwrap().push(format!("record {} {}", e.id, e.status.as_str()));
            r.lock().unwrap().push(e.clone());
            Ok(())
        });
        let report = run(&p, &crypto, &clock).deliver_due(10, 30).await.unwrap();
        assert_eq!((report.sent, report.not_sent, report.failed, report.errors.len()), (1, 3, 1, 0));

        let sent = sent.lock().unwrap();
        let message = &sent[0];
        assert_eq!((message.id.as_str(), message.to.as_str()), ("eml_live", "ada@example.com"));
        let token = message.text.split("token=").nth(1).unwrap().split_whitespace().next().unwrap();
        let digest: String = crypto.sha256(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        let log = log.lock().unwrap();
        assert_eq!(
            log[..3],
            [format!("token alk_live {digest}"), "send eml_live".to_owned(), "record eml_live sent".to_owned()],
            "the token's digest is stored before its email goes"
        );
        assert_eq!(log[3..5], ["record eml_used skipped".to_owned(), "record eml_nobody skipped".to_owned()]);
        assert_eq!(log[5..], ["send eml_ntc".to_owned(), "record eml_ntc queued".to_owned()]);
        let notice_message = &sent[1];
        assert_eq!(notice_message.subject, "The settlement wallet of Shop changed");
        assert!(notice_message.text.contains("https://pay.example/dashboard/settings"), "{}", notice_message.text);
        let recorded = recorded.lock().unwrap();
        let retried = recorded.last().unwrap();
        assert_eq!((retried.attempts, retried.next_attempt_at), (1, now() + Duration::seconds(30)));
        assert_eq!(retried.last_error.as_deref(), Some("451 try again later"));
    }
}
