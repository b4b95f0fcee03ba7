-- How many requests, 5xx errors and how much time did each value of a column have in each incident window and in the baseline around them?
--
-- `incident_buckets` (bucket_us, part) is given by the caller: which buckets of `width`
-- microseconds (the first parameter) belong to which part (an incident, ...); buckets in
-- none are left out. The two other parameters bound the requests' start to the parts'
-- span, so a store in time order reads only the row groups of that span. {series} is the one column asked about,
-- from the fixed whitelist in logan/answer/incidents.py (CAUSE_COLUMNS), never user text.
-- time_us and timed count only the requests that carry a duration.
WITH p AS (
  SELECT CAST(? AS BIGINT) AS width
)
SELECT
  {series}
  w.part,
  count(*) AS requests,
  sum(CASE WHEN r.status BETWEEN 500 AND 599 THEN 1 ELSE 0 END) AS errors,
  sum(r.duration_us) AS time_us,
  count(r.duration_us) AS timed
FROM requests AS r, p, incident_buckets AS w
WHERE r.ts_start >= ? AND r.ts_start < ?
  AND w.bucket_us
    = CAST(floor(date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', r.ts_start) / p.width) AS BIGINT) * p.width
GROUP BY {series} w.part
