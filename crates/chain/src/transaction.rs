//! What the relayer signs, byte for byte: the EIP-712 digest of an EIP-3009
//! `TransferWithAuthorization` (to check whose signature a customer sent), the calldata of
//! `transferWithAuthorization`, and the EIP-1559 transaction that carries it (RLP, its
//! signing hash, its signed bytes and hash). The relayer's key lives here and signs nothing
//! else.

use alloy_primitives::{Address, B256, U256, keccak256};
use k256::ecdsa::{RecoveryId, Signature as EcdsaSignature, SigningKey, VerifyingKey};
use stablepay_domain::Error;
use stablepay_domain::invoice::wallet::{AuthorizationTerms, TRANSFER_WITH_AUTHORIZATION_SELECTOR, TokenDomain};
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::relay::model::{Fees, Signature, SignedAuthorization};

use crate::rpc::{domain_separator, parse_address};

/// keccak256 of EIP-3009's `TransferWithAuthorization` type.
fn transfer_with_authorization_typehash() -> B256 {
    keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
            .as_bytes(),
    )
}

fn word_of_address(a: &Address) -> [u8; 32] {
    a.into_word().0
}

fn word_of_u256(v: U256) -> [u8; 32] {
    v.to_be_bytes::<32>()
}

fn word_of_i64(v: i64) -> [u8; 32] {
    word_of_u256(U256::from(u64::try_from(v).unwrap_or(0)))
}

fn units(terms: &AuthorizationTerms) -> Result<U256, Error> {
    terms.value.to_units().parse().map_err(|_| Error::Internal("authorization value".into()))
}

/// The six words every encoding of an authorization's message shares: `from`, `to`, `value`,
/// `validAfter`, `validBefore`, `nonce`.
fn message_words(terms: &AuthorizationTerms) -> Result<[[u8; 32]; 6], Error> {
    Ok([
        word_of_address(&parse_address(&terms.from)?),
        word_of_address(&parse_address(&terms.to)?),
        word_of_u256(units(terms)?),
        word_of_i64(terms.valid_after),
        word_of_i64(terms.valid_before),
        terms.nonce.0,
    ])
}

/// The EIP-712 digest the payer signs for `terms` under `domain`.
pub(crate) fn authorization_digest(domain: &TokenDomain, terms: &AuthorizationTerms) -> Result<B256, Error> {
    let contract = parse_address(&domain.verifying_contract)?;
    let separator = domain_separator(&domain.name, &domain.version, domain.chain_id, &contract);
    let mut encoded = Vec::with_capacity(7 * 32);
    encoded.extend_from_slice(transfer_with_authorization_typehash().as_slice());
    for word in message_words(terms)? {
        encoded.extend_from_slice(&word);
    }
    let struct_hash = keccak256(&encoded);
    let mut message = Vec::with_capacity(2 + 64);
    message.extend_from_slice(&[0x19, 0x01]);
    message.extend_from_slice(separator.as_slice());
    message.extend_from_slice(struct_hash.as_slice());
    Ok(keccak256(&message))
}

/// The address of a secp256k1 public key.
fn address_of(key: &VerifyingKey) -> Result<WalletAddress, Error> {
    let point = key.to_sec1_point(false);
    let bytes = point.as_bytes().get(1..).ok_or_else(|| Error::Internal("public key".into()))?;
    let hash = keccak256(bytes);
    crate::rpc::address(&Address::from_slice(&hash[12..]))
}

/// Whose key made `signature` of `digest`; `None` when it recovers to no key.
pub(crate) fn recover(digest: &B256, signature: &Signature) -> Option<WalletAddress> {
    let sig = EcdsaSignature::from_scalars(signature.r, signature.s).ok()?;
    let id = RecoveryId::from_byte(signature.v.checked_sub(27)?)?;
    let key = VerifyingKey::recover_from_prehash(digest.as_slice(), &sig, id).ok()?;
    address_of(&key).ok()
}

/// `transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, v, r, s)` of a
/// signed authorization, ABI-encoded.
pub(crate) fn authorized_calldata(authorization: &SignedAuthorization) -> Result<Vec<u8>, Error> {
    let selector = TRANSFER_WITH_AUTHORIZATION_SELECTOR.trim_start_matches("0x");
    let mut data = Vec::with_capacity(4 + 9 * 32);
    for i in 0..4 {
        let byte = selector.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
        data.push(byte.ok_or_else(|| Error::Internal("selector".into()))?);
    }
    for word in message_words(&authorization.terms)? {
        data.extend_from_slice(&word);
    }
    let s = &authorization.signature;
    data.extend_from_slice(&word_of_u256(U256::from(s.v)));
    data.extend_from_slice(&s.r);
    data.extend_from_slice(&s.s);
    Ok(data)
}

