-- Which server events (HAProxy's "Server ... is DOWN", "... is UP") happened, and when?
SELECT ts, kind, server, text, source, line_no
FROM events
ORDER BY ts, source, line_no
