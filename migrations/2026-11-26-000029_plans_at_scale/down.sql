DROP INDEX IF EXISTS invoices_reminders_scope;
DROP INDEX IF EXISTS invoices_reminders;
DROP INDEX IF EXISTS payments_verifying;