/// RLP of a byte string.
fn rlp_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    match bytes {
        [b] if *b < 0x80 => out.push(*b),
        _ => {
            rlp_length(out, bytes.len(), 0x80);
            out.extend_from_slice(bytes);
        }
    }
}

/// RLP of an unsigned integer given big-endian (leading zeros dropped: zero is the empty string).
fn rlp_uint(out: &mut Vec<u8>, big_endian: &[u8]) {
    let first = big_endian.iter().position(|b| *b != 0).unwrap_or(big_endian.len());
    rlp_bytes(out, &big_endian[first..]);
}

fn rlp_length(out: &mut Vec<u8>, len: usize, offset: u8) {
    if len < 56 {
        out.push(offset + u8::try_from(len).unwrap_or(0));
    } else {
        let bytes = len.to_be_bytes();
        let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len() - 1);
        let size = &bytes[first..];
        out.push(offset + 55 + u8::try_from(size.len()).unwrap_or(0));
        out.extend_from_slice(size);
    }
}

fn rlp_list(items: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.len() + 9);
    rlp_length(&mut out, items.len(), 0xc0);
    out.extend_from_slice(items);
    out
}

/// An EIP-1559 transaction of the relayer: a call of `to` with `data` and no value.
pub(crate) struct Eip1559 {
    pub chain_id: u64,
    pub nonce: u64,
    pub fees: Fees,
    pub gas_limit: u64,
    pub to: Address,
    pub data: Vec<u8>,
}

impl Eip1559 {
    /// The RLP items up to the access list (empty): what is signed, and what the signed bytes
    /// begin with.
    fn fields(&self) -> Vec<u8> {
        let mut items = Vec::new();
        rlp_uint(&mut items, &self.chain_id.to_be_bytes());
        rlp_uint(&mut items, &self.nonce.to_be_bytes());
        rlp_uint(&mut items, &self.fees.max_priority_fee_per_gas.to_be_bytes());
        rlp_uint(&mut items, &self.fees.max_fee_per_gas.to_be_bytes());
        rlp_uint(&mut items, &self.gas_limit.to_be_bytes());
        rlp_bytes(&mut items, self.to.as_slice());
        rlp_uint(&mut items, &[]);
        rlp_bytes(&mut items, &self.data);
        items.extend_from_slice(&rlp_list(&[]));
        items
    }

    /// Signed with `key`: the transaction's bytes (type 2) and its hash.
    pub(crate) fn sign(&self, key: &SigningKey) -> Result<(Vec<u8>, B256), Error> {
        let fields = self.fields();
        let mut unsigned = vec![0x02];
        unsigned.extend_from_slice(&rlp_list(&fields));
        let (signature, id) = key.sign_prehash_recoverable(keccak256(&unsigned).as_slice());
        let (r, s): ([u8; 32], [u8; 32]) = (signature.r().to_bytes().into(), signature.s().to_bytes().into());
        let mut items = fields;
        rlp_uint(&mut items, &[u8::from(id.is_y_odd())]);
        rlp_uint(&mut items, &r);
        rlp_uint(&mut items, &s);
        let mut raw = vec![0x02];
        raw.extend_from_slice(&rlp_list(&items));
        let hash = keccak256(&raw);
        Ok((raw, hash))
    }
}

/// The relayer's key (`STABLEPAY_RELAYER_KEY`): never printed, and used only by
/// [`crate::EvmRelayer`] to sign submissions of customers' authorizations.
pub struct RelayerKey {
    key: SigningKey,
    address: WalletAddress,
}

impl RelayerKey {
    /// Reads 32 bytes in hex (`0x` optional): a valid secp256k1 private key.
    pub fn parse(text: &str) -> Result<Self, String> {
        let digits = text.trim().strip_prefix("0x").unwrap_or(text.trim());
        let bad = || "must be a secp256k1 private key: 64 hexadecimal digits (0x optional)".to_owned();
        if digits.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = digits.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(bad)?;
        }
        let key = SigningKey::from_slice(&bytes).map_err(|_| bad())?;
        let address = address_of(key.verifying_key()).map_err(|e| e.to_string())?;
        Ok(Self { key, address })
    }

    /// The relayer's address (public).
    pub fn address(&self) -> &WalletAddress {
        &self.address
    }

    pub(crate) fn signing_key(&self) -> &SigningKey {
        &self.key
    }
}

