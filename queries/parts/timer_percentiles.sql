-- The exact percentiles of each timer per group: a part of a view, not a view.
--
-- A view splices these CTEs into its WITH with a {timer_percentiles:SOURCE} slot
-- (logan/answer/views.py): SOURCE is the table or CTE of rows they read; {groups} are the
-- view's group columns ("a, b, ", empty for one group), {group_by} their GROUP BY and
-- {keyed_on} that a row `s` is of group `k`, from the fixed whitelist of --by columns,
-- never user text. They answer `timer_percentiles`:
-- a row per group, and for each timer (duration, upstream, ttfb, queue) the list of its
-- percentiles at 0.5, 0.66, 0.75, 0.8, 0.9, 0.95, 0.98, 0.99 (NULL where the group has
-- none of that timer): duration_q[1] is the median, duration_q[8] the p99.
--
-- Exact, and interpolated linearly as numpy's default and Spark's percentile are: with a
-- group's n values of a timer sorted, the value at h = (n - 1) * q lies between those at
-- ranks floor(h) and ceil(h) (from 0): lo + (hi - lo) * (h - floor(h)). They are read from
-- how many requests took each time (`timed`), not from every value held in memory:
-- DuckDB's quantile_cont keeps each value of each group until the end, 1.1 GB for the
-- four timers of 20 M HAProxy requests, whose counts are 15,567 rows (times in
-- milliseconds repeat). A log whose every time is its own still counts a row per request,
-- in an aggregate DuckDB can spill to disk. The value at rank k is the first whose running
-- count passes k. (quantile_cont weighs lo and hi in one fused multiply-add: its answer
-- can differ from this one in the last bit, 1899.9999999999998 for 1900.)
--
-- The groups are numbered first (`group_ids`) and counted, ranked and interpolated by
-- number: the window sorts a number, not the group's text. Over the 60,775 resources of
-- the realistic log (three columns a group, 3.86 M counts) an answer of every group took
-- 3.7 s against 4.5 s; over 338,166 clients of a column each, 10.3-10.7 s against
-- 10.1-10.3 s (docs/benchmarks.md, 2026-12-03 19:50).
group_ids AS (
  SELECT {groups}row_number() OVER (ORDER BY {groups}one) AS gid
  FROM (SELECT DISTINCT {groups}1 AS one FROM {source}) AS each_group
),
timed AS (
  SELECT gid, timer, us, count(*) AS n
  FROM (
    SELECT k.gid, 1 AS timer, s.duration_us AS us FROM {source} AS s JOIN group_ids AS k ON {keyed_on} WHERE s.duration_us IS NOT NULL
    UNION ALL
    SELECT k.gid, 2 AS timer, s.upstream_us AS us FROM {source} AS s JOIN group_ids AS k ON {keyed_on} WHERE s.upstream_us IS NOT NULL
    UNION ALL
    SELECT k.gid, 3 AS timer, s.ttfb_us AS us FROM {source} AS s JOIN group_ids AS k ON {keyed_on} WHERE s.ttfb_us IS NOT NULL
    UNION ALL
    SELECT k.gid, 4 AS timer, s.queue_us AS us FROM {source} AS s JOIN group_ids AS k ON {keyed_on} WHERE s.queue_us IS NOT NULL
  ) AS each_timer
  GROUP BY gid, timer, us
),
running AS (
  SELECT
    gid,
    timer,
    us,
    sum(n) OVER (PARTITION BY gid, timer ORDER BY us ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
    CAST(sum(n) OVER (PARTITION BY gid, timer) - 1 AS DOUBLE) AS last_rank
  FROM timed
),
ranks AS (
  SELECT
    gid, timer,
    any_value(last_rank * 0.5) AS h50,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.5)) AS DOUBLE) AS lo50,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.5)) AS DOUBLE) AS hi50,
    any_value(last_rank * 0.66) AS h66,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.66)) AS DOUBLE) AS lo66,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.66)) AS DOUBLE) AS hi66,
    any_value(last_rank * 0.75) AS h75,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.75)) AS DOUBLE) AS lo75,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.75)) AS DOUBLE) AS hi75,
    any_value(last_rank * 0.8) AS h80,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.8)) AS DOUBLE) AS lo80,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.8)) AS DOUBLE) AS hi80,
    any_value(last_rank * 0.9) AS h90,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.9)) AS DOUBLE) AS lo90,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.9)) AS DOUBLE) AS hi90,
    any_value(last_rank * 0.95) AS h95,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.95)) AS DOUBLE) AS lo95,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.95)) AS DOUBLE) AS hi95,
    any_value(last_rank * 0.98) AS h98,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.98)) AS DOUBLE) AS lo98,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.98)) AS DOUBLE) AS hi98,
    any_value(last_rank * 0.99) AS h99,
    CAST(min(us) FILTER (WHERE upto > floor(last_rank * 0.99)) AS DOUBLE) AS lo99,
    CAST(min(us) FILTER (WHERE upto > ceil(last_rank * 0.99)) AS DOUBLE) AS hi99
  FROM running
  GROUP BY gid, timer
),
interpolated AS (
  SELECT
    gid, timer,
    [
      lo50 + (hi50 - lo50) * (h50 - floor(h50)),
      lo66 + (hi66 - lo66) * (h66 - floor(h66)),
      lo75 + (hi75 - lo75) * (h75 - floor(h75)),
      lo80 + (hi80 - lo80) * (h80 - floor(h80)),
      lo90 + (hi90 - lo90) * (h90 - floor(h90)),
      lo95 + (hi95 - lo95) * (h95 - floor(h95)),
      lo98 + (hi98 - lo98) * (h98 - floor(h98)),
      lo99 + (hi99 - lo99) * (h99 - floor(h99))
    ] AS q
  FROM ranks
),
timer_percentiles AS (
  SELECT
    {groups}
    max(CASE WHEN timer = 1 THEN q END) AS duration_q,
    max(CASE WHEN timer = 2 THEN q END) AS upstream_q,
    max(CASE WHEN timer = 3 THEN q END) AS ttfb_q,
    max(CASE WHEN timer = 4 THEN q END) AS queue_q
  FROM interpolated JOIN group_ids USING (gid)
  {group_by}
)
