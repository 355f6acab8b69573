//! Merchants, settlement tokens and wallet addresses.

use std::fmt;

use chrono::{DateTime, Utc};
use tiny_keccak::{Hasher, Keccak};

use crate::error::Error;
use crate::ids::MerchantId;
use crate::mode::Mode;

/// Polygon PoS mainnet, the only settlement chain.
pub const POLYGON_CHAIN_ID: u64 = 137;

/// The settlement tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Token {
    /// USD Coin.
    Usdc,
    /// Tether USD.
    Usdt,
}

impl Token {
    /// Every settlement token.
    pub const ALL: [Token; 2] = [Token::Usdc, Token::Usdt];

    /// The token's symbol: `USDC` or `USDT`.
    pub fn symbol(self) -> &'static str {
        match self {
            Token::Usdc => "USDC",
            Token::Usdt => "USDT",
        }
    }

    /// Reads `USDC` or `USDT`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "USDC" => Some(Token::Usdc),
            "USDT" => Some(Token::Usdt),
            _ => None,
        }
    }

    /// The token's contract on Polygon (chain 137): native USDC and USDT0.
    pub fn polygon_contract(self) -> WalletAddress {
        let hex = match self {
            Token::Usdc => "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
            Token::Usdt => "0xc2132D05D31c914a87C6611C10748AEb04B58e8F",
        };
        WalletAddress(hex.to_owned())
    }
}

/// The key EIP-3009 authorization nonces are derived with (`invoice::wallet::AuthorizationNonce`): derived from the operator's secret key, never
/// printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NonceKey(pub Vec<u8>);

impl std::fmt::Debug for NonceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NonceKey(hidden)")
    }
}

/// The settlement chain and its token contracts, as the operator configured them (Polygon's
/// by default). A checkout records the contract it expects when it is created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSettings {
    /// The chain checkouts expect (137, Polygon).
    pub chain_id: u64,
    /// USDC's contract on that chain.
    pub usdc: WalletAddress,
    /// USDT's contract on that chain.
    pub usdt: WalletAddress,
    /// How long a submitted hash may stay unknown to the chain before its payment fails as
    /// `transaction_not_found` (10 minutes by default).
    pub not_found_after: chrono::Duration,
    /// How far the service's clock may run ahead of the chain's (30 s by default): a transfer
    /// mined up to this long before a checkout's creation counts for it on evidence the
    /// transfer carries (a bound wallet, a unique amount), never on a bare report.
    pub clock_skew: chrono::Duration,
    /// How long after a range of final blocks was first read the follower reads it once more,
    /// through another endpoint where there is one (2 minutes by default).
    pub recheck_after: chrono::Duration,
    /// The key authorization nonces are derived with (from the operator's secret key).
    pub nonce_key: NonceKey,
}

impl Default for ChainSettings {
    fn default() -> Self {
        Self {
            chain_id: POLYGON_CHAIN_ID,
            usdc: Token::Usdc.polygon_contract(),
            usdt: Token::Usdt.polygon_contract(),
            not_found_after: chrono::Duration::minutes(10),
            clock_skew: chrono::Duration::seconds(30),
            recheck_after: chrono::Duration::minutes(2),
            nonce_key: NonceKey::default(),
        }
    }
}

impl ChainSettings {
    /// The contract of `token` on the chain.
    pub fn contract(&self, token: Token) -> &WalletAddress {
        match token {
            Token::Usdc => &self.usdc,
            Token::Usdt => &self.usdt,
        }
    }

    /// The token whose contract this is, if any.
    pub fn token_of(&self, contract: &WalletAddress) -> Option<Token> {
        [Token::Usdc, Token::Usdt].into_iter().find(|t| self.contract(*t) == contract)
    }
}

/// Why an EVM address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("must be 0x followed by 40 hexadecimal characters")]
    /// Not `0x` followed by 40 hexadecimal digits.
    Malformed,
    #[error("mixed-case address fails its EIP-55 checksum")]
    /// Mixed case that is not a valid EIP-55 checksum.
    BadChecksum,
}

/// An EVM address in its EIP-55 checksummed form.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WalletAddress(String);

