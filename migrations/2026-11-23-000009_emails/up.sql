-- The email outbox: written in the transaction of the invoice change that asks for an email,
-- claimed by the worker with a lease, updated after each attempt (with the invoice's activity).
CREATE TABLE emails (
    id               text PRIMARY KEY,
    merchant_id      text NOT NULL REFERENCES merchants (id),
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    invoice_id       text NOT NULL REFERENCES invoices (id),
    kind             text NOT NULL CHECK (kind IN ('invoice', 'reminder')),
    -- What asked for it: 'request:<id>' or 'schedule:<slot>'; a slot is sent once.
    slot             text NOT NULL,
    recipient        text NOT NULL,
    status           text NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'skipped')),
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    next_attempt_at  timestamptz NOT NULL,
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL,
    sent_at          timestamptz,
    UNIQUE (invoice_id, kind, slot)
);
CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status = 'queued';
CREATE INDEX emails_invoice ON emails (invoice_id, created_at);
