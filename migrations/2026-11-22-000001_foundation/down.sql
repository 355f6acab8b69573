DROP TABLE events;
DROP TABLE test_clocks;
DROP TABLE api_keys;
DROP TABLE merchants;
