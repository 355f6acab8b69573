-- A merchant's logo (PNG), shown on its PDFs, emails and hosted pages. The image is stored once
-- per content (named by its keccak-256 digest, served at /logos/{digest}.png); the merchant row
-- names the logo it uses with its size.
CREATE TABLE merchant_logos (
    digest text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    png bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE merchants ADD COLUMN logo_digest text REFERENCES merchant_logos (digest);
ALTER TABLE merchants ADD COLUMN logo_width integer;
ALTER TABLE merchants ADD COLUMN logo_height integer;
ALTER TABLE merchants ADD CONSTRAINT merchants_logo_whole
    CHECK ((logo_digest IS NULL) = (logo_width IS NULL) AND (logo_digest IS NULL) = (logo_height IS NULL));
CREATE INDEX merchants_logo_digest ON merchants (logo_digest) WHERE logo_digest IS NOT NULL;
