"""Reading: log lines in, `requests` rows (and `rejects`, `events`) out.

In the order a line meets them:

- sources     files, globs, .gz, stdin -> batches of lines (Arrow string views), bounded memory
- syntax      a server's format string -> literals and directives (one tokenizer per server)
- dialects    parsers/*.toml: what each directive means, the named presets
- compile     the directives -> one RE2 regex and the SQL split that reads the raw field texts
- native      the same split as a plan for the C reader (_split.c), run without the GIL
- convert     a field's text -> its typed canonical value (units, '-' as NULL), in SQL
- rows        typed fields -> `requests` columns: request line, URI, start and end times
- classify    environment, indirector, resource, route, requester (profiles and user rules)
- events      server messages that are not requests (HAProxy "Server ... is DOWN")
- detect      which preset reads a sample best (`--format auto`)
- nginx_conf  a `log_format` read from a real nginx configuration
- ingest      the loop: batches in, one transaction per batch, the closing summary

Nothing here knows what is asked of the rows afterwards (logan.answer).
"""
