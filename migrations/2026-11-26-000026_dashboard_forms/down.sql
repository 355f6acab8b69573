DELETE FROM idempotency_keys WHERE key_type = 'dashboard';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_key_type_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_key_type_check
    CHECK (key_type IN ('secret', 'publishable', 'public'));
