-- Which response times, started when, does each {dimensions} group have (the samples a test compares and a plot draws)?
--
-- One row per timed request: the group, its start (UTC) and its duration. `logan compare`
-- ranks these per group (Mann-Whitney U) and `logan plot` bins them; both need the
-- requests themselves, not a summary. {dimensions} comes from the whitelist in
-- logan/answer/views.py (DIMENSIONS), never user text.
SELECT
  {dimensions},
  ts_start,
  duration_us
FROM requests
WHERE duration_us IS NOT NULL
