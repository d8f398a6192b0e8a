"""Benchmarks: each compares pyctrl with a peer measured in the same run."""
