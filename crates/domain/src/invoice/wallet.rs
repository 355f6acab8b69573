//! What a customer's browser wallet is asked to sign for a checkout: the ERC-20 `transfer` of
//! the exact amount due to the merchant's settlement wallet, on the checkout's chain; and, where
//! the token implements EIP-3009 (native USDC), a `transferWithAuthorization` whose nonce the
//! service derived for this checkout, so the transfer itself names the checkout it pays.

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::ids::CheckoutSessionId;

use crate::merchant::model::{Token, WalletAddress};
use crate::money::Amount;

/// The selector of ERC-20 `transfer(address,uint256)`.
pub const TRANSFER_SELECTOR: &str = "0xa9059cbb";

/// The selector of EIP-3009 `transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)`.
pub const TRANSFER_WITH_AUTHORIZATION_SELECTOR: &str = "0xe3ee160e";

/// The most authorization nonces one checkout keeps (attempts beyond it answer the plain
/// transfer only): anyone holding a checkout id can ask for attempts.
pub const MAX_AUTHORIZATIONS: usize = 50;

/// An EIP-3009 authorization's 32-byte nonce, derived by the service for one wallet payment
/// attempt of a checkout ([`AuthorizationNonce::derive`]): a transfer carrying it names that
/// checkout.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuthorizationNonce(pub [u8; 32]);

impl AuthorizationNonce {
    /// The nonce of attempt `attempt` (random bytes) of `session` by `payer`: an HMAC under the
    /// operator's `key`, so nobody can predict or forge one for another checkout.
    pub fn derive(
        crypto: &dyn Crypto,
        key: &[u8],
        (session, payer): (&CheckoutSessionId, &WalletAddress),
        attempt: &[u8],
    ) -> Self {
        let mut data = b"stablepay/eip3009-nonce/v1|".to_vec();
        data.extend_from_slice(session.as_str().as_bytes());
        data.push(b'|');
        data.extend_from_slice(payer.as_str().to_ascii_lowercase().as_bytes());
        data.push(b'|');
        data.extend_from_slice(attempt);
        Self(crypto.hmac_sha256(key, &data))
    }

    /// `0x` and 64 lower-case hex digits, as EIP-712 messages and logs write a `bytes32`.
    pub fn hex(&self) -> String {
        let mut out = String::with_capacity(66);
        out.push_str("0x");
        for b in self.0 {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    /// Reads `0x` and 64 hex digits (any case).
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix("0x")?;
        if digits.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(digits.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl std::fmt::Debug for AuthorizationNonce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

/// A token contract's EIP-712 domain, as the contract itself says it (EIP-5267
/// `eip712Domain()`): never assumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenDomain {
    /// `name`.
    pub name: String,
    /// `version`.
    pub version: String,
    /// `chainId`.
    pub chain_id: u64,
    /// `verifyingContract`: the token's contract.
    pub verifying_contract: WalletAddress,
}

/// What the payer signs to pay by EIP-3009 authorization: `TransferWithAuthorization` of what
/// is due now from the connected wallet to the settlement wallet, valid until the checkout
/// expires, with the nonce of this attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorization {
    /// The token's EIP-712 domain.
    pub domain: TokenDomain,
    /// Valid after this Unix time (0: at once).
    pub valid_after: i64,
    /// Valid before this Unix time: the checkout's expiry.
    pub valid_before: i64,
    /// The attempt's nonce.
    pub nonce: AuthorizationNonce,
}

/// The terms of one attempt's authorization, as the payer is asked to sign them and as they are
/// kept with the attempt: everything `transferWithAuthorization` takes but the signature, so a
/// signature posted later is checked against what was offered, never against what it claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationTerms {
    /// The token's contract.
    pub token_contract: WalletAddress,
    /// The payer (the authorizer).
    pub from: WalletAddress,
    /// The settlement wallet.
    pub to: WalletAddress,
    /// What was due when the attempt was made.
    pub value: Amount,
    /// Valid after this Unix time.
    pub valid_after: i64,
    /// Valid before this Unix time.
    pub valid_before: i64,
    /// The attempt's nonce.
    pub nonce: AuthorizationNonce,
}

/// The transfer a wallet must sign to pay a checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalletTransfer {
    /// The checkout it pays.
    pub session_id: CheckoutSessionId,
    /// The customer's connected wallet (the transaction's `from`).
    pub payer: WalletAddress,
    /// The chain to sign on.
    pub chain_id: u64,
    /// The token.
    pub token: Token,
    /// The token's contract (the transaction's `to`).
    pub token_contract: WalletAddress,
    /// The merchant's settlement wallet (the transfer's recipient).
    pub recipient: WalletAddress,
    /// The amount due now.
    pub amount: Amount,
    /// When the checkout stops taking payments.
    pub expires_at: DateTime<Utc>,
    /// The EIP-3009 authorization to sign instead, when the token's contract has one (USDC).
    pub authorization: Option<Authorization>,
}

