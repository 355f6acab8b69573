DROP INDEX reconciliation_runs_daily_from;
DROP INDEX reconciliation_runs_daily;
ALTER TABLE reconciliation_runs DROP COLUMN daily;
DELETE FROM reconciliation_items WHERE amount_onchain >= 10 ^ 32;
ALTER TABLE reconciliation_items ALTER COLUMN amount_onchain TYPE numeric(38, 6);

DROP TABLE chain_rechecks;
ALTER TABLE chain_cursors DROP COLUMN held_since;

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
    RETURN NULL;
END $$;

DROP INDEX unattributed_transfers_open;
DROP INDEX unattributed_transfers_log;
ALTER TABLE unattributed_transfers DROP COLUMN attributed_at;
ALTER TABLE unattributed_transfers DROP COLUMN payment_id;
ALTER TABLE unattributed_transfers DROP COLUMN status;
ALTER TABLE unattributed_transfers DROP COLUMN candidates;
UPDATE unattributed_transfers SET reason = 'several_matching_checkouts' WHERE reason = 'disputed';
ALTER TABLE unattributed_transfers DROP CONSTRAINT unattributed_transfers_reason_check;
ALTER TABLE unattributed_transfers ADD CONSTRAINT unattributed_transfers_reason_check
    CHECK (reason IN ('no_open_checkout', 'no_matching_amount', 'several_matching_checkouts', 'amount_out_of_range',
                      'verification_failed'));

DROP INDEX payments_transaction;
UPDATE payments SET failure_reason = 'attributed_to_another_checkout' WHERE failure_reason = 'disputed';
ALTER TABLE payments DROP CONSTRAINT payments_failure_reason_check;
ALTER TABLE payments ADD CONSTRAINT payments_failure_reason_check
    CHECK (failure_reason IN ('transaction_not_found', 'transaction_reverted', 'wrong_chain', 'wrong_token_contract',
                              'wrong_recipient', 'checkout_expired', 'zero_amount', 'duplicate_transaction',
                              'transfer_before_checkout', 'amount_out_of_range', 'attributed_to_another_checkout',
                              'wrong_payer'));
ALTER TABLE payments DROP COLUMN block_time;
ALTER TABLE payments DROP COLUMN evidence;

DROP INDEX invoices_remaining_live;
DROP INDEX checkout_sessions_asking_live;
DROP INDEX checkout_sessions_open_live;
CREATE INDEX checkout_sessions_open_live ON checkout_sessions (settlement_wallet, token_contract, expires_at)
    WHERE mode = 'live' AND status IN ('pending', 'expired');

ALTER TABLE checkout_sessions ADD COLUMN payer_wallet text;
UPDATE checkout_sessions s SET payer_wallet = (SELECT b.wallet FROM checkout_bindings b
                                                WHERE b.checkout_session_id = s.id ORDER BY b.bound_at DESC LIMIT 1);
DROP TABLE checkout_bindings;
