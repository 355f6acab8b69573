ALTER TABLE merchants DROP CONSTRAINT merchants_logo_whole;
ALTER TABLE merchants DROP COLUMN logo_height;
ALTER TABLE merchants DROP COLUMN logo_width;
ALTER TABLE merchants DROP COLUMN logo_digest;
DROP TABLE merchant_logos;
