-- H4: a transaction hash is unique only among credited payments. Test-mode hashes are
-- simulated, so each merchant has its own; a live hash can be credited once in the whole
-- service (verification also checks that the transfer went to the merchant's own wallet).
DROP INDEX payments_tx_once;
CREATE UNIQUE INDEX payments_tx_once_live ON payments (chain_id, transaction_hash)
    WHERE mode = 'live' AND status IN ('confirmed', 'underpaid', 'overpaid');
CREATE UNIQUE INDEX payments_tx_once_test ON payments (merchant_id, chain_id, transaction_hash)
    WHERE mode = 'test' AND status IN ('confirmed', 'underpaid', 'overpaid');

-- M1: publishable and secret keys have separate idempotency namespaces.
ALTER TABLE idempotency_keys
    ADD COLUMN key_type text NOT NULL DEFAULT 'secret' CHECK (key_type IN ('secret', 'publishable'));
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (merchant_id, mode, key_type, key);
ALTER TABLE idempotency_keys ALTER COLUMN key_type DROP DEFAULT;

-- H3: due work is judged by each merchant's own clock (one merchant's test clock far ahead
-- touches only its own rows), and an invoice whose due work keeps failing backs off.
CREATE INDEX checkout_sessions_expiring_test ON checkout_sessions (merchant_id, expires_at)
    WHERE status = 'pending' AND mode = 'test';
CREATE INDEX invoices_due_test ON invoices (merchant_id, due_at)
    WHERE past_due_at IS NULL AND due_at IS NOT NULL AND collection_state IN ('open', 'partially_paid')
      AND mode = 'test';
CREATE TABLE invoice_due_failures (
    invoice_id      text PRIMARY KEY REFERENCES invoices (id),
    failures        integer NOT NULL,
    last_failed_at  timestamptz NOT NULL,
    last_error      text NOT NULL
);
