"""Prometheus metrics: events counted by every process, state read from the database at scrape time.

events: counters and histograms the placers and services write (prometheus-client multiprocess
files, one per process, in a directory the web and worker processes share); store: that
directory, its dead processes folded into an archive, read under a lock; state: pending
reservations and pool capacity computed from the database when scraped; view: `/metrics`.
"""
