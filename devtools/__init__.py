"""Developer tools kept apart from the app: the demo data (seed_demo) and the benchmarks (bench_*)."""
