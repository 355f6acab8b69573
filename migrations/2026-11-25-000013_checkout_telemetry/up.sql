-- The steps the hosted checkout page reports per checkout (and the payer's wallet when one
-- connects): the merchant's conversion funnel.
CREATE TABLE checkout_telemetry (
    seq                  bigserial PRIMARY KEY,
    merchant_id          text NOT NULL REFERENCES merchants (id),
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    checkout_session_id  text NOT NULL,
    step                 text NOT NULL CONSTRAINT checkout_telemetry_step_check
                         CHECK (step IN ('viewed', 'wallet_connected', 'transfer_sent', 'error_shown')),
    wallet_address       text,
    detail               text CHECK (octet_length(detail) <= 200),
    created_at           timestamptz NOT NULL
);
CREATE INDEX checkout_telemetry_scope_time ON checkout_telemetry (merchant_id, mode, created_at);
CREATE INDEX checkout_telemetry_session ON checkout_telemetry (checkout_session_id);
