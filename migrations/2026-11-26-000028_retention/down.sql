DROP INDEX emails_finished_created;
DROP INDEX events_scope_created;
