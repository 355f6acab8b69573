-- Events, webhook deliveries and webhook attempts are stored by the month they were recorded
-- in (real time, UTC; a test clock does not move it): one partition of each table per month,
-- so retention drops a whole month of the largest tables at once instead of deleting it row
-- by row (docs/ARCHITECTURE.md, the retention invariant; deploy/README.md, "Years of data").
--
-- The partition key is the event's `stored_at` (the time of the transaction that wrote it),
-- carried by its deliveries and their attempts as `event_stored_at`: an event, its deliveries
-- and their attempts are always in the same month. The keys include it, as PostgreSQL asks of
-- a partitioned table; `id` (random) and `seq` (a sequence) stay unique by construction. The
-- foreign keys between the three are per month (a month's deliveries reference that month's
-- events), so a month is detached (concurrently, by the store: attempts, deliveries, events)
-- and dropped without a check that reads the other months. A
-- replay references the delivery it replays, of the same event and so of the same month, by
-- `replay_of` without a foreign key (one on a partitioned table referencing itself would keep
-- any month from ever being detached); both are removed together, with their event.
--
-- Existing rows are copied into the new tables in this migration (their month: the earlier
-- of their created_at and now).

ALTER TABLE events RENAME TO events_unpartitioned;
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_unpartitioned;
ALTER TABLE webhook_attempts RENAME TO webhook_attempts_unpartitioned;
DO $$
DECLARE
    ix text;
BEGIN
    FOR ix IN SELECT indexrelid::regclass::text FROM pg_index
              WHERE indrelid IN ('events_unpartitioned'::regclass, 'webhook_deliveries_unpartitioned'::regclass,
                                 'webhook_attempts_unpartitioned'::regclass) LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', ix, ix || '_unpartitioned');
    END LOOP;
END
$$;

CREATE TABLE events (
    seq          bigint NOT NULL DEFAULT nextval('events_seq_seq'),
    id           text NOT NULL,
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    type         text NOT NULL,
    data         jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    test         boolean NOT NULL DEFAULT false,
    stored_at    timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (stored_at);
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN ('invoice.issued', 'invoice.paid',
    'invoice.partially_paid', 'invoice.past_due', 'invoice.overpaid', 'invoice.voided', 'invoice.uncollectible',
    'invoice.refund_recorded', 'invoice.payment_received_after_void', 'invoice.payment_received_after_uncollectible',
    'invoice.expired', 'payment_link.completed', 'payment_link.expired', 'payment.failed', 'payment.underpaid',
    'payment.overpaid', 'payment.unattributed'));
ALTER SEQUENCE events_seq_seq OWNED BY events.seq;

CREATE TABLE webhook_deliveries (
    seq                     bigint NOT NULL DEFAULT nextval('webhook_deliveries_seq_seq'),
    id                      text NOT NULL,
    merchant_id             text NOT NULL REFERENCES merchants (id),
    mode                    text NOT NULL CHECK (mode IN ('test', 'live')),
    endpoint_id             text NOT NULL REFERENCES webhook_endpoints (id),
    event_id                text NOT NULL,
    event_type              text NOT NULL,
    status                  text NOT NULL
        CHECK (status IN ('pending', 'delivering', 'delivered', 'retry_scheduled', 'failed')),
    attempt_count           integer NOT NULL DEFAULT 0,
    next_attempt_at         timestamptz,
    claim                   text,
    lease_until             timestamptz,
    test                    boolean NOT NULL DEFAULT false,
    replay_of               text,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    delivered_at            timestamptz,
    event_stored_at         timestamptz NOT NULL
) PARTITION BY RANGE (event_stored_at);
ALTER SEQUENCE webhook_deliveries_seq_seq OWNED BY webhook_deliveries.seq;

