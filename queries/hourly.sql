-- How many requests came each hour, and how long did they take (p50, p95, total)?
--
-- The nightly report's day picture. An hour is its UTC start (date_trunc), in order. The
-- two percentiles come from one quantile_cont over a list: each hour's durations ordered
-- once, not twice (the same values). DuckDB lists count from 1.
SELECT
  hour,
  requests,
  total_us,
  q[1] AS p50_us,
  q[2] AS p95_us,
  error_share
FROM (
  SELECT
    date_trunc('hour', ts_start) AS hour,
    count(*) AS requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    quantile_cont(duration_us, [0.5, 0.95]) AS q,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
  FROM requests
  GROUP BY date_trunc('hour', ts_start)
) AS hours
ORDER BY hour
