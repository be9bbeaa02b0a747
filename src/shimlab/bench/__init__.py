"""Benchmark statistics, result files, comparison, plots and progress display."""