impl WalletAddress {
    /// Accepts `0x` + 40 hex digits. All-lowercase and all-uppercase input is accepted as is;
    /// mixed case must match the EIP-55 checksum. The stored form is always checksummed.
    pub fn parse(input: &str) -> Result<Self, AddressError> {
        let hex = input
            .strip_prefix("0x")
            .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or(AddressError::Malformed)?;
        let checksummed = eip55(hex);
        let has_lower = hex.bytes().any(|b| b.is_ascii_lowercase());
        let has_upper = hex.bytes().any(|b| b.is_ascii_uppercase());
        if has_lower && has_upper && checksummed[2..] != *hex {
            return Err(AddressError::BadChecksum);
        }
        Ok(Self(checksummed))
    }

    /// Wraps a value read back from storage without checking it.
    pub fn from_trusted(value: String) -> Self {
        Self(value)
    }

    /// The address as given (its EIP-55 form when checked).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WalletAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for WalletAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn eip55(hex: &str) -> String {
    let lower = hex.to_ascii_lowercase();
    let mut hash = [0u8; 32];
    let mut keccak = Keccak::v256();
    keccak.update(lower.as_bytes());
    keccak.finalize(&mut hash);
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let byte = hash[i / 2];
        let nibble = if i % 2 == 0 { byte >> 4 } else { byte & 0x0f };
        if c.is_ascii_alphabetic() && nibble >= 8 {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether the merchant may operate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MerchantStatus {
    /// Can take payments and use the API.
    Active,
    /// Suspended by an operator: its keys are refused with ACCOUNT_SUSPENDED.
    Suspended,
}

impl MerchantStatus {
    /// The status as stored: `active` or `suspended`.
    pub fn as_str(self) -> &'static str {
        match self {
            MerchantStatus::Active => "active",
            MerchantStatus::Suspended => "suspended",
        }
    }

    /// Reads `active` or `suspended`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "active" => Some(Self::Active),
            "suspended" => Some(Self::Suspended),
            _ => None,
        }
    }
}

/// Live-mode settlement configured by activation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveSettlement {
    /// The merchant's own wallet live payments go to.
    pub wallet: WalletAddress,
    /// The token live payments settle in.
    pub token: Token,
    /// When the merchant was activated for live mode.
    pub activated_at: DateTime<Utc>,
    /// Unique amounts: each new live checkout asks a few base units more than its amount
    /// (at most [`MAX_AMOUNT_OFFSET_UNITS`]), so that no two open checkouts of the wallet ask
    /// the same amount and every transfer sent without its hash can be attributed.
    pub unique_amounts: bool,
}

/// Whether a merchant's first live activation turns unique amounts on: every transfer sent
/// without its hash is then attributable by its amount alone, which reports cannot outrank.
/// Merchants activated before keep their setting; the operator and the merchant's owners and
/// admins may turn it off.
pub const UNIQUE_AMOUNTS_WHEN_FIRST_ACTIVATED: bool = true;

/// How many offsets a new unique-amount checkout draws before it asks its plain amount instead:
/// a wallet holds at most [`MAX_AMOUNT_OFFSET_UNITS`] pending checkouts of one amount with
/// offsets, and a checkout is never refused because they are taken (a flash sale of one price),
/// it is only matched by its other evidence.
pub const UNIQUE_AMOUNT_DRAWS: usize = 5;

/// The largest offset a unique-amount checkout adds to its amount, in base units (0.000999).
pub const MAX_AMOUNT_OFFSET_UNITS: u32 = 999;

