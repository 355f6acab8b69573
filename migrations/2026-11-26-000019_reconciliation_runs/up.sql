-- Reconciliation runs: a live period of a merchant's wallet read again from the chain, and
-- each transfer log and credited payment matched one to one (the items, numbered by `line`).
CREATE TABLE reconciliation_runs (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode text NOT NULL CHECK (mode IN ('test', 'live')),
    range_from timestamptz NOT NULL,
    range_to timestamptz NOT NULL CHECK (range_to > range_from),
    status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    from_block bigint,
    to_block bigint,
    final_block bigint,
    complete boolean NOT NULL DEFAULT false,
    wallets text[] NOT NULL DEFAULT '{}',
    credited_elsewhere bigint NOT NULL DEFAULT 0,
    failure_message text,
    created_at timestamptz NOT NULL,
    completed_at timestamptz,
    lease_until timestamptz
);
CREATE INDEX reconciliation_runs_list ON reconciliation_runs (merchant_id, mode, seq);
CREATE INDEX reconciliation_runs_waiting ON reconciliation_runs (seq) WHERE status IN ('queued', 'running');

CREATE TABLE reconciliation_items (
    run_id text NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    line bigint NOT NULL CHECK (line > 0),
    outcome text NOT NULL CHECK (outcome IN ('matched', 'onchain_not_credited', 'credited_not_onchain')),
    currency text NOT NULL,
    transaction_hash text NOT NULL,
    log_index bigint,
    block_number bigint,
    block_time timestamptz,
    from_address text,
    to_address text NOT NULL,
    amount_onchain numeric(38, 6),
    amount_credited numeric(38, 6),
    payment_id text,
    invoice_id text,
    unattributed_transfer_id text,
    detail text NOT NULL,
    PRIMARY KEY (run_id, line)
);

-- Credited payments read by block range (a run's books).
CREATE INDEX payments_reconciliation ON payments (merchant_id, mode, block_number)
    WHERE status IN ('confirmed', 'underpaid', 'overpaid');

-- Exports of the new types: invoice lines, payment links, refund references, webhook
-- deliveries, unattributed transfers and a reconciliation run's items (named by filter_run).
ALTER TABLE exports DROP CONSTRAINT exports_export_type_check;
ALTER TABLE exports ADD CONSTRAINT exports_export_type_check CHECK (export_type IN
    ('invoices', 'invoice_lines', 'payments', 'payment_links', 'refund_references', 'webhook_deliveries',
     'unattributed_transfers', 'reconciliation'));
ALTER TABLE exports ADD COLUMN filter_run text, ADD COLUMN filter_outcome text;
-- Unattributed transfers read in the order of their detection (the unattributed export).
CREATE INDEX unattributed_transfers_export ON unattributed_transfers (merchant_id, mode, detected_at);
