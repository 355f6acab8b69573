//! Webhook adapter of stablepay: the HTTP sender of the `WebhookSender` port (signed with the
//! spec's scheme and Standard Webhooks, through the destination guard), the `SecretBox` that
//! seals signing secrets at rest, and the signature schemes with their verification functions
//! for receivers written in Rust.

pub mod body;
pub mod guard;
pub mod secret_box;
pub mod sender;
pub mod signature;

pub use secret_box::AesSecretBox;
pub use sender::HttpSender;
pub use signature::{DEFAULT_TOLERANCE_SECONDS, VerifyError, verify, verify_standard};
