-- Onchain attribution: a transfer log (transaction hash, log index, recipient) is the unit of
-- attribution. A live payment records the one log it claims (a transfer the follower
-- attributed) and the logs verification counted; each log is credited once in the whole
-- service, so one transaction may pay several merchants (or several checkouts) in its logs.
ALTER TABLE payments ADD COLUMN claimed_log bigint CHECK (claimed_log >= 0);
ALTER TABLE payments ADD COLUMN logs bigint[];
-- Since when a transaction reorganised away is missing (the not-found wait restarts there).
ALTER TABLE payments ADD COLUMN missing_since timestamptz;
ALTER TABLE payments DROP CONSTRAINT payments_failure_reason_check;
ALTER TABLE payments ADD CONSTRAINT payments_failure_reason_check
    CHECK (failure_reason IN ('transaction_not_found', 'transaction_reverted', 'wrong_chain', 'wrong_token_contract',
                              'wrong_recipient', 'checkout_expired', 'zero_amount', 'duplicate_transaction',
                              'transfer_before_checkout', 'amount_out_of_range', 'attributed_to_another_checkout',
                              'wrong_payer'));

-- The wallet the customer connected on the hosted page: only its transfers pay the checkout.
ALTER TABLE checkout_sessions ADD COLUMN payer_wallet text;

-- The logs credited live payments counted: the primary key is the once-only rule (a second
-- credit of a log violates it, and the store answers the payment as a duplicate).
CREATE TABLE credited_transfer_logs (
    chain_id          bigint NOT NULL,
    transaction_hash  text NOT NULL,
    log_index         bigint NOT NULL CHECK (log_index >= 0),
    payment_id        text NOT NULL REFERENCES payments (id),
    CONSTRAINT credited_transfer_logs_once PRIMARY KEY (chain_id, transaction_hash, log_index)
);

-- Written by the database in the transaction that credits a live payment, whatever statement
-- does it. Payments credited before logs were recorded (logs IS NULL) count for their whole
-- transaction, as they did.
CREATE FUNCTION payments_credit_logs() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END $$;
CREATE TRIGGER payments_credit_logs AFTER INSERT OR UPDATE OF status ON payments
    FOR EACH ROW EXECUTE FUNCTION payments_credit_logs();
DROP INDEX payments_tx_once_live;

-- Attribution at a block's time: checkouts pending, or expired after the block was mined.
DROP INDEX checkout_sessions_open_live;
CREATE INDEX checkout_sessions_open_live ON checkout_sessions (settlement_wallet, token_contract, expires_at)
    WHERE mode = 'live' AND status IN ('pending', 'expired');

-- Final transfer logs whose claim was in flight when the follower saw them: decided again on
-- later passes until they end credited or unattributed.
CREATE TABLE deferred_transfers (
    chain_id          bigint NOT NULL,
    transaction_hash  text NOT NULL,
    log_index         bigint NOT NULL CHECK (log_index >= 0),
    block_number      bigint NOT NULL,
    block_hash        text NOT NULL,
    block_time        timestamptz NOT NULL,
    token_contract    text NOT NULL,
    from_address      text NOT NULL,
    to_address        text NOT NULL,
    amount            numeric NOT NULL CHECK (amount >= 0),
    deferred_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chain_id, transaction_hash, log_index)
);

-- Unattributed transfers: any amount a log can carry (up to 2^256 - 1 base units), the block's
-- time, and the new reasons.
ALTER TABLE unattributed_transfers ALTER COLUMN amount TYPE numeric;
ALTER TABLE unattributed_transfers ADD COLUMN block_time timestamptz;
ALTER TABLE unattributed_transfers DROP CONSTRAINT unattributed_transfers_reason_check;
ALTER TABLE unattributed_transfers ADD CONSTRAINT unattributed_transfers_reason_check
    CHECK (reason IN ('no_open_checkout', 'no_matching_amount', 'several_matching_checkouts', 'amount_out_of_range',
                      'verification_failed'));
