-- How many requests came each hour, and how long did they take (p50, p95, total)?
--
-- The nightly report's day picture. An hour is its UTC start (date_trunc), in order.
SELECT
  date_trunc('hour', ts_start) AS hour,
  count(*) AS requests,
  CAST(sum(duration_us) AS BIGINT) AS total_us,
  quantile_cont(duration_us, 0.5) AS p50_us,
  quantile_cont(duration_us, 0.95) AS p95_us,
  avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share
FROM requests
GROUP BY date_trunc('hour', ts_start)
ORDER BY hour
