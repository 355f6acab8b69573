//! The steps of a checkout the hosted page reports, and the funnel they add up to.

use chrono::{DateTime, Utc};

use crate::ids::CheckoutSessionId;
use crate::merchant::model::WalletAddress;

/// The longest detail a step may carry (an error's text), in bytes.
pub const MAX_DETAIL_BYTES: usize = 200;

/// A step of a customer through a checkout page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// The page was shown.
    Viewed,
    /// A browser wallet was connected (with its address: the wallet payment attempt records it).
    WalletConnected,
    /// The wallet sent the transfer.
    TransferSent,
    /// The page showed the customer an error.
    ErrorShown,
}

impl Step {
    /// Every step, in the funnel's order.
    pub const ALL: [Step; 4] = [Step::Viewed, Step::WalletConnected, Step::TransferSent, Step::ErrorShown];

    /// The step as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Viewed => "viewed",
            Step::WalletConnected => "wallet_connected",
            Step::TransferSent => "transfer_sent",
            Step::ErrorShown => "error_shown",
        }
    }

    /// Reads [`Step::as_str`]'s form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// One reported step of one checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepRecord {
    /// The checkout (its merchant and mode follow from it).
    pub session_id: CheckoutSessionId,
    /// What happened.
    pub step: Step,
    /// The customer's wallet, when a wallet was connected.
    pub wallet: Option<WalletAddress>,
    /// A short text (an error's message), at most [`MAX_DETAIL_BYTES`].
    pub detail: Option<String>,
    /// When it was reported (the real time).
    pub at: DateTime<Utc>,
}

/// How many checkouts reached each step in a period: the merchant's conversion funnel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Funnel {
    /// Checkouts whose page was viewed.
    pub viewed: u64,
    /// Checkouts where a wallet was connected.
    pub wallet_connected: u64,
    /// Checkouts whose wallet sent a transfer.
    pub transfer_sent: u64,
    /// Checkouts that showed an error.
    pub error_shown: u64,
}

impl Funnel {
    /// The count of `step`.
    pub fn of(&self, step: Step) -> u64 {
        match step {
            Step::Viewed => self.viewed,
            Step::WalletConnected => self.wallet_connected,
            Step::TransferSent => self.transfer_sent,
            Step::ErrorShown => self.error_shown,
        }
    }
}

/// A reported detail as it is kept: trimmed, control characters dropped, cut to
/// [`MAX_DETAIL_BYTES`] on a character boundary; `None` when nothing is left.
pub fn detail(text: &str) -> Option<String> {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    let mut end = clean.len().min(MAX_DETAIL_BYTES);
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    let kept = clean[..end].trim_end();
    (!kept.is_empty()).then(|| kept.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip() {
        for step in Step::ALL {
            assert_eq!(Step::parse(step.as_str()), Some(step));
        }
        assert_eq!(Step::parse("paid"), None);
    }

    #[test]
    fn details_are_short_clean_text() {
        assert_eq!(detail("  user rejected\n the request "), Some("user rejected the request".into()));
        assert_eq!(detail("\u{7}\n "), None);
        let long = "é".repeat(150);
        let kept = detail(&long).unwrap();
        assert!(kept.len() <= MAX_DETAIL_BYTES && kept.chars().all(|c| c == 'é'));
    }
}
