-- How many requests were in flight (started and not yet ended) in each time bucket: the most at once, and the mean over the bucket's time?
--
-- Exact, not sampled: a sweep over the requests' starts (+1) and ends (-1), summed per
-- instant, whose running total is the number in flight from that instant until the next
-- one. Requests are in flight over [ts_start, ts_end): one that ends as another starts
-- does not overlap it, and one of zero duration is never in flight. Every bucket's start
-- is an instant of the sweep too (a change of 0), so each level's span lies inside one
-- bucket: the bucket's mean is the sum of level x span over its width, its maximum the
-- largest level held in it. Parameters: lo and hi (the first bucket's start, the last
-- bucket's end, epoch microseconds) and the width. {series} and {partition} are the --by
-- columns (empty for one series). Requests without both times do not count.
WITH p AS (
  SELECT CAST(? AS BIGINT) AS lo, CAST(? AS BIGINT) AS hi, CAST(? AS BIGINT) AS width
),
timed AS (
  SELECT
    {series}
    date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_start) AS s,
    date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_end) AS e
  FROM requests
  WHERE ts_start IS NOT NULL AND ts_end IS NOT NULL
),
changes AS (
  SELECT {series} s AS t, 1 AS d FROM timed
  UNION ALL
  SELECT {series} e AS t, -1 AS d FROM timed
  UNION ALL
  SELECT {series} g.t, 0 AS d
  FROM (SELECT DISTINCT {series} 0 AS one FROM timed) AS k,
    (SELECT unnest(generate_series(p.lo, p.hi, p.width)) AS t FROM p) AS g
),
levels AS (
  SELECT
    {series}
    t,
    sum(sum(d)) OVER ({partition} ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS level,
    lead(t) OVER ({partition} ORDER BY t) AS t_next
  FROM changes
  GROUP BY {series} t
)
SELECT
  {series}
  CAST(floor((t - p.lo) / p.width) AS BIGINT) * p.width + p.lo AS bucket_us,
  max(level) AS in_flight_max,
  sum(level * (t_next - t)) / max(p.width) AS in_flight_mean
FROM levels, p
WHERE t >= p.lo AND t < p.hi
GROUP BY {series} CAST(floor((t - p.lo) / p.width) AS BIGINT) * p.width + p.lo
