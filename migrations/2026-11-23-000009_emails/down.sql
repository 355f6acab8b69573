DROP TABLE emails;
