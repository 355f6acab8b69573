-- Exports of a merchant's records as CSV files, and the files themselves in chunks (so one
-- PostgreSQL is all a deployment needs, and every replica can serve a file).
CREATE TABLE exports (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode text NOT NULL CHECK (mode IN ('test', 'live')),
    export_type text NOT NULL CHECK (export_type IN ('invoices', 'payments')),
    schema_name text NOT NULL,
    range_from timestamptz NOT NULL,
    range_to timestamptz NOT NULL CHECK (range_to > range_from),
    filter_collection_state text,
    filter_payment_link text,
    filter_payment_status text,
    status text NOT NULL CHECK (status IN ('queued', 'running', 'ready', 'failed', 'cancelled', 'expired')),
    row_count bigint,
    byte_size bigint,
    failure_message text,
    created_at timestamptz NOT NULL,
    ready_at timestamptz,
    expires_at timestamptz,
    lease_until timestamptz,
    CHECK ((status = 'ready') <= (ready_at IS NOT NULL AND expires_at IS NOT NULL))
);
CREATE INDEX exports_list ON exports (merchant_id, mode, seq);
CREATE INDEX exports_waiting ON exports (seq) WHERE status IN ('queued', 'running');
CREATE INDEX exports_ready ON exports (expires_at) WHERE status = 'ready';

CREATE TABLE export_chunks (
    export_id text NOT NULL REFERENCES exports (id) ON DELETE CASCADE,
    seq integer NOT NULL CHECK (seq >= 0),
    bytes bytea NOT NULL,
    PRIMARY KEY (export_id, seq)
);

-- Payments read in the order of their detection (the payments export).
CREATE INDEX payments_export ON payments (merchant_id, mode, detected_at, id);
