ALTER TABLE test_clocks DROP CONSTRAINT test_clocks_offset_cap;
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE payments DROP CONSTRAINT payments_failure_reason_check;
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE invoices DROP CONSTRAINT invoices_status_check;
ALTER TABLE invoices DROP CONSTRAINT invoices_collection_state_check;
