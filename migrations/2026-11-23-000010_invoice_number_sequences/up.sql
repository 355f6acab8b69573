-- Invoice numbers come from one sequence per merchant and mode (invoice_numbers."<merchant>_<mode>"),
-- replacing the counter row that serialized every numbering transaction of a scope. A sequence
-- never blocks a concurrent creation; its numbers are unique and increasing, with gaps only
-- where a creation did not commit.
CREATE SCHEMA invoice_numbers;

DO $$
DECLARE r record;
BEGIN
  FOR r IN
    SELECT m.id, md.mode, coalesce(c.last_seq, 0) AS last_seq
      FROM merchants m
      CROSS JOIN (VALUES ('test'), ('live')) AS md(mode)
      LEFT JOIN invoice_counters c ON c.merchant_id = m.id AND c.mode = md.mode
  LOOP
    EXECUTE format('CREATE SEQUENCE invoice_numbers.%I START WITH %s', r.id || '_' || r.mode, r.last_seq + 1);
  END LOOP;
END $$;

DROP TABLE invoice_counters;

-- Called when a merchant is created, in the same transaction.
CREATE FUNCTION invoice_numbers.create_sequences(merchant text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE SEQUENCE invoice_numbers.%I', merchant || '_test');
  EXECUTE format('CREATE SEQUENCE invoice_numbers.%I', merchant || '_live');
END $$;
