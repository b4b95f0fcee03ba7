-- What do the requests cover: period, count, total server time, 5xx share, bytes, requesters?
SELECT
  min(ts_start) AS first_ts,
  max(coalesce(ts_end, ts_start)) AS last_ts,
  count(*) AS requests,
  count(duration_us) AS timed_requests,
  CAST(sum(duration_us) AS BIGINT) AS total_us,
  quantile_cont(duration_us, 0.99) AS p99_us,
  avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share,
  CAST(sum(bytes_sent) AS BIGINT) AS bytes,
  count(DISTINCT requester) AS requesters
FROM requests
