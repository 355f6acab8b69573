-- Attribution by construction (EIP-3009): the nonce the service derives for each wallet payment
-- attempt of a USDC checkout, kept with the attempt's binding. A transfer whose authorization
-- carries one pays that checkout, whatever else is claimed.
CREATE TABLE checkout_authorizations (
    nonce                bytea PRIMARY KEY CHECK (length(nonce) = 32),
    checkout_session_id  text NOT NULL,
    wallet               text NOT NULL,
    created_at           timestamptz NOT NULL,
    FOREIGN KEY (checkout_session_id, wallet) REFERENCES checkout_bindings (checkout_session_id, wallet)
        ON DELETE CASCADE
);
CREATE INDEX checkout_authorizations_session ON checkout_authorizations (checkout_session_id);

-- A deferred transfer keeps its authorization's nonce for the pass that decides it.
ALTER TABLE deferred_transfers ADD COLUMN authorization_nonce bytea CHECK (length(authorization_nonce) = 32);

-- The strongest evidence a payment can carry.
ALTER TABLE payments DROP CONSTRAINT payments_evidence_check;
ALTER TABLE payments ADD CONSTRAINT payments_evidence_check
    CHECK (evidence IN ('authorization', 'bound_wallet', 'unique_amount', 'reported_hash', 'amount', 'manual'));
