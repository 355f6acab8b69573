DROP INDEX webhook_incidents_alerts;
ALTER TABLE webhook_incidents DROP COLUMN opened_alerted, DROP COLUMN resolved_alerted;
DROP TABLE notices;
ALTER TABLE memberships DROP COLUMN webhook_alerts;
ALTER TABLE merchants
    DROP CONSTRAINT merchants_request_has_wallet,
    DROP CONSTRAINT merchants_requested_live,
    DROP COLUMN requested_wallet,
    DROP COLUMN requested_token,
    DROP COLUMN activation_requested_at;
