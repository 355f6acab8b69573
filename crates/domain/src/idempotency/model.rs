//! What an idempotency key says about a request, and whose key it is.

use chrono::{DateTime, Utc};

use crate::api_key::model::KeyType;
use crate::mode::Scope;

/// The longest idempotency key, in characters (the spec's limit).
pub const MAX_KEY_CHARS: usize = 255;

/// Whether `key` is a well-formed idempotency key: 1-255 visible ASCII characters, no spaces.
pub fn well_formed(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_CHARS && key.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// What an idempotency key says about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// First use (or the earlier attempt was abandoned before its work committed): execute the
    /// request under this claim.
    Started(IdempotencyClaim),
    /// Same key, same request: its work committed but the process stopped before its answer
    /// was recorded. Answer again from what it committed; never run it twice.
    Committed(Committed),
    /// Same key, same request, completed: answer with the stored response.
    Replay {
        /// The stored answer's HTTP status.
        status: u16,
        /// The stored answer's body, byte for byte.
        body: String,
    },
    /// Same key, same request, still executing elsewhere: retry later.
    InProgress,
    /// Same key, different request.
    Conflict,
}

/// A request under an idempotency key: whose key, the key as stored (public routes prefix it
/// with their resource), and what identifies the request (its method, path and exact body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedRequest {
    /// Whose key.
    pub namespace: IdempotencyNamespace,
    /// The key.
    pub key: String,
    /// The request's fingerprint.
    pub fingerprint: [u8; 32],
}

/// A claimed key, carried into the transaction of the work it guards: the store marks the key
/// committed in that same transaction (so a retry after a crash at any point finds either no
/// work, and runs it, or the work with its marker, and answers it again), and only while the
/// claim is still this one (a request taken over after its lease ran out commits nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// Whose key.
    pub namespace: IdempotencyNamespace,
    /// The key, as stored (public routes prefix it with their resource).
    pub key: String,
    /// When this claim was taken: it tells this claim from a later takeover.
    pub claimed_at: DateTime<Utc>,
}

/// What a keyed request's committed work created or changed: what answers it again after a
/// crash. Written by the store from the change it commits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The invoice changed or created (`inv_...`).
    pub invoice: Option<String>,
    /// The checkout session the change created or changed last (`cs_...`).
    pub session: Option<String>,
    /// The email the change queued (`eml_...`).
    pub email: Option<String>,
    /// The payment link changed or created (`plink_...`).
    pub link: Option<String>,
    /// The refund reference the change recorded (`rr_...`).
    pub refund: Option<String>,
    /// The payment the change recorded first (`pay_...`).
    pub payment: Option<String>,
    /// The export created (`exp_...`).
    pub export: Option<String>,
    /// The reconciliation run created (`rcr_...`).
    pub reconciliation_run: Option<String>,
}

impl Committed {
    /// The stored form: `invoice=inv_...;session=cs_...` (only what is set).
    pub fn to_text(&self) -> String {
        let parts = [
            ("invoice", &self.invoice),
            ("session", &self.session),
            ("email", &self.email),
            ("link", &self.link),
            ("refund", &self.refund),
            ("payment", &self.payment),
            ("export", &self.export),
            ("reconciliation_run", &self.reconciliation_run),
        ];
        parts.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}"))).collect::<Vec<_>>().join(";")
    }

    /// Reads [`Committed::to_text`]'s form (unknown parts are ignored).
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        for (k, v) in text.split(';').filter_map(|p| p.split_once('=')) {
            let v = Some(v.to_owned());
            match k {
                "invoice" => out.invoice = v,
                "session" => out.session = v,
                "email" => out.email = v,
                "link" => out.link = v,
                "refund" => out.refund = v,
                "payment" => out.payment = v,
                "export" => out.export = v,
                "reconciliation_run" => out.reconciliation_run = v,
                _ => {}
            }
        }
        out
    }
}

/// An in-progress claim older than this, whose work did not commit, is considered abandoned by
/// a crashed process (the default of `STABLEPAY_IDEMPOTENCY_LEASE_SECONDS`; it must exceed the
/// longest request).
pub const STALE_AFTER_SECONDS: i64 = 60;

/// How idempotency claims behave in one deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdempotencySettings {
    /// Seconds after which a claim whose work did not commit is taken over by a retry
    /// (`STABLEPAY_IDEMPOTENCY_LEASE_SECONDS`; longer than the longest request).
    pub lease_seconds: i64,
}

impl Default for IdempotencySettings {
    fn default() -> Self {
        Self { lease_seconds: STALE_AFTER_SECONDS }
    }
}

/// Whose idempotency key it is: keys are separate per merchant, mode and requester, so a
/// publishable key (public, in browsers) can never claim or read a secret-key request's answer,
/// nor a customer on a public page a merchant's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyNamespace {
    /// The merchant and mode.
    pub scope: Scope,
    /// Who sent the request.
    pub requester: Requester,
}

/// Who sent an idempotent request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    /// A merchant's API key of this type.
    Key(KeyType),
    /// A customer on a public route (no key); their keys are also separate per public
    /// resource (the caller puts the resource into the key).
    Public,
    /// A signed-in member's dashboard form; their keys are also separate per user (the caller
    /// puts the user's id into the key).
    Dashboard,
}

impl Requester {
    /// The requester as stored: the key type (`secret`, `publishable`), `public` or
    /// `dashboard`.
    pub fn as_str(self) -> &'static str {
        match self {
            Requester::Key(t) => t.as_str(),
            Requester::Public => "public",
            Requester::Dashboard => "dashboard",
        }
    }
}
