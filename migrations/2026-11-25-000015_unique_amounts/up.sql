-- Unique amounts (a merchant's live setting): each new live checkout asks a few base units more
-- than it collects, so that no two open checkouts of a wallet ask the same amount.
ALTER TABLE merchants ADD COLUMN live_unique_amounts boolean NOT NULL DEFAULT false;
ALTER TABLE invoices ADD COLUMN unique_amounts boolean NOT NULL DEFAULT false;
ALTER TABLE checkout_sessions ADD COLUMN amount_offset numeric(38, 6) NOT NULL DEFAULT 0
    CHECK (amount_offset >= 0 AND amount_offset < 0.001);
-- The rule itself: two pending live unique-amount checkouts of a wallet and token never ask the
-- same amount (a creation that drew a taken amount is refused and decides again).
CREATE UNIQUE INDEX checkout_sessions_unique_amount
    ON checkout_sessions (settlement_wallet, token_contract, amount_due)
    WHERE mode = 'live' AND status = 'pending' AND amount_offset > 0;
