DROP TABLE checkout_telemetry;
