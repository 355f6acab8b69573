-- Back to one table each (the rows copied; the months' partitions dropped with their tables).
DROP TRIGGER IF EXISTS events_fan_out ON events;
DROP FUNCTION IF EXISTS stablepay_drop_detached_month(text);
DROP FUNCTION IF EXISTS stablepay_months_past(int);
DROP FUNCTION IF EXISTS stablepay_prepare_months(int);
DROP FUNCTION IF EXISTS stablepay_prepare_month(date);

ALTER TABLE events RENAME TO events_partitioned;
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_partitioned;
ALTER TABLE webhook_attempts RENAME TO webhook_attempts_partitioned;
ALTER TABLE events_partitioned RENAME CONSTRAINT events_type_check TO events_partitioned_type_check;
ALTER INDEX events_scope_seq RENAME TO events_partitioned_scope_seq;
ALTER INDEX events_scope_type_seq RENAME TO events_partitioned_scope_type_seq;
ALTER INDEX events_scope_created RENAME TO events_partitioned_scope_created;
ALTER INDEX webhook_deliveries_due RENAME TO webhook_deliveries_partitioned_due;
ALTER INDEX webhook_deliveries_leased RENAME TO webhook_deliveries_partitioned_leased;
ALTER INDEX webhook_deliveries_scope RENAME TO webhook_deliveries_partitioned_scope;
ALTER INDEX webhook_deliveries_endpoint RENAME TO webhook_deliveries_partitioned_endpoint;
ALTER INDEX webhook_deliveries_event RENAME TO webhook_deliveries_partitioned_event;
ALTER INDEX events_pkey RENAME TO events_partitioned_pkey;
ALTER INDEX webhook_deliveries_pkey RENAME TO webhook_deliveries_partitioned_pkey;
ALTER INDEX webhook_attempts_pkey RENAME TO webhook_attempts_partitioned_pkey;

CREATE TABLE events (
    seq          bigint NOT NULL UNIQUE DEFAULT nextval('events_seq_seq'),
    id           text PRIMARY KEY,
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    type         text NOT NULL,
    data         jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    test         boolean NOT NULL DEFAULT false
);
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN ('invoice.issued', 'invoice.paid',
    'invoice.partially_paid', 'invoice.past_due', 'invoice.overpaid', 'invoice.voided', 'invoice.uncollectible',
    'invoice.refund_recorded', 'invoice.payment_received_after_void', 'invoice.payment_received_after_uncollectible',
    'invoice.expired', 'payment_link.completed', 'payment_link.expired', 'payment.failed', 'payment.underpaid',
    'payment.overpaid', 'payment.unattributed'));
ALTER SEQUENCE events_seq_seq OWNED BY events.seq;
CREATE INDEX events_scope_seq ON events (merchant_id, mode, seq);
CREATE INDEX events_scope_type_seq ON events (merchant_id, mode, type, seq);
CREATE INDEX events_scope_created ON events (merchant_id, mode, created_at);

CREATE TABLE webhook_deliveries (
    seq                     bigint NOT NULL UNIQUE DEFAULT nextval('webhook_deliveries_seq_seq'),
    id                      text PRIMARY KEY,
    merchant_id             text NOT NULL REFERENCES merchants (id),
    mode                    text NOT NULL CHECK (mode IN ('test', 'live')),
    endpoint_id             text NOT NULL REFERENCES webhook_endpoints (id),
    event_id                text NOT NULL REFERENCES events (id),
    event_type              text NOT NULL,
    status                  text NOT NULL
        CHECK (status IN ('pending', 'delivering', 'delivered', 'retry_scheduled', 'failed')),
    attempt_count           integer NOT NULL DEFAULT 0,
    next_attempt_at         timestamptz,
    claim                   text,
    lease_until             timestamptz,
    test                    boolean NOT NULL DEFAULT false,
    replay_of               text REFERENCES webhook_deliveries (id),
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    delivered_at            timestamptz
);
ALTER SEQUENCE webhook_deliveries_seq_seq OWNED BY webhook_deliveries.seq;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status IN ('pending', 'retry_scheduled');
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_scope ON webhook_deliveries (merchant_id, mode, seq);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
    delivery_id         text NOT NULL REFERENCES webhook_deliveries (id),
    number              integer NOT NULL CHECK (number >= 1),
    started_at          timestamptz NOT NULL,
    duration_ms         integer NOT NULL,
    status_code         integer,
    error_category      text CHECK (error_category IN ('dns', 'connection', 'tls', 'timeout', 'blocked_destination',
        'http_4xx', 'http_5xx', 'redirect', 'response_too_large', 'signing_secret', 'endpoint_disabled', 'internal')),
    error_message       text,
    response_excerpt    text,
    request_headers     jsonb NOT NULL,
    PRIMARY KEY (delivery_id, number)
);

INSERT INTO events (seq, id, merchant_id, mode, type, data, created_at, test)
SELECT seq, id, merchant_id, mode, type, data, created_at, test FROM events_partitioned;
-- Replays after the deliveries they replay.
INSERT INTO webhook_deliveries
SELECT seq, id, merchant_id, mode, endpoint_id, event_id, event_type, status, attempt_count, next_attempt_at, claim,
       lease_until, test, replay_of, created_at, updated_at, delivered_at
FROM webhook_deliveries_partitioned ORDER BY replay_of IS NOT NULL, seq;
INSERT INTO webhook_attempts
SELECT delivery_id, number, started_at, duration_ms, status_code, error_category, error_message, response_excerpt,
       request_headers
FROM webhook_attempts_partitioned;

DROP TABLE webhook_attempts_partitioned;
DROP TABLE webhook_deliveries_partitioned;
DROP TABLE events_partitioned;

CREATE OR REPLACE FUNCTION stablepay_fan_out_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.test THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, merchant_id, mode, endpoint_id, event_id, event_type, status,
                                    next_attempt_at, created_at, updated_at)
    SELECT 'whd_' || substr(md5(NEW.id || ':' || e.id), 1, 22), NEW.merchant_id, NEW.mode, e.id, NEW.id,
           NEW.type, 'pending', now(), now(), now()
    FROM webhook_endpoints e
    WHERE e.merchant_id = NEW.merchant_id AND e.mode = NEW.mode AND e.archived_at IS NULL
      AND e.state = 'enabled' AND (e.event_types IS NULL OR NEW.type = ANY (e.event_types));
    IF FOUND THEN
        PERFORM pg_notify('stablepay_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER events_fan_out AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION stablepay_fan_out_event();
