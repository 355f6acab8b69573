ALTER TABLE merchants DROP COLUMN reply_to;
ALTER TABLE merchants DROP COLUMN support_email;
ALTER TABLE merchants DROP COLUMN tax_id;
ALTER TABLE merchants DROP COLUMN postal_address;
ALTER TABLE merchants DROP COLUMN legal_name;
