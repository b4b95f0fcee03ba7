-- How did the requests go: count, server time, p50/p95/p99 and 5xx share, in one pass?
--
-- The nightly report's headline, for the day and each day it is compared with: one scan
-- where summary.sql and percentiles.sql would take two (the percentiles of 10 M requests
-- are most of a report's time).
SELECT
  count(*) AS requests,
  count(duration_us) AS timed_requests,
  CAST(sum(duration_us) AS BIGINT) AS total_us,
  quantile_cont(duration_us, 0.5) AS p50_us,
  quantile_cont(duration_us, 0.95) AS p95_us,
  quantile_cont(duration_us, 0.99) AS p99_us,
  avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
FROM requests