/// A settlement wallet as the dashboard takes it: a checked EVM address (EIP-55 when mixed
/// case) that can receive the tokens. Refused: the zero address and the precompiled contracts
/// (`0x00...0001` to `0x00...00ff`: nothing can spend what they receive) and the token
/// contracts themselves (a transfer to a token's own contract is stuck there). Errors:
/// `InvalidWalletAddress` or `UnsupportedDefaultWallet` on `field`.
pub fn check_settlement_wallet(field: &str, input: &str, chain: &ChainSettings) -> Result<WalletAddress, Error> {
    let wallet = WalletAddress::parse(input.trim())
        .map_err(|e| Error::InvalidWalletAddress { field: field.into(), message: e.to_string() })?;
    let hex = wallet.as_str().to_ascii_lowercase();
    if hex[2..40].bytes().all(|b| b == b'0') {
        return Err(Error::UnsupportedDefaultWallet {
            field: field.into(),
            message: "the zero address and precompiled contracts cannot receive payments".into(),
        });
    }
    if [&chain.usdc, &chain.usdt].iter().any(|c| c.as_str().eq_ignore_ascii_case(wallet.as_str())) {
        return Err(Error::UnsupportedDefaultWallet {
            field: field.into(),
            message: "a token's own contract cannot receive payments in that token".into(),
        });
    }
    Ok(wallet)
}

/// A merchant account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merchant {
    /// The merchant's id (`mer_...`).
    pub id: MerchantId,
    /// Its name, shown to customers.
    pub name: String,
    /// Reviewed website origin (`scheme://host[:port]`); live return URLs must match it.
    pub website_origin: Option<String>,
    /// Whether it can use the API.
    pub status: MerchantStatus,
    /// `None` until the merchant is activated for live mode.
    pub live: Option<LiveSettlement>,
    /// Platform fee absorbed by the merchant, in basis points of the amount credited.
    pub fee_basis_points: u32,
    /// Prefix of issued invoice numbers.
    pub invoice_prefix: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// What its documents say about the seller.
    pub profile: MerchantProfile,
    /// Its logo, when set (see [`crate::merchant::logo`]).
    pub logo: Option<crate::merchant::logo::Logo>,
}

/// What a merchant's invoices, receipts, emails and hosted pages say about the seller, beside
/// its name (all optional: without them a document shows the name alone). Set by the operator
/// (`stablepay merchant profile`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MerchantProfile {
    /// The registered legal name, when it differs from the trading name.
    pub legal_name: Option<String>,
    /// The postal address, one line per line.
    pub postal_address: Option<String>,
    /// The tax or VAT registration number.
    pub tax_id: Option<String>,
    /// Where customers ask for help (shown on documents and pages).
    pub support_email: Option<String>,
    /// Where replies to the merchant's emails go (the `Reply-To` header).
    pub reply_to: Option<String>,
}

/// Longest legal name or tax id, in UTF-8 bytes.
pub const MAX_PROFILE_FIELD_BYTES: usize = 200;
/// Longest postal address, in UTF-8 bytes.
pub const MAX_POSTAL_ADDRESS_BYTES: usize = 500;

/// Where and in what a mode settles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// The wallet transfers go to.
    pub wallet: WalletAddress,
    /// The token they settle in.
    pub token: Token,
    /// Whether new checkouts ask unique amounts (live mode only).
    pub unique_amounts: bool,
}

