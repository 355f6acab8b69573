DROP TRIGGER payments_announce_work ON payments;
DROP TRIGGER webhook_incidents_announce_work ON webhook_incidents;
DROP TRIGGER reconciliation_runs_announce_work ON reconciliation_runs;
DROP TRIGGER exports_announce_work ON exports;
DROP TRIGGER notices_announce_work ON notices;
DROP TRIGGER account_links_announce_work ON account_links;
DROP TRIGGER emails_announce_work ON emails;
DROP FUNCTION stablepay_announce_work();
