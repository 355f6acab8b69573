ALTER TABLE unattributed_transfers DROP CONSTRAINT unattributed_transfers_reason_check;
DELETE FROM unattributed_transfers WHERE reason IN ('amount_out_of_range', 'verification_failed');
ALTER TABLE unattributed_transfers ADD CONSTRAINT unattributed_transfers_reason_check
    CHECK (reason IN ('no_open_checkout', 'no_matching_amount', 'several_matching_checkouts'));
ALTER TABLE unattributed_transfers DROP COLUMN block_time;
ALTER TABLE unattributed_transfers ALTER COLUMN amount TYPE numeric(38, 6);
DROP TABLE deferred_transfers;
DROP INDEX checkout_sessions_open_live;
CREATE INDEX checkout_sessions_open_live ON checkout_sessions (settlement_wallet, token_contract)
    WHERE status = 'pending' AND mode = 'live';
DROP TRIGGER payments_credit_logs ON payments;
DROP FUNCTION payments_credit_logs();
DROP TABLE credited_transfer_logs;
CREATE UNIQUE INDEX payments_tx_once_live ON payments (chain_id, transaction_hash)
    WHERE mode = 'live' AND status IN ('confirmed', 'underpaid', 'overpaid');
UPDATE payments SET failure_reason = 'wrong_recipient'
    WHERE failure_reason IN ('transfer_before_checkout', 'amount_out_of_range', 'attributed_to_another_checkout',
                             'wrong_payer');
ALTER TABLE checkout_sessions DROP COLUMN payer_wallet;
ALTER TABLE payments DROP CONSTRAINT payments_failure_reason_check;
ALTER TABLE payments ADD CONSTRAINT payments_failure_reason_check
    CHECK (failure_reason IN ('transaction_not_found', 'transaction_reverted', 'wrong_chain', 'wrong_token_contract',
                              'wrong_recipient', 'checkout_expired', 'zero_amount', 'duplicate_transaction'));
ALTER TABLE payments DROP COLUMN missing_since;
ALTER TABLE payments DROP COLUMN logs;
ALTER TABLE payments DROP COLUMN claimed_log;
