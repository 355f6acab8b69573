DELETE FROM emails WHERE statement_id IS NOT NULL;
DROP INDEX emails_statement;
ALTER TABLE emails DROP CONSTRAINT emails_kind_check;
ALTER TABLE emails ADD CONSTRAINT emails_kind_check CHECK (kind IN ('invoice', 'reminder'));
ALTER TABLE emails DROP CONSTRAINT emails_about_one;
ALTER TABLE emails DROP COLUMN statement_id;
ALTER TABLE emails ALTER COLUMN invoice_id SET NOT NULL;
DROP TABLE statements;
DROP TABLE statement_settings;
