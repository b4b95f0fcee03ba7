"""The nightly report: what a day of requests looked like, as sections a report is made of
(report.py), read from a logan.toml (config.py), and the unattended job that ingests every
source, builds the report and mails it (job.py)."""
