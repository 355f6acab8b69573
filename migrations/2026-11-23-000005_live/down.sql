DELETE FROM events WHERE type = 'payment.unattributed';
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type IN ('invoice.issued', 'invoice.paid', 'invoice.partially_paid', 'invoice.past_due', 'invoice.overpaid',
                    'invoice.voided', 'invoice.uncollectible', 'invoice.refund_recorded',
                    'invoice.payment_received_after_void', 'invoice.payment_received_after_uncollectible',
                    'invoice.expired', 'payment_link.completed', 'payment_link.expired', 'payment.failed',
                    'payment.underpaid', 'payment.overpaid'));
DROP TABLE unattributed_transfers;
DROP TABLE chain_cursors;
DROP INDEX payments_live_tx;
DROP INDEX payments_in_flight;
ALTER TABLE payments DROP COLUMN next_check_at;
ALTER TABLE payments DROP COLUMN diagnostic;
ALTER TABLE payments DROP COLUMN block_hash;
ALTER TABLE payments DROP COLUMN block_number;
DROP INDEX checkout_sessions_open_live;
ALTER TABLE checkout_sessions DROP COLUMN token_contract;
ALTER TABLE checkout_sessions DROP COLUMN chain_id;
