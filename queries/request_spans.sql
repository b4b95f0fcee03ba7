-- When did each timed request start and end, in epoch microseconds?
--
-- The input of the exact requests-in-flight sweep in logan/answer/in_flight.py (numpy; the
-- same answer as queries/in_flight.sql, in a tenth of its time). {series} is the --by
-- columns from the fixed whitelist (empty for one series). In the store's order: a log's
-- own order, nearly sorted by start, which sorts in about linear time.
SELECT
  {series}
  date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_start) AS s,
  date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_end) AS e
FROM requests
WHERE ts_start IS NOT NULL AND ts_end IS NOT NULL
