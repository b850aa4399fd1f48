"""The soak's verdict (tests/bench/soak.py), pure: from the samples a run took,
whether an hour of play left something behind.

A sample is `(seconds since the start, {series name: value})`. The windows scale
with the run (`Windows.for_run`): a warm-up of a fifth of the run, at most 5
minutes, and first and last windows of two fifths of what is left, at most 10
minutes: 5 and 10 minutes in an hour, 36 s and 57.6 s in 3 minutes.

- Growth (memory, open files, database connections): the median of the last
  window against the median of the first window after the warm-up, more than
  `GROWTH` (10 %) and more than the series' slack (a few files or connections
  opened and closed by chance) is growth. A series that is not in both windows
  (a process started again) is not judged.
- Tables housekeeping trims: a table whose rows are kept for less than the time
  between the start and the last window is bounded when its most rows in the
  last window exceed its most rows before that by no more than `GROWTH` (and its
  slack): a table that keeps growing fails. A table kept longer than the run
  cannot be trimmed within it: shown, not judged.
- Latency: the p99 of the pages of the last window within `DRIFT` (25 %) of the
  p99 of the first window (after the warm-up).
"""

from dataclasses import dataclass
from statistics import median

GROWTH = 0.10
DRIFT = 0.25
FULL_WARM_UP = 300.0  # seconds, as the issue sets it for an hour
FULL_WINDOW = 600.0


@dataclass(frozen=True)
class Windows:
    warm_up: float  # seconds from the start
    length: float  # seconds, of the first and the last window
    end: float  # the time of the last sample

    @classmethod
    def for_run(cls, seconds: float) -> "Windows":
        warm_up = min(FULL_WARM_UP, seconds / 5)
        return cls(warm_up, min(FULL_WINDOW, (seconds - warm_up) * 2 / 5), seconds)

    def first(self, at: float) -> bool:
        return self.warm_up <= at < self.warm_up + self.length

    def last(self, at: float) -> bool:
        return self.end - self.length <= at <= self.end


def split(samples, windows: Windows, name: str) -> tuple[list, list, list]:
    """`name`'s values in the first window, before the last window (from the
    start), and in the last window."""
    first, before, last = [], [], []
    for at, values in samples:
        if name not in values:
            continue
        if windows.first(at):
            first.append(values[name])
        if windows.last(at):
            last.append(values[name])
        else:
            before.append(values[name])
    return first, before, last


def growth(samples, windows: Windows, name: str, slack: float = 0) -> dict:
    """{'first', 'last', 'change', 'ok'}: medians of the two windows; `ok` None
    when the series is missing from either window."""
    first, _, last = split(samples, windows, name)
    if not first or not last:
        return {"first": None, "last": None, "change": None, "ok": None}
    start, end = median(first), median(last)
    change = (end - start) / start if start else (0.0 if end == start else None)
    ok = end <= start * (1 + GROWTH) or end - start <= slack
    return {"first": start, "last": end, "change": change, "ok": ok}


def bounded(
    samples, windows: Windows, name: str, kept: float, slack: float = 0
) -> dict:
    """{'before', 'last', 'ok'}: the table's most rows before the last window and
    in it; `ok` None when its rows are kept longer than the run can show (`kept`
    seconds, from the start to the last window)."""
    _, before, last = split(samples, windows, name)
    if not before or not last:
        return {"before": None, "last": None, "ok": None}
    high, end = max(before), max(last)
    judged = kept < windows.end - windows.length
    ok = (end <= high * (1 + GROWTH) or end - high <= slack) if judged else None
    return {"before": high, "last": end, "ok": ok}


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def drift(timed: list[tuple[float, float]], windows: Windows) -> dict:
    """`timed`: (when, seconds) of every page. {'first', 'last', 'ok'}: the p99
    of the first and the last window."""
    first = percentile([s for at, s in timed if windows.first(at)], 0.99)
    last = percentile([s for at, s in timed if windows.last(at)], 0.99)
    if first is None or last is None:
        return {"first": first, "last": last, "ok": None}
    return {"first": first, "last": last, "ok": last <= first * (1 + DRIFT)}


def passed(checks: dict[str, dict]) -> bool:
    """Every judged check holds, and at least one was judged."""
    judged = [check["ok"] for check in checks.values() if check["ok"] is not None]
    return bool(judged) and all(judged)
