-- What do the requests cover: period, count, total server time, its p99, 5xx share, bytes?
--
-- The headline above every `logan stats` table reads it, so it reads no column the
-- per-dimension views do not: a count of distinct requesters here made the store of
-- `logan stats FILE` keep every row's requester. `--by requester` counts them. The p99
-- is exact, from how many requests took each time (queries/parts/timer_percentiles.sql).
WITH totals AS (
  SELECT
    min(ts_start) AS first_ts,
    max(coalesce(ts_end, ts_start)) AS last_ts,
    count(*) AS requests,
    count(duration_us) AS timed_requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share,
    CAST(sum(bytes_sent) AS BIGINT) AS bytes
  FROM requests
),
{timer_percentiles:requests}
SELECT
  g.first_ts,
  g.last_ts,
  g.requests,
  g.timed_requests,
  g.total_us,
  p.duration_q[8] AS p99_us,
  g.error_share,
  g.bytes
FROM totals AS g
LEFT JOIN timer_percentiles AS p ON {same_group}
