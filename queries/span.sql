-- When did the first and the last request start, in epoch microseconds?
SELECT
  min(date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_start)) AS first_us,
  max(date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_start)) AS last_us,
  count(ts_start) AS requests
FROM requests
