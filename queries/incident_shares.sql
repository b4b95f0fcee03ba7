-- How many requests, 5xx errors and how much time did each value of a column have in each incident window and in the baseline around them?
--
-- `incident_buckets` (bucket_us, part) is given by the caller: which buckets of `width`
-- microseconds (the first parameter) belong to which part (an incident, ...); buckets in
-- none are left out. The two other parameters bound the requests' start to the parts'
-- span, so a store in time order reads only the row groups of that span. The requests are
-- summed per bucket first and the few sums joined to the parts (not every request). {series}
-- and {columns} are the columns asked about (one, or several whose combinations are few:
-- logan/answer/incidents.py sums them per column), from the fixed whitelist there
-- (CAUSE_COLUMNS), never user text. time_us and timed count only the requests that carry a
-- duration. bucket_us is an integer division (Spark's DIV), as the timeline's.
WITH p AS (
  SELECT CAST(? AS BIGINT) AS width
),
per_bucket AS (
  SELECT
    {series}
    bucket_us,
    count(*) AS requests,
    sum(CASE WHEN status BETWEEN 500 AND 599 THEN 1 ELSE 0 END) AS errors,
    sum(duration_us) AS time_us,
    count(duration_us) AS timed
  FROM (
    SELECT
      r.*,
      date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', r.ts_start) // p.width * p.width AS bucket_us
    FROM requests AS r, p
    WHERE r.ts_start >= ? AND r.ts_start < ?
  ) AS b
  GROUP BY {series} bucket_us
)
SELECT
  {series}
  w.part,
  CAST(sum(s.requests) AS BIGINT) AS requests,
  CAST(sum(s.errors) AS BIGINT) AS errors,
  sum(s.time_us) AS time_us,
  CAST(sum(s.timed) AS BIGINT) AS timed
FROM per_bucket AS s
JOIN incident_buckets AS w ON w.bucket_us = s.bucket_us
GROUP BY {series} w.part
