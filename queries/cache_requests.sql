-- Which requests could a cache answer, keyed how, and why not the others?
--
-- The simulator's input (logan/answer/cache_sim.py): one row per request with its cache
-- keys, its times in microseconds (since 1970), and `excluded`: NULL when a cache could
-- store and serve the answer, else the reason it could not:
--   method      not GET or HEAD
--   status      a status a cache does not store by default (RFC 9111 section 3 and
--               15.1: 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501 are
--               heuristically cacheable; others, 302 and 304 included, are not)
--   per user    an authenticated user (remote_user), or a Cookie or Authorization header
--               where the format logs one: a shared cache must not hand it to others
--   size varies one key answered with different sizes (among its 200 answers to GET):
--               the answer changes between requests, a TTL would serve stale content;
--               a property of the key, not of one request: logan/answer/cache.py finds
--               these keys from get_size when it numbers the keys
--   no time     the log has no start or no response time for it
-- A cache keys on host + path + query by default (key_host, key_path, key_query: '' where
-- the log has none); `--key path` drops the query. logan/answer/cache.py tells keys apart
-- by a hash of those parts (no key string is built per request) and writes a key as
-- "host /path?query" only for the keys it shows. {series} is the column the answer groups
-- the keys by (route or indirector, from the whitelist in logan/answer/cache.py; empty for
-- --by url): the route is read only when asked for (it joins the route templates).
SELECT
  coalesce(vhost, '') AS key_host,
  coalesce(path, '') AS key_path,
  coalesce(query, '') AS key_query,
  {series}
  client,
  -- the line's number in its log: requests that started in the same microsecond are
  -- replayed in the order their log wrote them
  coalesce(line_no, 0) AS line_no,
  duration_us,
  coalesce(bytes_sent, 0) AS bytes_sent,
  date_diff('microsecond', TIMESTAMP '1970-01-01', ts_start) AS start_us,
  date_diff('microsecond', TIMESTAMP '1970-01-01', ts_start) + duration_us AS end_us,
  CASE
    WHEN method IS NULL OR method NOT IN ('GET', 'HEAD') THEN 'method'
    WHEN status IS NULL OR status NOT IN (200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501)
      THEN 'status'
    WHEN remote_user IS NOT NULL AND remote_user <> '-' THEN 'per user'
    WHEN extra['in.Cookie'] IS NOT NULL OR extra['in.cookie'] IS NOT NULL
      OR extra['in.Authorization'] IS NOT NULL OR extra['in.authorization'] IS NOT NULL
      THEN 'per user'
    WHEN ts_start IS NULL OR duration_us IS NULL THEN 'no time'
  END AS excluded,
  -- the size of a 200 answer to GET: a key whose sizes differ is left out ('size varies')
  CASE WHEN method = 'GET' AND status = 200 THEN bytes_sent END AS get_size
FROM requests
