-- The filters of payment-link and webhook-delivery exports (their lists' names and values).
ALTER TABLE exports
    ADD COLUMN filter_amount_type text CHECK (filter_amount_type IN ('fixed', 'customer_entered')),
    ADD COLUMN filter_usage text CHECK (filter_usage IN ('single_use', 'reusable')),
    ADD COLUMN filter_token text CHECK (filter_token IN ('USDC', 'USDT')),
    ADD COLUMN filter_endpoint text,
    ADD COLUMN filter_event_type text,
    ADD COLUMN filter_delivery_status text
        CHECK (filter_delivery_status IN ('pending', 'delivering', 'delivered', 'retry_scheduled', 'failed'));
