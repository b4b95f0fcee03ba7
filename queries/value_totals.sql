-- How many requests, 5xx errors and how much time did each value of a column have over the whole period?
--
-- The baseline of an incident's causes is these totals less the incident windows (a plain
-- GROUP BY: a tenth of the cost of placing every request in its bucket). {series} and
-- {columns} are the columns asked about (one, or several whose combinations are few, read
-- in one pass and summed per column by logan/answer/incidents.py), from the fixed
-- whitelist there (CAUSE_COLUMNS), never user text.
SELECT
  {series}
  count(*) AS requests,
  sum(CASE WHEN status BETWEEN 500 AND 599 THEN 1 ELSE 0 END) AS errors,
  sum(duration_us) AS time_us,
  count(duration_us) AS timed
FROM requests
WHERE ts_start IS NOT NULL
GROUP BY {columns}
