-- Bulk data for plan tests and the scale benchmark: copies of one merchant (its rows in every
-- table below), made in SQL so millions of rows take minutes. Each copy is a merchant of its
-- own: every identifier column (text `id`, `*_id`, `replay_of`, `public_token`, `public_id`,
-- `transaction_hash`) gets the copy's number in its last 8 characters, so keys stay unique,
-- references stay consistent and the copies' rows look like the template's (same states,
-- amounts, timestamps and payloads). Serial columns (`seq`) take their defaults. Copy n's
-- events are stored n mod 90 days before the template's (`stored_at`, and `event_stored_at`
-- of their deliveries and attempts), so the copies fill the months of a 90-day retention as a
-- deployment's would; those months are made first.
--
-- Defines session functions (pg_temp): load it, then, in the same session,
--   SELECT pg_temp.clone_merchant('mer_...', 1, 1000);   -- copies 1 to 1000
--   SELECT pg_temp.multiply_events('mer_...', 4);       -- each event 4 more times
-- Copies made twice collide on their keys: give each call its own range.

CREATE FUNCTION pg_temp.copy_id(v text, n int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL OR length(v) < 12 THEN v
                ELSE left(v, length(v) - 8) || lpad(to_hex(n), 8, '0') END
$$;

CREATE FUNCTION pg_temp.clone_merchant(template text, first int, copies int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    cols text;
    vals text;
    source text;
BEGIN
    PERFORM stablepay_prepare_month(m::date)
       FROM generate_series(date_trunc('month', (now() - interval '90 days') AT TIME ZONE 'UTC'),
                            date_trunc('month', now() AT TIME ZONE 'UTC'), interval '1 month') AS m;
    -- Referenced tables first.
    FOREACH t IN ARRAY ARRAY['merchants', 'invoices', 'checkout_sessions', 'payments', 'events',
        'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts', 'payment_links',
        'payment_link_invoices', 'emails', 'idempotency_keys', 'credited_transfer_logs'] LOOP
        SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),
               string_agg(CASE WHEN data_type = 'text' AND (column_name IN
                                 ('id', 'replay_of', 'public_token', 'public_id', 'transaction_hash')
                                 OR column_name LIKE '%\_id')
                               THEN format('pg_temp.copy_id(%I, n)', column_name)
                               WHEN column_name IN ('stored_at', 'event_stored_at')
                               THEN format('%I - make_interval(days => n %% 90)', column_name)
                               ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)
          INTO cols, vals
          FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = t
           AND coalesce(column_default, '') NOT LIKE 'nextval(%' AND is_identity = 'NO';
        source := CASE t
            WHEN 'merchants' THEN format('SELECT * FROM merchants WHERE id = %L', template)
            WHEN 'webhook_attempts' THEN format('SELECT a.* FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.merchant_id = %L', template)
            WHEN 'payment_link_invoices' THEN format('SELECT l.* FROM payment_link_invoices l JOIN invoices i ON i.id = l.invoice_id WHERE i.merchant_id = %L', template)
            WHEN 'credited_transfer_logs' THEN format('SELECT c.* FROM credited_transfer_logs c JOIN payments p ON p.id = c.payment_id WHERE p.merchant_id = %L', template)
            ELSE format('SELECT * FROM %I WHERE merchant_id = %L', t, template)
        END;
        EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM generate_series(%s, %s) n, LATERAL (%s) r ORDER BY n',
                       t, cols, vals, first, first + copies - 1, source);
    END LOOP;
END
$$;

-- More events for the template itself: each of its events copied `times` times, the merchant
-- kept, so a merchant's history can hold several events per invoice. The copy's number goes in
-- the 8 characters before the last 8, which `copy_id` leaves alone: the merchant's copies made
-- afterwards stay unique.
CREATE FUNCTION pg_temp.copy_id_inner(v text, n int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT left(v, length(v) - 16) || lpad(to_hex(n), 8, '0') || right(v, 8)
$$;

CREATE FUNCTION pg_temp.multiply_events(template text, times int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cols text;
    vals text;
BEGIN
    SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),
           string_agg(CASE WHEN column_name = 'id' THEN 'pg_temp.copy_id_inner(id, n)'
                           ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)
      INTO cols, vals
      FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = 'events'
       AND coalesce(column_default, '') NOT LIKE 'nextval(%' AND is_identity = 'NO';
    EXECUTE format('INSERT INTO events (%s) SELECT %s FROM generate_series(1, %s) n, '
                   'LATERAL (SELECT * FROM events WHERE merchant_id = %L) r', cols, vals, times, template);
END
$$;
