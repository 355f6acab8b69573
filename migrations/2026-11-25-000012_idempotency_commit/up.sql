-- A keyed request's work marks its key committed in the same transaction ('committed', with
-- what it created or changed), so a retry after a crash between the work and the recording of
-- its answer answers again instead of running the work twice.
ALTER TABLE idempotency_keys ADD COLUMN committed text;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check
    CHECK (state IN ('in_progress', 'committed', 'completed'));
