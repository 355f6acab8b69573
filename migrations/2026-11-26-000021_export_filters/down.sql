ALTER TABLE exports
    DROP COLUMN filter_amount_type,
    DROP COLUMN filter_usage,
    DROP COLUMN filter_token,
    DROP COLUMN filter_endpoint,
    DROP COLUMN filter_event_type,
    DROP COLUMN filter_delivery_status;
