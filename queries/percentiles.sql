-- How long do requests take at ab's percentiles (50% 66% 75% 80% 90% 95% 98% 99% 100%)?
--
-- Linear interpolation between the two nearest requests (numpy's default, Spark's
-- percentile), where ab takes the nearest request; p100 is the slowest request. Exact,
-- from how many requests took each time (queries/parts/timer_percentiles.sql).
WITH g AS (
  SELECT count(duration_us) AS requests, max(duration_us) AS p100_us
  FROM requests
),
{timer_percentiles:requests}
SELECT
  g.requests,
  p.duration_q[1] AS p50_us,
  p.duration_q[2] AS p66_us,
  p.duration_q[3] AS p75_us,
  p.duration_q[4] AS p80_us,
  p.duration_q[5] AS p90_us,
  p.duration_q[6] AS p95_us,
  p.duration_q[7] AS p98_us,
  p.duration_q[8] AS p99_us,
  g.p100_us
FROM g
LEFT JOIN timer_percentiles AS p ON {same_group}
