//! Email delivery, the domain's `Mailer` port on lettre: over SMTP (`STABLEPAY_SMTP_URL`:
//! `smtp://host:port` in the clear, `smtp://host?tls=required` with STARTTLS, `smtps://host`
//! with TLS; `user:password@` for auth), or, with no SMTP URL (development), as one `.eml`
//! file per message in a folder. Each message has a plain-text and an HTML part, the PDF
//! attached, the merchant's name as sender name, and the outbox row's id as its Message-ID.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use stablepay_domain::email::model::EmailMessage;
use stablepay_domain::email::ports::{MailError, Mailer};

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files(PathBuf),
}

/// Sends over SMTP, or writes `.eml` files.
pub struct LettreMailer {
    transport: Transport,
    from: Address,
    timeout: Duration,
    /// The domain of Message-IDs (the public base URL's host).
    message_domain: String,
}

impl LettreMailer {
    /// `smtp_url` unset: `.eml` files in `folder`. `timeout` bounds a whole attempt (and each
    /// exchange with the server inside it); Message-IDs end in `@message_domain` (the host the
    /// hosted pages are served from). Errors: a malformed URL or sender address.
    pub fn new(
        smtp_url: Option<&str>,
        from: &str,
        folder: PathBuf,
        (timeout, message_domain): (Duration, &str),
    ) -> Result<Self, String> {
        let from: Address = from.parse().map_err(|e| format!("STABLEPAY_EMAIL_FROM: {e}"))?;
        let transport = match smtp_url {
            Some(url) => Transport::Smtp(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| format!("STABLEPAY_SMTP_URL: {e}"))?
                    .timeout(Some(timeout))
                    .build(),
            ),
            None => Transport::Files(folder),
        };
        Ok(Self { transport, from, timeout, message_domain: message_domain.to_owned() })
    }

    /// Where `.eml` files go, when it writes files.
    pub fn folder(&self) -> Option<&PathBuf> {
        match &self.transport {
            Transport::Files(dir) => Some(dir),
            Transport::Smtp(_) => None,
        }
    }

    /// The message, or why it cannot be built: a failure the attempt records, never a panic
    /// (whatever the names hold).
    fn build(&self, m: &EmailMessage) -> Result<Message, MailError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_build(m))).unwrap_or_else(|_| {
            Err(MailError { message: "the message could not be built from its fields".into(), permanent: true })
        })
    }

    fn try_build(&self, m: &EmailMessage) -> Result<Message, MailError> {
        let permanent = |message: String| MailError { message, permanent: true };
        let to: Mailbox = m.to.parse().map_err(|e| permanent(format!("recipient {}: {e}", m.to)))?;
        // A display name is one line of printable text, whatever was stored.
        let name: String = m.from_name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let subject: String = m.subject.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let mut builder = Message::builder()
            .from(Mailbox::new(Some(name.trim().to_owned()), self.from.clone()))
            .to(to)
            .subject(subject)
            .message_id(Some(format!("<{}@{}>", m.id, self.message_domain)));
        if let Some(reply_to) = &m.reply_to {
            builder = builder.reply_to(reply_to.parse().map_err(|e| permanent(format!("reply-to: {e}")))?);
        }
        let alternative = match &m.logo {
            // The HTML part with the images it shows inline: multipart/related.
            Some(image) => {
                let kind = ContentType::parse(&image.content_type).map_err(|e| permanent(format!("logo: {e}")))?;
                let html = SinglePart::builder().header(ContentType::TEXT_HTML).body(m.html.clone());
                let related = MultiPart::related()
                    .singlepart(html)
                    .singlepart(Attachment::new_inline(image.content_id.clone()).body(image.bytes.clone(), kind));
                MultiPart::alternative().singlepart(SinglePart::plain(m.text.clone())).multipart(related)
            }
            None => MultiPart::alternative_plain_html(m.text.clone(), m.html.clone()),
        };
        let body = match &m.attachment {
            Some(a) => {
                let kind = ContentType::parse(&a.content_type).map_err(|e| permanent(format!("attachment: {e}")))?;
                MultiPart::mixed()
                    .multipart(alternative)
                    .singlepart(Attachment::new(a.filename.clone()).body(a.bytes.clone(), kind))
            }
            None => MultiPart::mixed().multipart(alternative),
        };
        builder.multipart(body).map_err(|e| permanent(format!("message: {e}")))
    }
}

#[async_trait]
impl Mailer for LettreMailer {
    async fn send(&self, message: &EmailMessage) -> Result<(), MailError> {
        let built = self.build(message)?;
        match &self.transport {
            Transport::Smtp(smtp) => match tokio::time::timeout(self.timeout, smtp.send(built)).await {
                Ok(sent) => {
                    sent.map(|_| ()).map_err(|e| MailError { message: e.to_string(), permanent: e.is_permanent() })
                }
                Err(_) => Err(MailError {
                    message: format!("the mail server did not finish within {} ms", self.timeout.as_millis()),
                    permanent: false,
                }),
            },
            Transport::Files(dir) => {
                let transient =
                    |e: std::io::Error| MailError { message: format!("{}: {e}", dir.display()), permanent: false };
                tokio::fs::create_dir_all(dir).await.map_err(transient)?;
                let path = dir.join(format!("{}.eml", message.id));
                // Written under a hidden name, then renamed: whoever watches the folder sees the
                // whole message or none of it, never a file still being written.
                let partial = dir.join(format!(".{}.eml.partial", message.id));
                tokio::fs::write(&partial, built.formatted()).await.map_err(transient)?;
                tokio::fs::rename(&partial, &path).await.map_err(transient)
            }
        }
    }
}
