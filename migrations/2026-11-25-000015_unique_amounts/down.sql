DROP INDEX checkout_sessions_unique_amount;
ALTER TABLE checkout_sessions DROP COLUMN amount_offset;
ALTER TABLE invoices DROP COLUMN unique_amounts;
ALTER TABLE merchants DROP COLUMN live_unique_amounts;
