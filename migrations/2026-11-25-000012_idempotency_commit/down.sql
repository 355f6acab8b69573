UPDATE idempotency_keys SET state = 'in_progress' WHERE state = 'committed';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check
    CHECK (state IN ('in_progress', 'completed'));
ALTER TABLE idempotency_keys DROP COLUMN committed;
