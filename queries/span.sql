-- When did the first and the last request start, in epoch microseconds?
SELECT
  min(epoch_us(ts_start)) AS first_us,
  max(epoch_us(ts_start)) AS last_us,
  count(ts_start) AS requests
FROM requests