impl WalletTransfer {
    /// The amount in the token's smallest units (6 decimals).
    pub fn units(&self) -> String {
        self.amount.to_units()
    }

    /// The transaction's data: `transfer(recipient, units)` ABI-encoded.
    pub fn calldata(&self) -> String {
        let recipient = self.recipient.as_str().trim_start_matches("0x").to_ascii_lowercase();
        // Amounts stay below 10^21 (15 integer and 6 fractional digits): far inside a u128.
        let units: u128 = self.units().parse().unwrap_or(0);
        format!("{TRANSFER_SELECTOR}{recipient:0>64}{units:064x}")
    }

    /// The terms of the authorization this attempt offers, if it offers one.
    pub fn terms(&self) -> Option<AuthorizationTerms> {
        self.authorization.as_ref().map(|a| AuthorizationTerms {
            token_contract: self.token_contract.clone(),
            from: self.payer.clone(),
            to: self.recipient.clone(),
            value: self.amount.clone(),
            valid_after: a.valid_after,
            valid_before: a.valid_before,
            nonce: a.nonce,
        })
    }

    /// The chain id as wallets write it (`0x89` for Polygon).
    pub fn chain_hex(&self) -> String {
        format!("0x{:x}", self.chain_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Decimal6;

    #[test]
    fn the_calldata_is_an_erc20_transfer_of_the_exact_units() {
        let t = WalletTransfer {
            session_id: CheckoutSessionId::parse("cs_x").unwrap(),
            payer: WalletAddress::parse("0x00000000000000000000000000000000000000aa").unwrap(),
            chain_id: 137,
            token: Token::Usdc,
            token_contract: Token::Usdc.polygon_contract(),
            recipient: WalletAddress::parse("0x52908400098527886E0F7030069857D2E4169EE7").unwrap(),
            amount: Decimal6::parse("12.5").unwrap(),
            expires_at: Utc::now(),
            authorization: None,
        };
        assert_eq!(t.units(), "12500000");
        assert_eq!(t.chain_hex(), "0x89");
        let data = t.calldata();
        assert_eq!(data.len(), 2 + 8 + 64 + 64);
        assert!(data.starts_with("0xa9059cbb00000000000000000000000052908400098527886e0f7030069857d2e4169ee7"));
        assert!(data.ends_with(&format!("{:064x}", 12_500_000u128)));
    }

    #[test]
    fn a_nonce_depends_on_the_key_the_checkout_the_payer_and_the_attempt() {
        let crypto = crate::testing::SeqCrypto::default();
        let (a, b) = (CheckoutSessionId::parse("cs_a").unwrap(), CheckoutSessionId::parse("cs_b").unwrap());
        let payer = WalletAddress::parse("0x00000000000000000000000000000000000000aa").unwrap();
        let n = |key: &[u8], s: &CheckoutSessionId, attempt: &[u8]| {
            AuthorizationNonce::derive(&crypto, key, (s, &payer), attempt)
        };
        let base = n(b"k", &a, b"1");
        assert_eq!(base, n(b"k", &a, b"1"));
        assert_ne!(base, n(b"other key", &a, b"1"));
        assert_ne!(base, n(b"k", &b, b"1"));
        assert_ne!(base, n(b"k", &a, b"2"));
        assert_eq!(AuthorizationNonce::parse(&base.hex()), Some(base));
        assert_eq!(base.hex().len(), 66);
        assert_eq!(AuthorizationNonce::parse("0x12"), None);
    }
}