CREATE TABLE webhook_attempts (
    delivery_id         text NOT NULL,
    number              integer NOT NULL CHECK (number >= 1),
    started_at          timestamptz NOT NULL,
    duration_ms         integer NOT NULL,
    status_code         integer,
    error_category      text CHECK (error_category IN ('dns', 'connection', 'tls', 'timeout', 'blocked_destination',
        'http_4xx', 'http_5xx', 'redirect', 'response_too_large', 'signing_secret', 'endpoint_disabled', 'internal')),
    error_message       text,
    response_excerpt    text,
    request_headers     jsonb NOT NULL,
    event_stored_at     timestamptz NOT NULL
) PARTITION BY RANGE (event_stored_at);

ALTER TABLE events ADD PRIMARY KEY (id, stored_at);
CREATE INDEX events_scope_seq ON events (merchant_id, mode, seq);
CREATE INDEX events_scope_type_seq ON events (merchant_id, mode, type, seq);
CREATE INDEX events_scope_created ON events (merchant_id, mode, created_at);
ALTER TABLE webhook_deliveries ADD PRIMARY KEY (id, event_stored_at);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status IN ('pending', 'retry_scheduled');
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_scope ON webhook_deliveries (merchant_id, mode, seq);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
ALTER TABLE webhook_attempts ADD PRIMARY KEY (delivery_id, number, event_stored_at);

-- The month that starts at `month` (UTC), made if missing: a partition of each table, and the
-- month's foreign keys (its deliveries' events, its attempts' deliveries). Answers whether it
-- was made. Partitions are made apart and attached, which does not block reads or writes of
-- the tables; an advisory lock keeps two workers from making the same month at once.
CREATE FUNCTION stablepay_prepare_month(month date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    suffix text := to_char(month, '"y"YYYY"m"MM');
    lo timestamptz := make_timestamptz(extract(year FROM month)::int, extract(month FROM month)::int, 1, 0, 0, 0, 'UTC');
    hi timestamptz := lo + interval '1 month';
    t text;
BEGIN
    IF extract(day FROM month) <> 1 THEN
        RAISE EXCEPTION 'a month starts on its first day, not %', month;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('stablepay_months'));
    IF to_regclass('events_' || suffix) IS NOT NULL THEN
        RETURN false;
    END IF;
    FOREACH t IN ARRAY ARRAY['events', 'webhook_deliveries', 'webhook_attempts'] LOOP
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', t || '_' || suffix, t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, t || '_' || suffix, lo, hi);
    END LOOP;
    EXECUTE format('ALTER TABLE %I ADD FOREIGN KEY (event_id, event_stored_at) REFERENCES %I (id, stored_at)',
                   'webhook_deliveries_' || suffix, 'events_' || suffix);
    EXECUTE format('ALTER TABLE %I ADD FOREIGN KEY (delivery_id, event_stored_at) REFERENCES %I (id, event_stored_at)',
                   'webhook_attempts_' || suffix, 'webhook_deliveries_' || suffix);
    RETURN true;
END
$$;

-- The current month (UTC) and the `ahead` months after it, each made if missing; answers how
-- many were made.
CREATE FUNCTION stablepay_prepare_months(ahead int) RETURNS int LANGUAGE sql AS $$
    SELECT count(*) FILTER (WHERE stablepay_prepare_month(m::date))::int
    FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                         date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead),
                         interval '1 month') AS m
$$;

-- The months (their suffix, `y2026m01`) that ended more than `days` days ago, oldest first:
-- each of whose tables is still there, attached or already detached by a drop that was cut
-- off, and none of whose deliveries is still pending or being delivered (the row-by-row
-- purge's rule too). Every event of such a month is older than `days` in real time, and so in
-- its scope's time (a test clock only ever runs ahead).
CREATE FUNCTION stablepay_months_past(days int) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    suffix text;
    busy boolean;
BEGIN
    FOR suffix IN
        SELECT DISTINCT substring(c.relname FROM '_(y[0-9]{4}m[0-9]{2})$') AS s
        FROM pg_class c
        WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
          AND c.relname ~ '^(events|webhook_deliveries|webhook_attempts)_y[0-9]{4}m[0-9]{2}$'
        ORDER BY 1
    LOOP
        CONTINUE WHEN to_date(suffix, '"y"YYYY"m"MM') + interval '1 month'
                      >= (now() AT TIME ZONE 'UTC') - make_interval(days => days);
        busy := false;
        IF to_regclass('webhook_deliveries_' || suffix) IS NOT NULL THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %1$I WHERE status = ''pending'') '
                           'OR EXISTS (SELECT 1 FROM %1$I WHERE status = ''delivering'')',
                           'webhook_deliveries_' || suffix)
               INTO busy;
        END IF;
        CONTINUE WHEN busy;
        RETURN NEXT suffix;
    END LOOP;
