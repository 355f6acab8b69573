-- What a merchant's documents say about the seller (invoice PDF, emails, hosted pages).
ALTER TABLE merchants ADD COLUMN legal_name text;
ALTER TABLE merchants ADD COLUMN postal_address text;
ALTER TABLE merchants ADD COLUMN tax_id text;
ALTER TABLE merchants ADD COLUMN support_email text;
ALTER TABLE merchants ADD COLUMN reply_to text;
