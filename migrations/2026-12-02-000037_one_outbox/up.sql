-- One outbox for every email: an invoice's emails and reminders, a statement's, an account
-- link's and a notice's are rows of `emails`, claimed by one statement, retried by one policy
-- (the domain's `EMAIL_BACKOFF` and `MAX_ATTEMPTS`) and sent by one delivery loop. An account
-- link and a notice keep what they are (the link's purpose and token digest, the notice's
-- words); their email's state moves here. Only invoice and statement emails have a scope.
ALTER TABLE emails ALTER COLUMN merchant_id DROP NOT NULL;
ALTER TABLE emails ALTER COLUMN mode DROP NOT NULL;
ALTER TABLE emails ADD COLUMN account_link_id text REFERENCES account_links (id) ON DELETE CASCADE;
ALTER TABLE emails ADD COLUMN notice_id text REFERENCES notices (id) ON DELETE CASCADE;
ALTER TABLE emails DROP CONSTRAINT emails_about_one;
ALTER TABLE emails ADD CONSTRAINT emails_about_one
    CHECK (num_nonnulls(invoice_id, statement_id, account_link_id, notice_id) = 1);
ALTER TABLE emails ADD CONSTRAINT emails_scoped
    CHECK ((merchant_id IS NOT NULL AND mode IS NOT NULL) = (invoice_id IS NOT NULL OR statement_id IS NOT NULL)
       AND (merchant_id IS NULL) = (mode IS NULL));
ALTER TABLE emails DROP CONSTRAINT emails_kind_check;
ALTER TABLE emails ADD CONSTRAINT emails_kind_check
    CHECK (kind IN ('invoice', 'reminder', 'statement', 'account_link', 'notice'));
ALTER TABLE emails ADD CONSTRAINT emails_kind_about CHECK (
    CASE kind
        WHEN 'statement' THEN statement_id IS NOT NULL
        WHEN 'account_link' THEN account_link_id IS NOT NULL
        WHEN 'notice' THEN notice_id IS NOT NULL
        ELSE invoice_id IS NOT NULL
    END);
-- A link or a notice has one email (a retry is the same row).
CREATE UNIQUE INDEX emails_account_link ON emails (account_link_id) WHERE account_link_id IS NOT NULL;
CREATE UNIQUE INDEX emails_notice ON emails (notice_id) WHERE notice_id IS NOT NULL;

-- The emails of the links and notices written so far, as they stand (an email id is made from
-- its row's id: 22 base62 characters, like the service's).
CREATE FUNCTION stablepay_outbox_id(source text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'eml_' || substr(translate(encode(sha256(convert_to(source, 'UTF8')), 'base64'), '+/=', ''), 1, 22)
$$;
INSERT INTO emails (id, merchant_id, mode, invoice_id, statement_id, account_link_id, notice_id, kind, slot,
                    recipient, status, attempts, last_error, next_attempt_at, lease_until, created_at, sent_at)
SELECT stablepay_outbox_id(kind || ':' || about), NULL, NULL, NULL, NULL,
       CASE WHEN kind = 'account_link' THEN about END, CASE WHEN kind = 'notice' THEN about END,
       kind, slot, recipient, mail_status, mail_attempts, mail_last_error, mail_next_attempt_at, mail_lease_until,
       created_at, mail_sent_at
FROM (SELECT 'account_link' AS kind, id AS about, 'link:' || id AS slot, email AS recipient, mail_status, mail_attempts,
             mail_last_error, mail_next_attempt_at, mail_lease_until, created_at, mail_sent_at
      FROM account_links
      UNION ALL
      SELECT 'notice', id, 'notice:' || id, recipient, mail_status, mail_attempts, mail_last_error,
             mail_next_attempt_at, mail_lease_until, created_at, mail_sent_at
      FROM notices) mail;
DROP FUNCTION stablepay_outbox_id(text);

-- Their emails announce themselves as emails now.
DROP TRIGGER account_links_announce_work ON account_links;
DROP TRIGGER notices_announce_work ON notices;
ALTER TABLE account_links
    DROP COLUMN mail_status,
    DROP COLUMN mail_attempts,
    DROP COLUMN mail_next_attempt_at,
    DROP COLUMN mail_last_error,
    DROP COLUMN mail_sent_at,
    DROP COLUMN mail_lease_until;
ALTER TABLE notices
    DROP COLUMN mail_status,
    DROP COLUMN mail_attempts,
    DROP COLUMN mail_next_attempt_at,
    DROP COLUMN mail_last_error,
    DROP COLUMN mail_sent_at,
    DROP COLUMN mail_lease_until;
