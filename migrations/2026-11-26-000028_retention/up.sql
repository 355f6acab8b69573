-- Retention's purges find the oldest records per merchant and mode (events) or in all
-- (finished emails) without reading the tables.
CREATE INDEX events_scope_created ON events (merchant_id, mode, created_at);
CREATE INDEX emails_finished_created ON emails (created_at) WHERE status <> 'queued';
