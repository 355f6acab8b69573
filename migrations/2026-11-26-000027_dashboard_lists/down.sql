DROP INDEX payments_listed;
DROP INDEX checkout_sessions_listed;
