DROP INDEX payments_export;
DROP TABLE export_chunks;
DROP TABLE exports;
