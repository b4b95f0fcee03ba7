-- How did the requests go: count, server time, p50/p95/p99 and 5xx share, in one pass?
--
-- The nightly report's headline, for the day and each day it is compared with: one scan
-- for the counts where summary.sql and percentiles.sql would take two, and the exact
-- percentiles from how many requests took each time (queries/parts/timer_percentiles.sql:
-- [1] is the median, [6] the p95, [8] the p99), not from every time of the day held in
-- memory (quantile_cont held 40 M of them: 2.3 GB for the report of such a day).
WITH g AS (
  SELECT
    count(*) AS requests,
    count(duration_us) AS timed_requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
  FROM requests
),
{timer_percentiles:requests}
SELECT
  g.requests,
  g.timed_requests,
  g.total_us,
  p.duration_q[1] AS p50_us,
  p.duration_q[6] AS p95_us,
  p.duration_q[8] AS p99_us,
  g.error_share
FROM g
LEFT JOIN timer_percentiles AS p ON {same_group}
