-- How did the requests go: count, server time, p50/p95/p99 and 5xx share, in one pass?
--
-- The nightly report's headline, for the day and each day it is compared with: one scan
-- where summary.sql and percentiles.sql would take two (the percentiles of 10 M requests
-- are most of a report's time), and the three percentiles from one quantile_cont over a
-- list, which orders the durations once where three calls ordered them three times (a
-- third of the time, the same values). DuckDB lists count from 1.
SELECT
  requests,
  timed_requests,
  total_us,
  q[1] AS p50_us,
  q[2] AS p95_us,
  q[3] AS p99_us,
  error_share
FROM (
  SELECT
    count(*) AS requests,
    count(duration_us) AS timed_requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    quantile_cont(duration_us, [0.5, 0.95, 0.99]) AS q,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
  FROM requests
) AS figures
