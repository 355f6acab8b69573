UPDATE payments SET evidence = 'bound_wallet' WHERE evidence = 'authorization';
ALTER TABLE payments DROP CONSTRAINT payments_evidence_check;
ALTER TABLE payments ADD CONSTRAINT payments_evidence_check
    CHECK (evidence IN ('bound_wallet', 'unique_amount', 'reported_hash', 'amount', 'manual'));
ALTER TABLE deferred_transfers DROP COLUMN authorization_nonce;
DROP TABLE checkout_authorizations;
