DELETE FROM idempotency_keys WHERE key_type = 'publishable';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (merchant_id, mode, key);
ALTER TABLE idempotency_keys DROP COLUMN key_type;
DROP INDEX payments_tx_once_test;
DROP INDEX payments_tx_once_live;
CREATE UNIQUE INDEX payments_tx_once ON payments (chain_id, transaction_hash) WHERE status <> 'duplicate';
