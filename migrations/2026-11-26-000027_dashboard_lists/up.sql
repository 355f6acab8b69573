-- The dashboard's lists of checkout sessions and payments, newest first per merchant and mode.
CREATE INDEX checkout_sessions_listed ON checkout_sessions (merchant_id, mode, created_at DESC, id DESC);
CREATE INDEX payments_listed ON payments (merchant_id, mode, detected_at DESC, id DESC);
