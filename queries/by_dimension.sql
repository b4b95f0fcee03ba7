-- Where does the time go per {dimensions}: how many requests, how much and what share of server time, how spread, how many 5xx, how many bytes, for each timer the log has?
--
-- One template serves every per-dimension view (indirector, resource, environment, requester,
-- status, route, vhost, server), so their statistics cannot drift apart. Its slots take
-- the column names from the fixed whitelist in logan/answer/views.py (DIMENSIONS), never
-- user text: {dimensions} lists them, {group_columns} lists g's, and {same_group} says
-- that rows p and g are of one group (NULL matching NULL: a group may have no
-- environment).
--
-- One row per group, the timers side by side: the duration's statistics (requests counts
-- every request, timed or not), then upstream_, ttfb_ and queue_ ones over the requests that
-- carry that timer (NULL for a group with none). One pass over the rows for all but the
-- percentiles: a row per group and timer, pivoted afterwards, took twice as long (four
-- scans and a string key per row). share: fraction of the timer's total over all groups.
-- error_share: fraction of requests with status 500-599. stddev_us: sample standard
-- deviation.
--
-- Percentiles are exact, from how many requests took each time, not from every value held
-- in memory (queries/parts/timer_percentiles.sql, which says how, joined on the group).
-- The statistics are worked out over {group_rows}: every row, or only the rows of the
-- groups an answer shows, when it shows the top groups of a many-valued column (resource,
-- requester, client, user agent), ranked first on the column it sorts by alone
-- (logan/answer/stats.py): 20 of 60,775 resources, over 4 M rows, took 0.8 s against 5 s
-- for all, and a group per request (7.1 M thumbnail files) held 9.9 GiB of aggregates
-- otherwise. The percentiles over {percentile_rows}: every row, or those same rows read
-- again (`group_rows`, which DuckDB then holds once: as one slot, a CTE of every row read
-- twice would be held in memory, and not held, the thumbnails' cut answer took 0.1-0.4 s
-- more). The shares are of the totals over every row.
WITH group_rows AS (
  {group_rows}
),
per_group AS (
  SELECT
    {dimensions},
    count(*) AS requests,
    CAST(sum(duration_us) AS BIGINT) AS total_us,
    avg(duration_us) AS avg_us,
    stddev_samp(duration_us) AS stddev_us,
    min(duration_us) AS min_us,
    max(duration_us) AS max_us,
    avg(CASE WHEN status BETWEEN 500 AND 599 THEN 1.0 ELSE 0.0 END) AS error_share,
    CAST(sum(bytes_sent) AS BIGINT) AS bytes,
    nullif(count(upstream_us), 0) AS upstream_n,
    CAST(sum(upstream_us) AS BIGINT) AS upstream_total_us,
    avg(upstream_us) AS upstream_avg_us,
    stddev_samp(upstream_us) AS upstream_stddev_us,
    min(upstream_us) AS upstream_min_us,
    max(upstream_us) AS upstream_max_us,
    nullif(count(ttfb_us), 0) AS ttfb_n,
    CAST(sum(ttfb_us) AS BIGINT) AS ttfb_total_us,
    avg(ttfb_us) AS ttfb_avg_us,
    stddev_samp(ttfb_us) AS ttfb_stddev_us,
    min(ttfb_us) AS ttfb_min_us,
    max(ttfb_us) AS ttfb_max_us,
    nullif(count(queue_us), 0) AS queue_n,
    CAST(sum(queue_us) AS BIGINT) AS queue_total_us,
    avg(queue_us) AS queue_avg_us,
    stddev_samp(queue_us) AS queue_stddev_us,
    min(queue_us) AS queue_min_us,
    max(queue_us) AS queue_max_us
  FROM group_rows
  GROUP BY {dimensions}
),
totals AS (
  SELECT
    CAST(sum(duration_us) AS BIGINT) AS all_total_us,
    CAST(sum(upstream_us) AS BIGINT) AS all_upstream_total_us,
    CAST(sum(ttfb_us) AS BIGINT) AS all_ttfb_total_us,
    CAST(sum(queue_us) AS BIGINT) AS all_queue_total_us
  FROM requests
),
percentile_rows AS (
  {percentile_rows}
),
{timer_percentiles:percentile_rows}
SELECT
  {group_columns},
  requests,
  total_us,
  total_us / nullif(all_total_us, 0) AS share,
  avg_us,
  stddev_us,
  min_us,
  p.duration_q[1] AS p50_us,
  p.duration_q[5] AS p90_us,
  p.duration_q[6] AS p95_us,
  p.duration_q[8] AS p99_us,
  max_us,
  error_share,
  bytes,
  upstream_n AS upstream_requests,
  upstream_total_us,
  upstream_total_us / nullif(all_upstream_total_us, 0) AS upstream_share,
  upstream_avg_us,
  upstream_stddev_us,
  upstream_min_us,
  p.upstream_q[1] AS upstream_p50_us,
  p.upstream_q[5] AS upstream_p90_us,
  p.upstream_q[6] AS upstream_p95_us,
  p.upstream_q[8] AS upstream_p99_us,
  upstream_max_us,
  ttfb_n AS ttfb_requests,
  ttfb_total_us,
  ttfb_total_us / nullif(all_ttfb_total_us, 0) AS ttfb_share,
  ttfb_avg_us,
  ttfb_stddev_us,
  ttfb_min_us,
  p.ttfb_q[1] AS ttfb_p50_us,
  p.ttfb_q[5] AS ttfb_p90_us,
  p.ttfb_q[6] AS ttfb_p95_us,
  p.ttfb_q[8] AS ttfb_p99_us,
  ttfb_max_us,
  queue_n AS queue_requests,
  queue_total_us,
  queue_total_us / nullif(all_queue_total_us, 0) AS queue_share,
  queue_avg_us,
  queue_stddev_us,
  queue_min_us,
  p.queue_q[1] AS queue_p50_us,
  p.queue_q[5] AS queue_p90_us,
  p.queue_q[6] AS queue_p95_us,
  p.queue_q[8] AS queue_p99_us,
  queue_max_us
FROM per_group AS g
CROSS JOIN totals
LEFT JOIN timer_percentiles AS p ON {same_group}
