-- Found by the plan test at scale (tests/api/plans.rs): statements of the worker's passes that
-- read whole tables of every merchant.

-- The checkouts whose payment is still being verified (both modes), for the due-work claim.
CREATE INDEX payments_verifying ON payments (checkout_session_id) WHERE status IN ('detected', 'validating');

-- Collectible invoices with an enabled reminder schedule: the reminder pass walks them by id,
-- a page at a time (all of them, or one scope's).
CREATE INDEX invoices_reminders ON invoices (id)
    WHERE collection_state IN ('open', 'past_due', 'partially_paid') AND due_at IS NOT NULL
      AND (fields -> 'reminder_schedule' ->> 'enabled') = 'true';
CREATE INDEX invoices_reminders_scope ON invoices (merchant_id, mode, id)
    WHERE collection_state IN ('open', 'past_due', 'partially_paid') AND due_at IS NOT NULL
      AND (fields -> 'reminder_schedule' ->> 'enabled') = 'true';
