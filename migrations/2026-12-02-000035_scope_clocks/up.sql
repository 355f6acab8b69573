-- A scope's time, defined once for the statements that judge many scopes at once (the due-work
-- claim, the reminder walk, link and export expiry, test-mode retention): real time in live
-- mode, real time plus the merchant's test-clock offset in test mode (the domain's rule,
-- `clock::time_in_mode`; a store test holds the two equal). Every merchant has a `test_clocks`
-- row from its creation, so the view has exactly two rows per merchant. A statement asking one
-- scope passes the time of the caller's clock as a parameter instead.
CREATE VIEW scope_clocks (merchant_id, mode, ahead_seconds, now) AS
    SELECT merchant_id, 'live'::text, 0::bigint, now() FROM test_clocks
    UNION ALL
    SELECT merchant_id, 'test'::text, offset_seconds, now() + make_interval(secs => offset_seconds)
    FROM test_clocks;
