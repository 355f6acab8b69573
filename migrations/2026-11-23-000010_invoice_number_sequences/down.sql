CREATE TABLE invoice_counters (
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    last_seq     bigint NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

INSERT INTO invoice_counters (merchant_id, mode, last_seq)
SELECT m.id, md.mode, s.last_value
  FROM merchants m
  CROSS JOIN (VALUES ('test'), ('live')) AS md(mode)
  JOIN pg_sequences s ON s.schemaname = 'invoice_numbers' AND s.sequencename = m.id || '_' || md.mode
 WHERE s.last_value IS NOT NULL;

DROP SCHEMA invoice_numbers CASCADE;
