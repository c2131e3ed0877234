"""Benchmarks: each builds its data, measures, and checks that nothing was double-booked."""
