-- When did each timed request start and end?
--
-- The input of the exact requests-in-flight computation in logan/answer/in_flight.py
-- (numpy; the same answer as queries/in_flight.sql in a tenth of its time), as timestamps
-- (microseconds since 1970 as they are stored: no conversion per row). {series} is the
-- --by columns from the fixed whitelist (empty for one series). In the store's order: a
-- log's own order, nearly sorted by start, which sorts in about linear time (and is not
-- sorted again when it is in order already).
SELECT
  {series}
  ts_start AS s,
  ts_end AS e
FROM requests
WHERE ts_start IS NOT NULL AND ts_end IS NOT NULL
