-- Webhooks: endpoints with sealed signing secrets, deliveries fanned out from the events outbox,
-- their attempts, and endpoint incidents.

CREATE TABLE webhook_endpoints (
    seq                         bigserial NOT NULL UNIQUE,
    id                          text PRIMARY KEY,
    merchant_id                 text NOT NULL REFERENCES merchants (id),
    mode                        text NOT NULL CHECK (mode IN ('test', 'live')),
    url                         text NOT NULL,
    description                 text,
    -- NULL: every supported type, including types added later.
    event_types                 text[],
    state                       text NOT NULL CHECK (state IN ('enabled', 'disabled')),
    alert_on_incident_opened    boolean NOT NULL,
    alert_on_incident_resolved  boolean NOT NULL,
    -- Sealed (AES-256-GCM under the operator's STABLEPAY_SECRET_KEY): never the secret itself.
    secret                      bytea NOT NULL,
    previous_secret             bytea,
    previous_secret_until       timestamptz,
    -- Failed attempts in a row, across deliveries (incidents open at the third).
    consecutive_failures        integer NOT NULL DEFAULT 0,
    created_at                  timestamptz NOT NULL,
    updated_at                  timestamptz NOT NULL,
    archived_at                 timestamptz,
    lock_version                bigint NOT NULL,
    CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
CREATE INDEX webhook_endpoints_scope ON webhook_endpoints (merchant_id, mode, seq) WHERE archived_at IS NULL;

-- Synthetic events of POST /v1/webhooks/test: kept for their deliveries only.
ALTER TABLE events ADD COLUMN test boolean NOT NULL DEFAULT false;

CREATE TABLE webhook_deliveries (
    seq                     bigserial NOT NULL UNIQUE,
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
    -- The worker holding it (status delivering): its claim and until when.
    claim                   text,
    lease_until             timestamptz,
    test                    boolean NOT NULL DEFAULT false,
    replay_of               text REFERENCES webhook_deliveries (id),
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    delivered_at            timestamptz
);
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

CREATE TABLE webhook_incidents (
    seq                  bigserial NOT NULL UNIQUE,
    id                   text PRIMARY KEY,
    merchant_id          text NOT NULL REFERENCES merchants (id),
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    endpoint_id          text NOT NULL REFERENCES webhook_endpoints (id),
    status               text NOT NULL CHECK (status IN ('open', 'resolved')),
    opened_at            timestamptz NOT NULL,
    resolved_at          timestamptz,
    failed_attempts      integer NOT NULL,
    last_error_category  text,
    last_delivery_id     text
);
-- One open incident per endpoint.
CREATE UNIQUE INDEX webhook_incidents_open ON webhook_incidents (endpoint_id) WHERE status = 'open';
CREATE INDEX webhook_incidents_endpoint ON webhook_incidents (endpoint_id, seq);

-- Fan-out: every event (not a synthetic test event) becomes a delivery to each enabled,
-- unarchived endpoint of its merchant and mode subscribed to its type, in the transaction that
-- inserts the event, so no event is ever without its deliveries. The rule is the domain's
-- `WebhookEndpoint::receives` (the store's tests compare them). A delivery's id is derived
-- from the event and the endpoint ('whd_' and 22 hex digits of their MD5), so it is unique
-- per pair. The worker is woken at commit.
CREATE FUNCTION stablepay_fan_out_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
