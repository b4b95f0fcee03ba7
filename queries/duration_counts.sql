-- How many timed requests of each {dimensions} group took each response time?
--
-- What `logan compare` ranks: a Mann-Whitney U test needs each request's rank among both
-- sides' requests of its group, and requests of equal duration share one rank, so a count
-- per duration is all it reads (never more rows than requests, far fewer when durations
-- repeat), where fetching every request took longer than the test. {dimensions} comes
-- from the whitelist in logan/answer/views.py (DIMENSIONS), never user text.
SELECT
  {dimensions},
  duration_us,
  count(*) AS n
FROM requests
WHERE duration_us IS NOT NULL
GROUP BY {dimensions}, duration_us
