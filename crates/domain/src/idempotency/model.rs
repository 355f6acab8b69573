//! What an idempotency key says about a request, and whose key it is.

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
    /// First use (or the earlier attempt was abandoned): execute the request.
    Started,
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
}

impl Requester {
    /// The requester as stored: the key type (`secret`, `publishable`) or `public`.
    pub fn as_str(self) -> &'static str {
        match self {
            Requester::Key(t) => t.as_str(),
            Requester::Public => "public",
        }
    }
}
