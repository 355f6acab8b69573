-- The domain's enumerations, enforced by the database too (the store tests compare these lists
-- with the domain's), and the cap on a test clock's total offset (100 years).

ALTER TABLE invoices ADD CONSTRAINT invoices_collection_state_check
    CHECK (collection_state IN ('draft', 'open', 'past_due', 'partially_paid', 'paid', 'void', 'uncollectible'));
ALTER TABLE invoices ADD CONSTRAINT invoices_status_check
    CHECK (status IN ('pending', 'processing', 'paid', 'underpaid', 'overpaid', 'expired', 'failed', 'cancelled'));
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('duplicate', 'detected', 'validating', 'confirmed', 'failed', 'underpaid', 'overpaid'));
ALTER TABLE payments ADD CONSTRAINT payments_failure_reason_check
    CHECK (failure_reason IN ('transaction_not_found', 'transaction_reverted', 'wrong_chain', 'wrong_token_contract',
                              'wrong_recipient', 'checkout_expired', 'zero_amount', 'duplicate_transaction'));
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type IN ('invoice.issued', 'invoice.paid', 'invoice.partially_paid', 'invoice.past_due', 'invoice.overpaid',
                    'invoice.voided', 'invoice.uncollectible', 'invoice.refund_recorded',
                    'invoice.payment_received_after_void', 'invoice.payment_received_after_uncollectible',
                    'invoice.expired', 'payment_link.completed', 'payment_link.expired', 'payment.failed',
                    'payment.underpaid', 'payment.overpaid'));
ALTER TABLE test_clocks ADD CONSTRAINT test_clocks_offset_cap CHECK (offset_seconds <= 3155760000);
