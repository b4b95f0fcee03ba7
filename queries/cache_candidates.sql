-- Which {dimensions} are worth caching: how much server time would a cache of their successful GET/HEAD answers save?
--
-- Template like by_dimension.sql ({dimensions} from the whitelist in logan/stats.py).
-- Cacheable: method GET or HEAD; a group is listed when at least one of them succeeded
-- (2xx or 304). A URL is vhost + path + query: what a cache would key on.
--   get_requests: GET/HEAD requests; requests: those that succeeded (the rest of the
--     columns describe these); ok_share = requests / get_requests; not_modified_share:
--     the share of 304s among them (clients already revalidate).
--   clients: distinct requesters (the client address when there is no requester).
--   urls: distinct URLs. total_us, avg_us, p50_us, p95_us: their server time.
--   share: total_us over all server time in requests (every method and status).
--   size_values, size_cv: distinct bytes_sent values and stddev/avg of bytes_sent over the
--     2xx answers; sizes_per_url: distinct sizes per URL, averaged over the URLs with a 2xx
--     (1.0: every URL always answers the same size, a hint of static content).
--   per_minute: its successful requests per minute of the whole log (at least a minute);
--   reuse_p50_us: the reuse distance, the median time between two consecutive GET/HEAD
--     requests of one URL: a TTL much shorter than it saves little, whatever the count.
--   cache_known: requests whose cache_status the log has; hit_share: among those, the ones
--     served from a cache (HIT..., STALE, UPDATING); NULL when the log says nothing.
--   saved_us: the time a cache keyed on the URL would have saved, estimated as every
--     successful request of a URL but one served at no cost, the one miss costing the
--     URL's average: sum over URLs of url_us * (n - 1) / n, with n the URL's successful
--     requests and url_us their time. An upper bound: no expiry, no invalidation, free
--     hits. saved_share: saved_us over all server time.
-- Per-URL figures come from a window (n) and from distinct (URL, size) pairs, not from a
-- join back on the groups: the dimension columns may be NULL.
-- Largest saving first.
WITH total AS (
  SELECT
    sum(duration_us) AS all_us,
    greatest(date_diff('microsecond', min(ts_start), max(ts_start)) / 60000000.0, 1.0) AS minutes
  FROM requests
), gets AS (
  SELECT
    {dimensions},
    coalesce(requester, client) AS who,
    coalesce(vhost, '') || ' ' || coalesce(path, '') || '?' || coalesce(query, '') AS url,
    CASE WHEN status BETWEEN 200 AND 299 OR status = 304 THEN 1 ELSE 0 END AS ok,
    CASE WHEN status BETWEEN 200 AND 299 THEN bytes_sent END AS ok_bytes,
    status,
    duration_us,
    cache_status,
    ts_start
  FROM requests
  WHERE method IN ('GET', 'HEAD')
), per_row AS (
  SELECT
    gets.*,
    sum(ok) OVER (PARTITION BY {dimensions}, url) AS url_n,
    date_diff('microsecond', lag(ts_start) OVER (PARTITION BY {dimensions}, url ORDER BY ts_start), ts_start)
      AS reuse_us
  FROM gets
), g AS (
  SELECT
    {dimensions},
    count(*) AS get_requests,
    sum(ok) AS requests,
    sum(CASE WHEN status = 304 THEN 1 ELSE 0 END) AS not_modified,
    count(DISTINCT CASE WHEN ok = 1 THEN who END) AS clients,
    count(DISTINCT CASE WHEN ok = 1 THEN url END) AS urls,
    sum(CASE WHEN ok = 1 THEN duration_us END) AS total_us,
    avg(CASE WHEN ok = 1 THEN duration_us END) AS avg_us,
    quantile_cont(CASE WHEN ok = 1 THEN duration_us END, 0.5) AS p50_us,
    quantile_cont(CASE WHEN ok = 1 THEN duration_us END, 0.95) AS p95_us,
    count(DISTINCT ok_bytes) AS size_values,
    stddev_samp(ok_bytes) / nullif(avg(ok_bytes), 0) AS size_cv,
    count(DISTINCT url || ' ' || CAST(ok_bytes AS VARCHAR))
      / CAST(nullif(count(DISTINCT CASE WHEN ok_bytes IS NOT NULL THEN url END), 0) AS DOUBLE)
      AS sizes_per_url,
    sum(CASE WHEN ok = 1 AND cache_status IS NOT NULL THEN 1 ELSE 0 END) AS cache_known,
    sum(CASE WHEN ok = 1 AND (upper(cache_status) LIKE 'HIT%'
                              OR upper(cache_status) IN ('STALE', 'UPDATING'))
        THEN 1 ELSE 0 END) AS cache_hits,
    sum(CASE WHEN ok = 1 THEN duration_us * (url_n - 1) / CAST(url_n AS DOUBLE) END) AS saved_us,
    quantile_cont(reuse_us, 0.5) AS reuse_p50_us
  FROM per_row
  GROUP BY {dimensions}
  HAVING sum(ok) > 0
)
SELECT
  {dimensions},
  get_requests,
  requests,
  requests / CAST(get_requests AS DOUBLE) AS ok_share,
  requests / minutes AS per_minute,
  reuse_p50_us,
  not_modified / CAST(requests AS DOUBLE) AS not_modified_share,
  clients,
  urls,
  CAST(total_us AS BIGINT) AS total_us,
  total_us / nullif(all_us, 0) AS share,
  avg_us,
  p50_us,
  p95_us,
  size_values,
  size_cv,
  sizes_per_url,
  cache_known,
  cache_hits / CAST(nullif(cache_known, 0) AS DOUBLE) AS hit_share,
  CAST(round(saved_us) AS BIGINT) AS saved_us,
  saved_us / nullif(all_us, 0) AS saved_share
FROM g
CROSS JOIN total
ORDER BY saved_us DESC NULLS LAST, total_us DESC NULLS LAST, requests DESC, {dimensions}
