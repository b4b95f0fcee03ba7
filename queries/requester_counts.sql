-- How many requests did each requester send, and how much server time did they take?
--
-- Counts only (no percentiles): the nightly report compares them between two days to find
-- the requesters that grew, over every requester of a busy day.
SELECT
  requester,
  requester_group,
  count(*) AS requests,
  CAST(sum(duration_us) AS BIGINT) AS total_us
FROM requests
GROUP BY requester, requester_group
