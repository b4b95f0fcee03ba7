-- Which requests could a cache answer, keyed how, and why not the others?
--
-- The simulator's input (logan/answer/cache_sim.py): one row per request with its cache key, its times in microseconds since the first request, and `excluded`:
-- NULL when a cache could store and serve the answer, else the reason it could not:
--   method      not GET or HEAD
--   status      a status a cache does not store by default (RFC 9111 section 3 and
--               15.1: 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501 are
--               heuristically cacheable; others, 302 and 304 included, are not)
--   per user    an authenticated user (remote_user), or a Cookie or Authorization header
--               where the format logs one: a shared cache must not hand it to others
--   size varies one key answered with different sizes (among its 200 answers to GET):
--               the answer changes between requests, a TTL would serve stale content
--   no time     the log has no start or no response time for it
-- {key} is vhost + path + query (the default) or vhost + path (`--key path`), filled
-- from a whitelist in logan/answer/cache.py; no log text enters this SQL.
WITH keyed AS (
  SELECT
    {key} AS cache_key,
    method,
    route,
    indirector,
    client,
    status,
    duration_us,
    bytes_sent,
    ts_start,
    ts_end,
    CASE
      WHEN method IS NULL OR method NOT IN ('GET', 'HEAD') THEN 'method'
      WHEN status IS NULL OR status NOT IN (200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501)
        THEN 'status'
      WHEN remote_user IS NOT NULL AND remote_user <> '-' THEN 'per user'
      WHEN extra['in.Cookie'] IS NOT NULL OR extra['in.cookie'] IS NOT NULL
        OR extra['in.Authorization'] IS NOT NULL OR extra['in.authorization'] IS NOT NULL
        THEN 'per user'
      WHEN ts_start IS NULL OR duration_us IS NULL THEN 'no time'
    END AS early_reason,
    CASE WHEN method = 'GET' AND status = 200 THEN bytes_sent END AS get_size
  FROM requests
), sized AS (
  SELECT
    keyed.*,
    min(CASE WHEN early_reason IS NULL THEN get_size END) OVER (PARTITION BY cache_key) AS min_size,
    max(CASE WHEN early_reason IS NULL THEN get_size END) OVER (PARTITION BY cache_key) AS max_size
  FROM keyed
)
SELECT
  cache_key,
  method,
  route,
  indirector,
  client,
  status,
  duration_us,
  coalesce(bytes_sent, 0) AS bytes_sent,
  date_diff('microsecond', (SELECT min(ts_start) FROM requests), ts_start) AS start_us,
  date_diff('microsecond', (SELECT min(ts_start) FROM requests), ts_start) + duration_us AS end_us,
  CASE
    WHEN early_reason IS NOT NULL THEN early_reason
    WHEN min_size <> max_size THEN 'size varies'
  END AS excluded
FROM sized
