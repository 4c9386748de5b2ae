"""Benchmarks: they print figures and assert nothing about time."""
