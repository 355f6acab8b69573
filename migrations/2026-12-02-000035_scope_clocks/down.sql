DROP VIEW scope_clocks;