END
$$;

-- A month's tables whose partitions were all detached (`ALTER TABLE ... DETACH PARTITION ...
-- CONCURRENTLY`, which cannot run in a function, so the store sends it): dropped, attempts
-- first. Refuses while any of them is still a partition. Answers whether any was dropped.
CREATE FUNCTION stablepay_drop_detached_month(suffix text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    t text;
    dropped boolean := false;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE c.relname IN ('events_' || suffix, 'webhook_deliveries_' || suffix,
                                   'webhook_attempts_' || suffix)) THEN
        RAISE EXCEPTION 'month % is still partly attached', suffix;
    END IF;
    FOREACH t IN ARRAY ARRAY['webhook_attempts', 'webhook_deliveries', 'events'] LOOP
        IF to_regclass(t || '_' || suffix) IS NOT NULL THEN
            EXECUTE format('DROP TABLE %I', t || '_' || suffix);
            dropped := true;
        END IF;
    END LOOP;
    RETURN dropped;
END
$$;

-- The months the existing rows need, and the next three.
SELECT stablepay_prepare_month(m::date)
FROM generate_series(
    (SELECT date_trunc('month', LEAST(COALESCE(min(created_at), now()), now()) AT TIME ZONE 'UTC') FROM events_unpartitioned),
    date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months', interval '1 month') AS m;

INSERT INTO events (seq, id, merchant_id, mode, type, data, created_at, test, stored_at)
SELECT seq, id, merchant_id, mode, type, data, created_at, test, LEAST(created_at, now()) FROM events_unpartitioned;
INSERT INTO webhook_deliveries (seq, id, merchant_id, mode, endpoint_id, event_id, event_type, status, attempt_count,
    next_attempt_at, claim, lease_until, test, replay_of, created_at, updated_at, delivered_at, event_stored_at)
SELECT d.seq, d.id, d.merchant_id, d.mode, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempt_count,
       d.next_attempt_at, d.claim, d.lease_until, d.test, d.replay_of, d.created_at, d.updated_at, d.delivered_at,
       e.stored_at
FROM webhook_deliveries_unpartitioned d JOIN events e ON e.id = d.event_id;
INSERT INTO webhook_attempts (delivery_id, number, started_at, duration_ms, status_code, error_category,
    error_message, response_excerpt, request_headers, event_stored_at)
SELECT a.delivery_id, a.number, a.started_at, a.duration_ms, a.status_code, a.error_category, a.error_message,
       a.response_excerpt, a.request_headers, d.event_stored_at
FROM webhook_attempts_unpartitioned a JOIN webhook_deliveries d ON d.id = a.delivery_id;

DROP TABLE webhook_attempts_unpartitioned;
DROP TABLE webhook_deliveries_unpartitioned;
DROP TABLE events_unpartitioned;

-- The fan-out (migration 000006), its deliveries now in their event's month.
CREATE OR REPLACE FUNCTION stablepay_fan_out_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.test THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, merchant_id, mode, endpoint_id, event_id, event_type, status,
                                    next_attempt_at, created_at, updated_at, event_stored_at)
    SELECT 'whd_' || substr(md5(NEW.id || ':' || e.id), 1, 22), NEW.merchant_id, NEW.mode, e.id, NEW.id,
           NEW.type, 'pending', now(), now(), now(), NEW.stored_at
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
