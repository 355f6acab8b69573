-- Signals that a checkout may have changed, for the hosted page's push channel: a payment of it
-- written, or its status changed. NOTIFY is sent at commit (nothing of a rolled-back change) and
-- one transaction's identical signals are sent once.
CREATE FUNCTION stablepay_signal_checkout() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'payments' THEN
        PERFORM pg_notify('stablepay_checkouts', NEW.checkout_session_id);
    ELSE
        PERFORM pg_notify('stablepay_checkouts', NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER payments_signal_checkout AFTER INSERT OR UPDATE ON payments
    FOR EACH ROW EXECUTE FUNCTION stablepay_signal_checkout();
CREATE TRIGGER checkout_sessions_signal_checkout AFTER UPDATE ON checkout_sessions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.amount_due IS DISTINCT FROM NEW.amount_due)
    EXECUTE FUNCTION stablepay_signal_checkout();
