-- How long do requests take at ab's percentiles (50% 66% 75% 80% 90% 95% 98% 99% 100%)?
--
-- Linear interpolation between the two nearest requests (numpy's default, Spark's
-- percentile), where ab takes the nearest request; p100 is the slowest request.
SELECT
  count(duration_us) AS requests,
  quantile_cont(duration_us, 0.5) AS p50_us,
  quantile_cont(duration_us, 0.66) AS p66_us,
  quantile_cont(duration_us, 0.75) AS p75_us,
  quantile_cont(duration_us, 0.8) AS p80_us,
  quantile_cont(duration_us, 0.9) AS p90_us,
  quantile_cont(duration_us, 0.95) AS p95_us,
  quantile_cont(duration_us, 0.98) AS p98_us,
  quantile_cont(duration_us, 0.99) AS p99_us,
  max(duration_us) AS p100_us
FROM requests