impl std::fmt::Debug for RelayerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RelayerKey({}, key hidden)", self.address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablepay_domain::invoice::wallet::AuthorizationNonce;
    use stablepay_domain::money::Decimal6;

    /// anvil's first development account.
    const ANVIL_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

    #[test]
    fn a_key_gives_its_address_and_never_prints_itself() {
        let key = RelayerKey::parse(ANVIL_KEY).unwrap();
        assert_eq!(key.address().as_str(), "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
        let shown = format!("{key:?}");
        assert!(!shown.contains("ac0974bec39a17e36ba4a6b4d238ff944bacb478"), "{shown}");
        assert!(RelayerKey::parse("0x1234").is_err());
        assert!(RelayerKey::parse(&"0".repeat(64)).is_err(), "zero is no key");
        assert!(RelayerKey::parse(&"g".repeat(64)).is_err());
    }

    #[test]
    fn rlp_encodes_strings_integers_and_lists_as_the_yellow_paper_says() {
        let enc = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            f(&mut out);
            out
        };
        assert_eq!(enc(&|o| rlp_uint(o, &0u64.to_be_bytes())), vec![0x80]);
        assert_eq!(enc(&|o| rlp_uint(o, &15u64.to_be_bytes())), vec![0x0f]);
        assert_eq!(enc(&|o| rlp_uint(o, &1024u64.to_be_bytes())), vec![0x82, 0x04, 0x00]);
        assert_eq!(enc(&|o| rlp_bytes(o, b"dog")), vec![0x83, b'd', b'o', b'g']);
        let long = [0xaa; 56];
        let e = enc(&|o| rlp_bytes(o, &long));
        assert_eq!(&e[..2], &[0xb8, 56]);
        assert_eq!(rlp_list(&[]), vec![0xc0]);
        let mut cat_dog = Vec::new();
        rlp_bytes(&mut cat_dog, b"cat");
        rlp_bytes(&mut cat_dog, b"dog");
        assert_eq!(rlp_list(&cat_dog), vec![0xc8, 0x83, b'c', b'a', b't', 0x83, b'd', b'o', b'g']);
    }

    #[test]
    fn a_signature_recovers_to_its_signer_and_a_changed_message_to_someone_else() {
        let key = RelayerKey::parse(ANVIL_KEY).unwrap();
        let terms = AuthorizationTerms {
            token_contract: WalletAddress::parse("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359").unwrap(),
            from: key.address().clone(),
            to: WalletAddress::parse("0x52908400098527886E0F7030069857D2E4169EE7").unwrap(),
            value: Decimal6::parse("12.5").unwrap(),
            valid_after: 0,
            valid_before: 1_800_000_000,
            nonce: AuthorizationNonce([9; 32]),
        };
        let domain = TokenDomain {
            name: "USD Coin".into(),
            version: "2".into(),
            chain_id: 137,
            verifying_contract: terms.token_contract.clone(),
        };
        let digest = authorization_digest(&domain, &terms).unwrap();
        let (sig, id) = key.signing_key().sign_prehash_recoverable(digest.as_slice());
        let (r, s) = sig.split_bytes();
        let signature = Signature { r: r.into(), s: s.into(), v: 27 + u8::from(id.is_y_odd()) };
        assert_eq!(recover(&digest, &signature).as_ref(), Some(key.address()));
        let other = AuthorizationTerms { value: Decimal6::parse("1250").unwrap(), ..terms.clone() };
        let changed = authorization_digest(&domain, &other).unwrap();
        assert_ne!(recover(&changed, &signature).as_ref(), Some(key.address()));
        let data = authorized_calldata(&SignedAuthorization { terms, signature }).unwrap();
        assert_eq!(data.len(), 4 + 9 * 32);
        assert_eq!(&data[..4], &[0xe3, 0xee, 0x16, 0x0e]);
    }

    #[test]
    fn the_relayers_signatures_have_a_low_s_as_nodes_require() {
        let key = RelayerKey::parse(ANVIL_KEY).unwrap();
        for i in 0u8..64 {
            let (sig, id) = key.signing_key().sign_prehash_recoverable(keccak256([i]).as_slice());
            let mut bytes = [0u8; 65];
            bytes[..32].copy_from_slice(&sig.r().to_bytes());
            bytes[32..64].copy_from_slice(&sig.s().to_bytes());
            bytes[64] = 27 + u8::from(id.is_y_odd());
            let parsed = Signature::from_bytes(&bytes).expect("low s");
            assert_eq!(recover(&keccak256([i]), &parsed).as_ref(), Some(key.address()));
        }
    }

    #[test]
    fn a_transaction_is_type_2_and_its_hash_is_of_its_signed_bytes() {
        let key = RelayerKey::parse(ANVIL_KEY).unwrap();
        let tx = Eip1559 {
            chain_id: 137,
            nonce: 3,
            fees: Fees { max_fee_per_gas: 100, max_priority_fee_per_gas: 2 },
            gas_limit: 90_000,
            to: Address::repeat_byte(0x11),
            data: vec![0xe3, 0xee],
        };
        let (raw, hash) = tx.sign(key.signing_key()).unwrap();
        assert_eq!(raw[0], 0x02);
        assert_eq!(hash, keccak256(&raw));
        // Deterministic (RFC 6979): the same transaction signs to the same bytes.
        assert_eq!(tx.sign(key.signing_key()).unwrap().0, raw);
    }
}
