//! What a customer's browser wallet is asked to sign for a checkout: the ERC-20 `transfer` of
//! the exact amount due to the merchant's settlement wallet, on the checkout's chain.

use chrono::{DateTime, Utc};

use crate::ids::CheckoutSessionId;
use crate::merchant::model::{Token, WalletAddress};
use crate::money::Amount;

/// The selector of ERC-20 `transfer(address,uint256)`.
pub const TRANSFER_SELECTOR: &str = "0xa9059cbb";

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
        };
        assert_eq!(t.units(), "12500000");
        assert_eq!(t.chain_hex(), "0x89");
        let data = t.calldata();
        assert_eq!(data.len(), 2 + 8 + 64 + 64);
        assert!(data.starts_with("0xa9059cbb00000000000000000000000052908400098527886e0f7030069857d2e4169ee7"));
        assert!(data.ends_with(&format!("{:064x}", 12_500_000u128)));
    }
}
