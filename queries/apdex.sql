-- What share of requests per {dimensions} finish within the threshold ({slo_us} us), and what is their Apdex score?
--
-- Template like by_dimension.sql: {dimensions} from the whitelist in logan/stats.py and
-- {slo_us}, an integer the caller validated; {group_rows}: every row, or those of the groups
-- an answer shows (logan/answer/stats.py). Only timed requests count. Apdex with
-- threshold T: satisfied <= T, tolerating <= 4T, score = (satisfied + tolerating / 2) / n;
-- a 5xx answer is never satisfied nor tolerating, however fast (it failed).
SELECT
  {dimensions},
  count(*) AS timed_requests,
  avg(CASE WHEN duration_us <= {slo_us} AND NOT coalesce(status BETWEEN 500 AND 599, false)
      THEN 1.0 ELSE 0.0 END) AS slo_share,
  avg(CASE WHEN coalesce(status BETWEEN 500 AND 599, false) THEN 0.0
           WHEN duration_us <= {slo_us} THEN 1.0
           WHEN duration_us <= 4 * {slo_us} THEN 0.5
           ELSE 0.0 END) AS apdex
FROM ({group_rows}) AS g
WHERE duration_us IS NOT NULL
GROUP BY {dimensions}
