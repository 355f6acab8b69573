DROP INDEX payments_reconciliation;
DROP TABLE reconciliation_items;
DROP TABLE reconciliation_runs;
