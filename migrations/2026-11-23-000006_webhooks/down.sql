DROP TRIGGER events_fan_out ON events;
DROP FUNCTION stablepay_fan_out_event();
DROP TABLE webhook_incidents;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DELETE FROM events WHERE test;
ALTER TABLE events DROP COLUMN test;
DROP TABLE webhook_endpoints;
