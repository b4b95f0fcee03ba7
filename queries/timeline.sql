-- How did traffic, latency, errors, bytes, cache hits and queues change over time, bucket by bucket of request start?
--
-- One row per bucket of `width` microseconds (bound as the one parameter) that holds at
-- least one request start, per {series} (the --by columns, empty for one series; a fixed
-- whitelist fills the slot, never user text). bucket_us is the bucket's start in epoch
-- microseconds, a multiple of the width, so buckets of 10 s start on :00, :10, ...
-- Percentiles interpolate linearly (quantile_cont: numpy's default, Spark's percentile),
-- over the requests that carry the timer (NULL for a bucket with none). The rates are per
-- second of the bucket; cache_hit_ratio counts over requests whose log says HIT or MISS...
-- (cache_status not NULL); the queue lengths are HAProxy's, as each request saw them.
-- Epoch microseconds are a date_diff from 1970 (Spark's DATEDIFF(MICROSECOND, ...)), not
-- DuckDB's epoch_us, which sqlglot does not carry over; the bucket is an integer division
-- (Spark's DIV): exact at any width, and a quarter cheaper than floor() of a double.
WITH p AS (
  SELECT CAST(? AS BIGINT) AS width
),
bucketed AS (
  SELECT
    date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', r.ts_start) // p.width * p.width AS bucket_us,
    r.*
  FROM requests AS r, p
  WHERE r.ts_start IS NOT NULL
)
SELECT
  {series}
  bucket_us,
  requests,
  rate,
  duration_q[1] AS p50_us,
  duration_q[2] AS p95_us,
  duration_q[3] AS p99_us,
  max_us,
  upstream_q[1] AS upstream_p50_us,
  upstream_q[2] AS upstream_p95_us,
  upstream_q[3] AS upstream_p99_us,
  upstream_max_us,
  ttfb_q[1] AS ttfb_p50_us,
  ttfb_q[2] AS ttfb_p95_us,
  ttfb_q[3] AS ttfb_p99_us,
  ttfb_max_us,
  queue_q[1] AS queue_p50_us,
  queue_q[2] AS queue_p95_us,
  queue_q[3] AS queue_p99_us,
  queue_max_us,
  status_1xx, status_2xx, status_3xx, status_4xx, status_5xx,
  status_499, status_500, status_502, status_503, status_504,
  error_share,
  bytes,
  bytes_per_s,
  cache_hit_ratio,
  server_queue_avg,
  server_queue_max,
  backend_queue_avg,
  backend_queue_max
FROM (
SELECT
  {series}
  b.bucket_us,
  count(*) AS requests,
  count(*) * 1000000.0 / max(p.width) AS rate,
  quantile_cont(duration_us, [0.5, 0.95, 0.99]) AS duration_q,
  max(duration_us) AS max_us,
  quantile_cont(upstream_us, [0.5, 0.95, 0.99]) AS upstream_q,
  max(upstream_us) AS upstream_max_us,
  quantile_cont(ttfb_us, [0.5, 0.95, 0.99]) AS ttfb_q,
  max(ttfb_us) AS ttfb_max_us,
  quantile_cont(queue_us, [0.5, 0.95, 0.99]) AS queue_q,
  max(queue_us) AS queue_max_us,
  sum(CASE WHEN status BETWEEN 100 AND 199 THEN 1 ELSE 0 END) AS status_1xx,
  sum(CASE WHEN status BETWEEN 200 AND 299 THEN 1 ELSE 0 END) AS status_2xx,
  sum(CASE WHEN status BETWEEN 300 AND 399 THEN 1 ELSE 0 END) AS status_3xx,
  sum(CASE WHEN status BETWEEN 400 AND 499 THEN 1 ELSE 0 END) AS status_4xx,
  sum(CASE WHEN status BETWEEN 500 AND 599 THEN 1 ELSE 0 END) AS status_5xx,
  sum(CASE WHEN status = 499 THEN 1 ELSE 0 END) AS status_499,
  sum(CASE WHEN status = 500 THEN 1 ELSE 0 END) AS status_500,
  sum(CASE WHEN status = 502 THEN 1 ELSE 0 END) AS status_502,
  sum(CASE WHEN status = 503 THEN 1 ELSE 0 END) AS status_503,
  sum(CASE WHEN status = 504 THEN 1 ELSE 0 END) AS status_504,
  avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 WHEN status IS NOT NULL THEN 0.0 END) AS error_share,
  CAST(sum(bytes_sent) AS BIGINT) AS bytes,
  sum(bytes_sent) * 1000000.0 / max(p.width) AS bytes_per_s,
  avg(CASE WHEN upper(cache_status) LIKE 'HIT%' THEN 1.0 WHEN cache_status IS NOT NULL THEN 0.0 END)
    AS cache_hit_ratio,
  avg(server_queue) AS server_queue_avg,
  max(server_queue) AS server_queue_max,
  avg(backend_queue) AS backend_queue_avg,
  max(backend_queue) AS backend_queue_max
FROM bucketed AS b, p
GROUP BY {series} b.bucket_us
) AS per_bucket
