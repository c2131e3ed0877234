"""Prometheus metrics: events counted by every process, state read from the database at scrape time.

A sibling of capacity: it reads capacity through capacity.port alone, and capacity never imports it.
events: counters and histograms of what capacity tells its observers (capacity.observe), written to
prometheus-client multiprocess files, one per process, in a directory the web and worker processes
share; store: that directory, its dead processes folded into an archive, read under a lock; state:
pending reservations and pool capacity computed from the database when scraped; view: `/metrics`.
"""
