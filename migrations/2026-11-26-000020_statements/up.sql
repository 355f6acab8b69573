-- Monthly statements: where a merchant (in one mode) wants them, and each month's statement
-- (its two exports, its download token, and the email with its links once both are ready).
CREATE TABLE statement_settings (
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    email        text NOT NULL,
    enabled_at   timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

CREATE TABLE statements (
    id                  text PRIMARY KEY,
    merchant_id         text NOT NULL REFERENCES merchants (id),
    mode                text NOT NULL CHECK (mode IN ('test', 'live')),
    month               date NOT NULL CHECK (extract(day FROM month) = 1),
    email               text NOT NULL,
    -- The capability in the download links (like an invoice's public token).
    token               text NOT NULL UNIQUE,
    invoices_export_id  text NOT NULL REFERENCES exports (id),
    payments_export_id  text NOT NULL REFERENCES exports (id),
    status              text NOT NULL CHECK (status IN ('exporting', 'mailed', 'failed')),
    failure             text,
    email_id            text,
    created_at          timestamptz NOT NULL,
    UNIQUE (merchant_id, mode, month)
);
CREATE INDEX statements_exporting ON statements (created_at) WHERE status = 'exporting';

-- The outbox holds statement emails too: each email is about one invoice or one statement.
ALTER TABLE emails ALTER COLUMN invoice_id DROP NOT NULL;
ALTER TABLE emails ADD COLUMN statement_id text REFERENCES statements (id);
ALTER TABLE emails ADD CONSTRAINT emails_about_one CHECK ((invoice_id IS NULL) <> (statement_id IS NULL));
ALTER TABLE emails DROP CONSTRAINT emails_kind_check;
ALTER TABLE emails ADD CONSTRAINT emails_kind_check CHECK (kind IN ('invoice', 'reminder', 'statement'));
CREATE UNIQUE INDEX emails_statement ON emails (statement_id) WHERE statement_id IS NOT NULL;
