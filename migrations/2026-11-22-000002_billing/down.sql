DROP TABLE idempotency_keys;
DROP TABLE payments;
DROP TABLE checkout_sessions;
DROP TABLE invoices;
DROP TABLE invoice_counters;
