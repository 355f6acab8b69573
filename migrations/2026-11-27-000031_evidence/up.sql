-- Attribution by evidence (docs/api.md, "Live verification"): bindings are evidence, never a
-- restriction; a payment says what named its checkout; a transfer held for a person lists its
-- candidate checkouts; an unattributed record leaves the open list once its transfer is
-- credited by any path.

-- Every wallet a wallet payment attempt bound to a checkout, kept for the checkout's life.
CREATE TABLE checkout_bindings (
    checkout_session_id  text NOT NULL REFERENCES checkout_sessions (id),
    wallet               text NOT NULL,
    bound_at             timestamptz NOT NULL,
    PRIMARY KEY (checkout_session_id, wallet)
);
CREATE INDEX checkout_bindings_wallet ON checkout_bindings (wallet);
-- The one wallet bound before: when it was bound is not known, the checkout's creation is the
-- earliest it could have been.
INSERT INTO checkout_bindings (checkout_session_id, wallet, bound_at)
    SELECT id, payer_wallet, created_at FROM checkout_sessions WHERE payer_wallet IS NOT NULL;
ALTER TABLE checkout_sessions DROP COLUMN payer_wallet;

-- Attribution at a block's time also weighs a closed invoice's cancelled checkouts (the late
-- payment the after_void and after_uncollectible events report), and reads only the checkouts
-- a transfer's amount, sender or reports may name, each through an index of its own: the
-- amount a checkout asks, the remainder of a partly paid invoice, the wallets bound.
DROP INDEX checkout_sessions_open_live;
CREATE INDEX checkout_sessions_open_live ON checkout_sessions (settlement_wallet, token_contract, expires_at)
    WHERE mode = 'live' AND status IN ('pending', 'expired', 'cancelled');
CREATE INDEX checkout_sessions_asking_live ON checkout_sessions (settlement_wallet, token_contract, amount_due)
    WHERE mode = 'live' AND status IN ('pending', 'expired', 'cancelled');
CREATE INDEX invoices_remaining_live ON invoices ((total - customer_amount_paid))
    WHERE mode = 'live' AND customer_amount_paid > 0;

-- What named a payment's checkout, and its block's time.
ALTER TABLE payments ADD COLUMN evidence text
    CHECK (evidence IN ('bound_wallet', 'unique_amount', 'reported_hash', 'amount', 'manual'));
ALTER TABLE payments ADD COLUMN block_time timestamptz;
ALTER TABLE payments DROP CONSTRAINT payments_failure_reason_check;
ALTER TABLE payments ADD CONSTRAINT payments_failure_reason_check
    CHECK (failure_reason IN ('transaction_not_found', 'transaction_reverted', 'wrong_chain', 'wrong_token_contract',
                              'wrong_recipient', 'checkout_expired', 'zero_amount', 'duplicate_transaction',
                              'transfer_before_checkout', 'amount_out_of_range', 'attributed_to_another_checkout',
                              'wrong_payer', 'disputed'));
-- A transaction's payments: the reports of a hash, which attribution weighs, and what
-- diagnostics tell of a transfer.
CREATE INDEX payments_transaction ON payments (transaction_hash);

-- Held transfers and what became of each record.
ALTER TABLE unattributed_transfers DROP CONSTRAINT unattributed_transfers_reason_check;
ALTER TABLE unattributed_transfers ADD CONSTRAINT unattributed_transfers_reason_check
    CHECK (reason IN ('no_open_checkout', 'no_matching_amount', 'several_matching_checkouts', 'amount_out_of_range',
                      'verification_failed', 'disputed'));
ALTER TABLE unattributed_transfers ADD COLUMN candidates text[] NOT NULL DEFAULT '{}';
ALTER TABLE unattributed_transfers ADD COLUMN status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'attributed'));
ALTER TABLE unattributed_transfers ADD COLUMN payment_id text;
ALTER TABLE unattributed_transfers ADD COLUMN attributed_at timestamptz;
CREATE INDEX unattributed_transfers_log ON unattributed_transfers (chain_id, transaction_hash, log_index);
CREATE INDEX unattributed_transfers_open ON unattributed_transfers (merchant_id, mode, seq) WHERE status = 'open';

