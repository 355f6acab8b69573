DROP INDEX unattributed_transfers_export;
ALTER TABLE exports DROP COLUMN filter_run, DROP COLUMN filter_outcome;
ALTER TABLE exports DROP CONSTRAINT exports_export_type_check;
ALTER TABLE exports ADD CONSTRAINT exports_export_type_check CHECK (export_type IN ('invoices', 'payments'));
DROP INDEX payments_reconciliation;
DROP TABLE reconciliation_items;
DROP TABLE reconciliation_runs;
