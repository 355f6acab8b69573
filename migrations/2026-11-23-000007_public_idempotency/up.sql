-- Public submissions (payment-link and invoice checkouts) are idempotent too: their keys are
-- a namespace of their own.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_key_type_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_key_type_check
    CHECK (key_type IN ('secret', 'publishable', 'public'));
