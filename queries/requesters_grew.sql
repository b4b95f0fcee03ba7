-- Which requesters sent more requests on a day than on the day before?
--
-- The nightly report's requesters that grew, new ones included. `requests` is narrowed to
-- the two days; the one parameter is where the day starts: requests before it are the day
-- before's. A row per requester (the caller ranks them by `added` and keeps the top), and
-- beside each what the report's words need of the two days whole: the day's requesters
-- (NULL ones left out) and the day before's requests. Grouped and ranked by the engine:
-- a busy day's requesters (949,178 client addresses on one HAProxy day) never come out
-- as rows.
WITH per AS (
  SELECT
    requester,
    requester_group,
    count(*) FILTER (WHERE ts_start >= d.day_start) AS requests,
    count(*) FILTER (WHERE ts_start < d.day_start) AS before,
    CAST(sum(duration_us) FILTER (WHERE ts_start >= d.day_start) AS BIGINT) AS total_us
  FROM requests, (SELECT CAST(? AS TIMESTAMP) AS day_start) AS d
  GROUP BY requester, requester_group
)
SELECT
  requester,
  requester_group,
  requests,
  before,
  requests - before AS added,
  total_us,
  -- a sum of CASE, not count(...) FILTER: DuckDB took 4.7 s for that window over 100,000
  -- rows, and 10 ms for this one
  sum(CASE WHEN requester IS NOT NULL AND requests > 0 THEN 1 ELSE 0 END) OVER () AS day_requesters,
  sum(before) OVER () AS before_requests
FROM per
