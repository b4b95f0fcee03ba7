-- How many requests start in each bucket of `width` microseconds (the one parameter)?
--
-- What a long timeline is cut by (logan/answer/timeline.py): slices of whole buckets, each
-- of a bounded number of requests, answered one after another, so that no answer holds a
-- whole store's times at once. bucket_us is the bucket's start in epoch microseconds, as
-- queries/timeline.sql has it.
SELECT
  date_diff('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts_start) // w.width * w.width AS bucket_us,
  count(*) AS requests
FROM requests, (SELECT CAST(? AS BIGINT) AS width) AS w
WHERE ts_start IS NOT NULL
GROUP BY 1
ORDER BY 1
