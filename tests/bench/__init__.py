"""`make bench`: the app against Django's floor, measured side by side
(docs/benchmarks.md)."""
