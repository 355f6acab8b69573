-- Restricted keys: a secret key's permissions in their canonical form
-- (`checkout_sessions:write,invoices:read`); NULL for an unrestricted key.
ALTER TABLE api_keys ADD COLUMN permissions text
    CHECK (permissions IS NULL OR (key_type = 'secret' AND permissions ~ '^[a-z_]+:(read|write)(,[a-z_]+:(read|write))*$'));
