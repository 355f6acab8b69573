-- New work of the worker's loops is announced on the channel `stablepay_work` (the payload is
-- the table), from any process: an idle loop rests until its next due time (the domain's
-- `schedule`) and wakes at once when one of these rows appears. PostgreSQL sends one
-- notification per channel and payload per transaction, after its commit.
--
-- Announced: an email, an account link's email or a notice queued; an export queued or done
-- (a ready statement's export is mailed by the due pass); a reconciliation run queued; a
-- webhook incident opened or resolved (its alert); a live payment reported (its verification,
-- when no chain endpoint is configured and the chain loop rests). Checkouts, invoices and links
-- are not announced: their due times are minutes ahead, within an idle loop's longest rest. A
-- moved test clock is announced by its use case once the scope's own transitions have run
-- (`DueTimes::announce`).
CREATE FUNCTION stablepay_announce_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stablepay_work', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER emails_announce_work AFTER INSERT ON emails
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER account_links_announce_work AFTER INSERT ON account_links
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER notices_announce_work AFTER INSERT ON notices
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER exports_announce_work AFTER INSERT OR UPDATE OF status ON exports
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER reconciliation_runs_announce_work AFTER INSERT ON reconciliation_runs
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER webhook_incidents_announce_work AFTER INSERT OR UPDATE OF status ON webhook_incidents
    FOR EACH ROW EXECUTE FUNCTION stablepay_announce_work();
CREATE TRIGGER payments_announce_work AFTER INSERT ON payments
    FOR EACH ROW WHEN (NEW.mode = 'live') EXECUTE FUNCTION stablepay_announce_work();
