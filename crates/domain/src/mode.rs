//! Modes and the merchant-and-mode scope that every stored record belongs to.

use std::fmt;

use crate::ids::MerchantId;

/// Test mode is simulated end to end; live mode settles real tokens on Polygon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Simulated: no wallet, no chain; test helpers and the test clock work.
    Test,
    /// Real transfers on Polygon, verified onchain.
    Live,
}

impl Mode {
    /// Both modes.
    pub const ALL: [Mode; 2] = [Mode::Test, Mode::Live];

    /// The mode as the API writes it: `test` or `live`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Test => "test",
            Mode::Live => "live",
        }
    }

    /// Reads `test` or `live`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "test" => Some(Mode::Test),
            "live" => Some(Mode::Live),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The merchant and mode a request acts for. It comes only from the API key (or an operator
/// command), never from request input, and every store call takes one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The merchant the data belongs to.
    pub merchant_id: MerchantId,
    /// The mode it belongs to.
    pub mode: Mode,
}

impl Scope {
    /// The scope of `merchant_id` in `mode`.
    pub fn new(merchant_id: MerchantId, mode: Mode) -> Self {
        Self { merchant_id, mode }
    }
}
