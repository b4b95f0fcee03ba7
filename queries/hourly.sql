-- How many requests came each hour, and how long did they take (p50, p95, total)?
--
-- The nightly report's day picture. An hour is its UTC start (date_trunc), in order. The
-- two percentiles are exact, from how many requests took each time in each hour
-- (queries/parts/timer_percentiles.sql: [1] is the median, [6] the p95), not from every
-- time of the day held at once: quantile_cont held the 20 M times of a HAProxy day, 450 MB
-- beyond DuckDB's memory limit.
WITH hours AS (
  -- the picture shows the duration alone: the part's other timers are left empty
  SELECT
    date_trunc('hour', ts_start) AS hour,
    status,
    duration_us,
    CAST(NULL AS BIGINT) AS upstream_us,
    CAST(NULL AS BIGINT) AS ttfb_us,
    CAST(NULL AS BIGINT) AS queue_us
  FROM requests
),
g AS (
  SELECT
    hour,
    count(*) AS requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
  FROM hours
  GROUP BY hour
),
{timer_percentiles:hours BY hour}
SELECT
  g.hour,
  g.requests,
  g.total_us,
  p.duration_q[1] AS p50_us,
  p.duration_q[6] AS p95_us,
  g.error_share
FROM g
LEFT JOIN timer_percentiles AS p ON {same_group}
ORDER BY g.hour
