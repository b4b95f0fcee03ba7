-- Which few {dimensions} groups account for most of the server time (largest first, with cumulative share)?
--
-- Template like by_dimension.sql ({dimensions} from the whitelist in logan/stats.py).
-- cumulative_share: fraction of all server time spent in this group and the larger ones;
-- group_share: fraction of groups up to this one. "20% of the routes take 80% of the time."
WITH g AS (
  SELECT {dimensions}, count(*) AS requests, CAST(sum(duration_us) AS BIGINT) AS total_us
  FROM requests
  GROUP BY {dimensions}
), ranked AS (
  SELECT
    g.*,
    row_number() OVER (ORDER BY total_us DESC NULLS LAST, requests DESC, {dimensions}) AS rank
  FROM g
)
SELECT
  {dimensions},
  rank,
  requests,
  total_us,
  total_us / nullif(sum(total_us) OVER (), 0) AS share,
  sum(total_us) OVER (ORDER BY rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    / nullif(sum(total_us) OVER (), 0) AS cumulative_share,
  rank / CAST(count(*) OVER () AS DOUBLE) AS group_share
FROM ranked
ORDER BY rank
