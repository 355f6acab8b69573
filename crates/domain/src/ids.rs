//! Opaque, random, type-prefixed identifiers and public tokens.
//!
//! An id is a prefix naming its type (`inv_`, `cs_`, ...) followed by 22 base62 characters
//! drawn from 16 random bytes (128 bits). Public tokens (hosted invoice and payment-link
//! pages) are separate values of 32 random bytes, so knowing an id never reveals a token.

use std::fmt;

use crate::crypto::Crypto;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Encodes random bytes as base62 with a fixed length (leading zeros kept): the `len` lowest
/// base62 digits of the bytes read as one big-endian number.
pub fn base62(bytes: &[u8], len: usize) -> String {
    // The number as 64-bit limbs, most significant first (the first one partial), divided by
    // 62 once per digit: a 128-bit division per limb instead of one per byte (every request
    // id, every record id).
    let mut limbs: Vec<u64> =
        bytes.rchunks(8).rev().map(|chunk| chunk.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))).collect();
    let mut out = vec![b'0'; len];
    for slot in out.iter_mut().rev() {
        let mut remainder: u128 = 0;
        for limb in limbs.iter_mut() {
            let acc = (remainder << 64) | u128::from(*limb);
            *limb = u64::try_from(acc / 62).unwrap_or(0);
            remainder = acc % 62;
        }
        *slot = BASE62[usize::try_from(remainder).unwrap_or(0)];
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Random base62 text of `len` characters with at least `len * 5.95` bits of entropy.
pub fn random_base62(crypto: &dyn Crypto, len: usize) -> String {
    // len random bytes (8 bits each) reduced to len base62 digits (about 5.95 bits each).
    let mut bytes = vec![0u8; len];
    crypto.fill_random(&mut bytes);
    base62(&bytes, len)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The prefix every id of this type starts with.
            pub const PREFIX: &'static str = $prefix;

            /// A new random id.
            pub fn generate(crypto: &dyn Crypto) -> Self {
                let mut bytes = [0u8; 16];
                crypto.fill_random(&mut bytes);
                Self(format!("{}{}", $prefix, base62(&bytes, 22)))
            }

            /// Accepts a value of this id type (right prefix, base62 body); `None` otherwise.
            pub fn parse(value: &str) -> Option<Self> {
                let body = value.strip_prefix($prefix)?;
                let ok = !body.is_empty()
                    && body.len() <= 64
                    && body.bytes().all(|b| b.is_ascii_alphanumeric());
                ok.then(|| Self(value.to_owned()))
            }

            /// Wraps a value read back from storage without checking it.
            pub fn from_trusted(value: String) -> Self {
                Self(value)
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(/// A merchant account.
    MerchantId, "mer_");
id_type!(/// An API key record (not the key itself).
    ApiKeyId, "key_");
id_type!(/// An invoice.
    InvoiceId, "inv_");
id_type!(/// A checkout session.
    CheckoutSessionId, "cs_");
id_type!(/// A payment record.
    PaymentId, "pay_");
id_type!(/// A payment link.
    PaymentLinkId, "plink_");
id_type!(/// A webhook endpoint.
    WebhookEndpointId, "we_");
id_type!(/// A webhook delivery.
    WebhookDeliveryId, "whd_");
id_type!(/// An incident of a webhook endpoint (a run of failed deliveries).
    WebhookIncidentId, "whi_");
id_type!(/// An event.
    EventId, "evt_");
id_type!(/// A refund reference recorded on an invoice.
    RefundReferenceId, "rfr_");
id_type!(/// An email to an invoice's customer (its outbox row, and the message's id).
    EmailId, "eml_");
id_type!(/// A transfer into a merchant's wallet that no checkout could be credited with.
    UnattributedTransferId, "utr_");
id_type!(/// An export of a merchant's records as a CSV file.
    ExportId, "exp_");
id_type!(/// A reconciliation run: a period of the chain read again and matched with the books.
    ReconciliationRunId, "rcr_");
id_type!(/// A monthly statement: a month's invoices and payments exported and mailed as a link.
    StatementId, "stm_");
id_type!(/// A person who signs in to the dashboard.
    UserId, "usr_");
id_type!(/// A signed-in session of a user (not its token).
    SessionId, "ses_");
id_type!(/// An emailed account link: verification, password reset or invitation (not its token).
    AccountLinkId, "alk_");
id_type!(/// An entry of a merchant's audit log.
    AuditEntryId, "aud_");
id_type!(/// A customer's signed authorization the relayer submits for them.
    RelayId, "rel_");
id_type!(/// A notice emailed to a member (a wallet change, a webhook incident).
    NoticeId, "ntc_");

/// An unguessable public token (hosted invoice page, public payment link): 43 base62
/// characters, about 256 bits.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PublicToken(String);

impl PublicToken {
    /// A new random token.
    pub fn generate(crypto: &dyn Crypto) -> Self {
        let mut bytes = [0u8; 32];
        crypto.fill_random(&mut bytes);
        Self(base62(&bytes, 43))
    }

    /// Accepts 43 base62 characters; `None` otherwise.
    pub fn parse(value: &str) -> Option<Self> {
        (value.len() == 43 && value.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| Self(value.to_owned()))
    }

    /// Wraps a value read back from storage without checking it.
    pub fn from_trusted(value: String) -> Self {
        Self(value)
    }

    /// The token as text (a capability: never log it).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PublicToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PublicToken(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SeqCrypto;

    #[test]
    fn ids_are_prefixed_and_parse_back() {
        let crypto = SeqCrypto::default();
        let a = InvoiceId::generate(&crypto);
        let b = InvoiceId::generate(&crypto);
        assert!(a.as_str().starts_with("inv_"));
        assert_eq!(a.as_str().len(), 4 + 22);
        assert_ne!(a, b);
        assert_eq!(InvoiceId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(CheckoutSessionId::parse(a.as_str()), None);
        assert_eq!(InvoiceId::parse("inv_"), None);
        assert_eq!(InvoiceId::parse("inv_a-b"), None);
    }

    /// The byte-wise long division the limb version replaced.
    fn base62_bytewise(bytes: &[u8], len: usize) -> String {
        let mut digits: Vec<u8> = bytes.to_vec();
        let mut out = Vec::with_capacity(len);
        for _ in 0..len {
            let mut remainder: u32 = 0;
            for d in digits.iter_mut() {
                let acc = (remainder << 8) | u32::from(*d);
                *d = u8::try_from(acc / 62).unwrap();
                remainder = acc % 62;
            }
            out.push(BASE62[usize::try_from(remainder).unwrap()]);
        }
        out.reverse();
        String::from_utf8(out).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn base62_is_the_long_division_of_the_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40), len in 0usize..50) {
            proptest::prop_assert_eq!(base62(&bytes, len), base62_bytewise(&bytes, len));
        }
    }

    #[test]
    fn base62_keeps_length_and_alphabet() {
        assert_eq!(base62(&[0; 16], 22), "0".repeat(22));
        assert_eq!(base62(&[255; 16], 22), "7n42DGM5Tflk9n8mt7Fhc7");
        let token = PublicToken::generate(&SeqCrypto::default());
        assert_eq!(token.as_str().len(), 43);
        assert!(PublicToken::parse(token.as_str()).is_some());
    }
}
