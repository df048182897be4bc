"""Timing helpers shared by the Python halves of the benchmarks."""
import statistics
import time

WARMUP = 20


def stats(times):
    """Median and 90th percentile of `times`."""
    times = sorted(times)
    return statistics.median(times), times[int(len(times) * 0.9)]


def measure(label, once, count):
    """Calls `once` `count` times after a warm-up; (label, median, p90, count) in seconds."""
    for _ in range(min(WARMUP, count)):
        once()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        once()
        times.append(time.perf_counter() - started)
    return (label, *stats(times), count)


async def measure_async(label, once, count):
    """`measure` for a coroutine function."""
    for _ in range(min(WARMUP, count)):
        await once()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await once()
        times.append(time.perf_counter() - started)
    return (label, *stats(times), count)