-- Records whose transfer was credited since (a report after the follower recorded it).
UPDATE unattributed_transfers u
   SET status = 'attributed', attributed_at = now(),
       payment_id = (SELECT CASE WHEN p.merchant_id = u.merchant_id AND p.mode = u.mode THEN p.id END
                       FROM credited_transfer_logs c JOIN payments p ON p.id = c.payment_id
                      WHERE c.chain_id = u.chain_id AND c.transaction_hash = u.transaction_hash
                        AND c.log_index = u.log_index)
 WHERE EXISTS (SELECT 1 FROM credited_transfer_logs c
                WHERE c.chain_id = u.chain_id AND c.transaction_hash = u.transaction_hash AND c.log_index = u.log_index);

-- Crediting a payment marks its logs' unattributed records attributed, in its transaction,
-- whatever statement credits it (a report, the follower, a person).
CREATE OR REPLACE FUNCTION payments_credit_logs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.mode <> 'live' OR NEW.status NOT IN ('confirmed', 'underpaid', 'overpaid') THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.status IN ('confirmed', 'underpaid', 'overpaid') THEN
        RETURN NULL;
    END IF;
    IF NEW.logs IS NULL OR cardinality(NEW.logs) = 0 THEN
        RAISE EXCEPTION 'live payment % is credited without transfer logs', NEW.id USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM payments p
               WHERE p.mode = 'live' AND p.chain_id = NEW.chain_id AND p.transaction_hash = NEW.transaction_hash
                 AND p.logs IS NULL AND p.id <> NEW.id AND p.status IN ('confirmed', 'underpaid', 'overpaid')) THEN
        RAISE EXCEPTION 'transaction % was credited whole before', NEW.transaction_hash
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'credited_transfer_logs_once';
    END IF;
    INSERT INTO credited_transfer_logs (chain_id, transaction_hash, log_index, payment_id)
        SELECT NEW.chain_id, NEW.transaction_hash, l, NEW.id FROM unnest(NEW.logs) AS l;
    UPDATE unattributed_transfers u
       SET status = 'attributed', attributed_at = now(),
           payment_id = CASE WHEN u.merchant_id = NEW.merchant_id AND u.mode = NEW.mode THEN NEW.id END
     WHERE u.chain_id = NEW.chain_id AND u.transaction_hash = NEW.transaction_hash
       AND u.log_index = ANY (NEW.logs) AND u.status = 'open';
    RETURN NULL;
END $$;

-- The follower never skips a block: a range an endpoint could not confirm complete holds the
-- cursor for a while (since `held_since`), and every range is read a second time later.
ALTER TABLE chain_cursors ADD COLUMN held_since timestamptz;
CREATE TABLE chain_rechecks (
    chain_id     bigint NOT NULL,
    from_block   bigint NOT NULL CHECK (from_block >= 0),
    to_block     bigint NOT NULL CHECK (to_block >= from_block),
    due_at       timestamptz NOT NULL,
    lease_until  timestamptz,
    PRIMARY KEY (chain_id, from_block)
);
CREATE INDEX chain_rechecks_due ON chain_rechecks (chain_id, due_at);

-- Reconciliation runs complete whatever amount a log claims (up to 2^256 - 1 base units), and
-- run once a day on their own for every live merchant (one daily run per merchant and day).
ALTER TABLE reconciliation_items ALTER COLUMN amount_onchain TYPE numeric;
ALTER TABLE reconciliation_runs ADD COLUMN daily boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX reconciliation_runs_daily ON reconciliation_runs (merchant_id, mode, range_from) WHERE daily;
CREATE INDEX reconciliation_runs_daily_from ON reconciliation_runs (range_from) WHERE daily;
