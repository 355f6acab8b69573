DROP TRIGGER checkout_sessions_signal_checkout ON checkout_sessions;
DROP TRIGGER payments_signal_checkout ON payments;
DROP FUNCTION stablepay_signal_checkout();
