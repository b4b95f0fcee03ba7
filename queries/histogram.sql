-- How are response times spread on a log scale (buckets 1-2-5 per decade, like hey's histogram)?
--
-- A bucket [lo_us, hi_us) starts at 1, 2 or 5 times a power of ten, found from the digits of
-- the duration (exact, no floating-point log). Durations under 1 us fall in [0, 1).
-- Empty buckets are not listed.
WITH d AS (
  SELECT
    duration_us AS us,
    CAST(duration_us AS VARCHAR) AS digits
  FROM requests
  WHERE duration_us IS NOT NULL
), b AS (
  SELECT
    CASE
      WHEN us < 1 THEN 0
      ELSE CAST(power(10, length(digits) - 1) AS BIGINT)
        * CASE WHEN substr(digits, 1, 1) = '1' THEN 1
               WHEN substr(digits, 1, 1) IN ('2', '3', '4') THEN 2
               ELSE 5 END
    END AS lo_us
  FROM d
)
SELECT
  lo_us,
  CASE
    WHEN lo_us = 0 THEN 1
    WHEN substr(CAST(lo_us AS VARCHAR), 1, 1) = '2' THEN CAST(lo_us * 5 / 2 AS BIGINT)
    ELSE lo_us * 2
  END AS hi_us,
  count(*) AS requests,
  count(*) / CAST(sum(count(*)) OVER () AS DOUBLE) AS share,
  sum(count(*)) OVER (ORDER BY lo_us ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    / CAST(sum(count(*)) OVER () AS DOUBLE) AS cumulative_share
FROM b
GROUP BY lo_us
ORDER BY lo_us
