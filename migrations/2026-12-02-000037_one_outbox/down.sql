ALTER TABLE account_links
    ADD COLUMN mail_status text NOT NULL DEFAULT 'skipped' CHECK (mail_status IN ('queued', 'sent', 'failed', 'skipped')),
    ADD COLUMN mail_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN mail_next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN mail_last_error text,
    ADD COLUMN mail_sent_at timestamptz,
    ADD COLUMN mail_lease_until timestamptz;
ALTER TABLE notices
    ADD COLUMN mail_status text NOT NULL DEFAULT 'failed' CHECK (mail_status IN ('queued', 'sent', 'failed')),
    ADD COLUMN mail_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN mail_next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN mail_last_error text,
    ADD COLUMN mail_sent_at timestamptz,
    ADD COLUMN mail_lease_until timestamptz;
UPDATE account_links l SET mail_status = e.status, mail_attempts = e.attempts, mail_next_attempt_at = e.next_attempt_at,
    mail_last_error = e.last_error, mail_sent_at = e.sent_at, mail_lease_until = e.lease_until
FROM emails e WHERE e.account_link_id = l.id;
UPDATE notices n SET mail_status = CASE e.status WHEN 'skipped' THEN 'failed' ELSE e.status END,
    mail_attempts = e.attempts, mail_next_attempt_at = e.next_attempt_at, mail_last_error = e.last_error,
    mail_sent_at = e.sent_at, mail_lease_until = e.lease_until
FROM emails e WHERE e.notice_id = n.id;
ALTER TABLE account_links ALTER COLUMN mail_status DROP DEFAULT, ALTER COLUMN mail_next_attempt_at DROP DEFAULT;
ALTER TABLE notices ALTER COLUMN mail_status DROP DEFAULT, ALTER COLUMN mail_next_attempt_at DROP DEFAULT;
CREATE INDEX account_links_due ON account_links (mail_next_attempt_at) WHERE mail_status = 'queued';
CREATE INDEX notices_due ON notices (mail_next_attempt_at) WHERE mail_status = 'queued';
CREATE TRIGGER account_links_announce_work AFTER INSERT ON account_links
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER notices_announce_work AFTER INSERT ON notices
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();

DELETE FROM emails WHERE account_link_id IS NOT NULL OR notice_id IS NOT NULL;
DROP INDEX emails_notice;
DROP INDEX emails_account_link;
ALTER TABLE emails DROP CONSTRAINT emails_kind_about;
ALTER TABLE emails DROP CONSTRAINT emails_kind_check;
ALTER TABLE emails ADD CONSTRAINT emails_kind_check CHECK (kind IN ('invoice', 'reminder', 'statement'));
ALTER TABLE emails DROP CONSTRAINT emails_scoped;
ALTER TABLE emails DROP CONSTRAINT emails_about_one;
ALTER TABLE emails ADD CONSTRAINT emails_about_one CHECK ((invoice_id IS NULL) <> (statement_id IS NULL));
ALTER TABLE emails DROP COLUMN notice_id;
ALTER TABLE emails DROP COLUMN account_link_id;
ALTER TABLE emails ALTER COLUMN mode SET NOT NULL;
ALTER TABLE emails ALTER COLUMN merchant_id SET NOT NULL;
