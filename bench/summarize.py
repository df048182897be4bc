"""Prints medians, p90s and ratios from a hyperfine JSON export.

usage: summarize.py RESULTS.json BASELINE_INDEX [LABEL ...]
"""
import json
import statistics
import sys

results = json.load(open(sys.argv[1]))["results"]
baseline = int(sys.argv[2])
labels = sys.argv[3:]
base = statistics.median(results[baseline]["times"])
print(f"{'command':<44} {'median':>9} {'p90':>9} {'ratio':>7}")
for index, result in enumerate(results):
    times = sorted(result["times"])
    median = statistics.median(times)
    p90 = times[int(len(times) * 0.9)]
    label = labels[index] if index < len(labels) else result["command"][:44]
    print(f"{label:<44} {median * 1e3:8.2f}ms {p90 * 1e3:8.2f}ms {median / base:6.2f}x")