impl Merchant {
    /// The merchant as the `attempt`-th decision of a new checkout sees it: unique amounts off
    /// once [`UNIQUE_AMOUNT_DRAWS`] offsets were taken.
    pub fn for_attempt(&self, attempt: usize) -> std::borrow::Cow<'_, Merchant> {
        match &self.live {
            Some(l) if l.unique_amounts && attempt >= UNIQUE_AMOUNT_DRAWS => {
                let live = LiveSettlement { unique_amounts: false, ..l.clone() };
                std::borrow::Cow::Owned(Merchant { live: Some(live), ..self.clone() })
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }

    /// Test mode settles to a simulated wallet (no configuration needed) in the merchant's live
    /// token (USDC until activated); live mode needs activation (ACTIVE_MERCHANT_REQUIRED).
    pub fn settlement(&self, mode: Mode) -> Result<Settlement, Error> {
        match mode {
            Mode::Test => Ok(Settlement {
                wallet: test_settlement_wallet(&self.id),
                token: self.live.as_ref().map_or(Token::Usdc, |l| l.token),
                unique_amounts: false,
            }),
            Mode::Live => self
                .live
                .as_ref()
                .map(|l| Settlement { wallet: l.wallet.clone(), token: l.token, unique_amounts: l.unique_amounts })
                .ok_or(Error::ActiveMerchantRequired),
        }
    }
}

/// The simulated settlement wallet of test mode: deterministic per merchant, never a real
/// wallet of anyone's (derived from a hash, so nobody holds its key).
pub fn test_settlement_wallet(merchant: &MerchantId) -> WalletAddress {
    let mut hash = [0u8; 32];
    let mut keccak = Keccak::v256();
    keccak.update(b"stablepay test settlement wallet:");
    keccak.update(merchant.as_str().as_bytes());
    keccak.finalize(&mut hash);
    let hex: String = hash[12..].iter().map(|b| format!("{b:02x}")).collect();
    WalletAddress(eip55(&hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_checkout_asks_its_plain_amount_once_offsets_keep_being_taken() {
        let wallet = WalletAddress::parse("0x52908400098527886e0f7030069857d2e4169ee7").unwrap();
        let merchant = Merchant {
            id: MerchantId::from_trusted("mer_1".into()),
            name: "Shop".into(),
            website_origin: None,
            status: MerchantStatus::Active,
            live: Some(LiveSettlement { wallet, token: Token::Usdc, activated_at: Utc::now(), unique_amounts: true }),
            fee_basis_points: 0,
            invoice_prefix: "INV".into(),
            created_at: Utc::now(),
            profile: MerchantProfile::default(),
            logo: None,
        };
        let unique = |attempt| merchant.for_attempt(attempt).settlement(Mode::Live).unwrap().unique_amounts;
        assert!((0..UNIQUE_AMOUNT_DRAWS).all(unique));
        assert!(!unique(UNIQUE_AMOUNT_DRAWS));
        assert!(merchant.live.as_ref().unwrap().unique_amounts, "the merchant's own setting is kept");
    }

    #[test]
    fn a_settlement_wallet_must_be_able_to_receive() {
        let chain = ChainSettings::default();
        let ok = check_settlement_wallet("wallet", "0x52908400098527886e0f7030069857d2e4169ee7", &chain).unwrap();
        assert_eq!(ok.as_str(), "0x52908400098527886E0F7030069857D2E4169EE7", "stored checksummed");
        let code = |input: &str| match check_settlement_wallet("wallet", input, &chain) {
            Err(Error::InvalidWalletAddress { field, .. }) => format!("invalid {field}"),
            Err(Error::UnsupportedDefaultWallet { field, .. }) => format!("unsupported {field}"),
            other => format!("{other:?}"),
        };
        assert_eq!(code("0x12"), "invalid wallet");
        assert_eq!(code("0x52908400098527886e0F7030069857D2E4169EE7"), "invalid wallet", "a bad checksum");
        assert_eq!(code(&format!("0x{}", "0".repeat(40))), "unsupported wallet");
        assert_eq!(code(&format!("0x{}ff", "0".repeat(38))), "unsupported wallet", "a precompile");
        assert_eq!(code(chain.usdt.as_str()), "unsupported wallet", "a token contract");
        assert!(check_settlement_wallet("wallet", &format!("0x{}0100", "0".repeat(36)), &chain).is_ok());
    }

    #[test]
    fn eip55_vectors() {
        // Vectors from EIP-55.
        for good in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            assert_eq!(WalletAddress::parse(good).unwrap().as_str(), good);
            let lower = format!("0x{}", good[2..].to_ascii_lowercase());
            assert_eq!(WalletAddress::parse(&lower).unwrap().as_str(), good);
        }
        assert_eq!(WalletAddress::parse("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"), Err(AddressError::BadChecksum));
        for bad in [
            "",
            "0x",
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe",
            "0xzaAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        ] {
            assert_eq!(WalletAddress::parse(bad), Err(AddressError::Malformed), "{bad}");
        }
    }

    #[test]
    fn token_contracts_are_checksummed() {
        for token in [Token::Usdc, Token::Usdt] {
            let c = token.polygon_contract();
            assert_eq!(WalletAddress::parse(c.as_str()).unwrap(), c);
        }
        let w = test_settlement_wallet(&MerchantId::from_trusted("mer_x".into()));
        assert_eq!(WalletAddress::parse(w.as_str()).unwrap(), w);
    }
}
