-- Which server events (HAProxy's "Server ... is DOWN", "... is UP", proxies started or stopped) happened, and when?
--
-- The events a timeline shows: the servers' and proxies' states, not the messages logged
-- per connection (a TCP "Connect from", a failed handshake), which are traffic.
SELECT ts, kind, server, text, source, line_no
FROM events
WHERE kind NOT IN ('connect', 'ssl_handshake_failure', 'connection_error')
ORDER BY ts, source, line_no
