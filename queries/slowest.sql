-- Which single requests took longest?
SELECT
  ts_start,
  duration_us,
  ttfb_us,
  upstream_us,
  queue_us,
  status,
  method,
  vhost,
  path,
  query,
  bytes_sent,
  requester,
  environment,
  indirector,
  route,
  source,
  line_no
FROM requests
WHERE duration_us IS NOT NULL
ORDER BY duration_us DESC, ts_start, source, line_no
LIMIT 1000
