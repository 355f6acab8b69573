-- The dashboard's forms submit once: their keys live apart from the API's and the public pages'.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_key_type_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_key_type_check
    CHECK (key_type IN ('secret', 'publishable', 'public', 'dashboard'));
