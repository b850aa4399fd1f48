"""The soak's verdict (tests/bench/soak_verdict.py) on literal series."""

import pytest

from tests.bench.soak_verdict import Windows, bounded, drift, growth, passed


def every_minute(values: list[float], name: str = "rss") -> list:
    return [(60.0 * n, {name: value}) for n, value in enumerate(values)]


HOUR = Windows.for_run(3600)


def test_an_hour_has_the_issues_windows():
    assert Windows(warm_up=300, length=600, end=3600) == HOUR
    assert [HOUR.first(at) for at in (299, 300, 899, 900)] == [0, 1, 1, 0]
    assert [HOUR.last(at) for at in (2999, 3000, 3600)] == [0, 1, 1]


def test_a_short_run_scales_its_windows():
    assert Windows.for_run(180) == Windows(warm_up=36, length=57.6, end=180)
    # Still the hour's at most, however long the run.
    assert Windows.for_run(7200) == Windows(warm_up=300, length=600, end=7200)


def test_memory_that_levels_off_after_the_warm_up_has_not_grown():
    samples = every_minute([50] + [100] * 60)  # the warm-up's rise is not growth
    assert growth(samples, HOUR, "rss") == {
        "first": 100,
        "last": 100,
        "change": 0.0,
        "ok": True,
    }


def test_memory_that_keeps_rising_has_grown():
    samples = every_minute([100 + n for n in range(61)])  # 1 a minute
    check = growth(samples, HOUR, "rss")  # medians of minutes 5-14 and 50-60
    assert (check["first"], check["last"], check["ok"]) == (109.5, 155, False)


def test_growth_of_exactly_ten_percent_is_allowed_and_more_is_not():
    assert growth(every_minute([100] * 15 + [110] * 46), HOUR, "rss")["ok"] is True
    assert growth(every_minute([100] * 15 + [111] * 46), HOUR, "rss")["ok"] is False


def test_a_few_more_files_are_within_the_slack():
    samples = every_minute([20] * 15 + [24] * 46, "files")
    assert growth(samples, HOUR, "files", slack=5)["ok"] is True
    assert growth(samples, HOUR, "files")["ok"] is False


def test_a_process_missing_from_a_window_is_not_judged():
    samples = every_minute([100] * 30) + [(60.0 * n, {}) for n in range(30, 61)]
    assert growth(samples, HOUR, "rss")["ok"] is None


def test_a_table_trimmed_by_housekeeping_is_bounded():
    # Fills for its retention, then rows leave as fast as they come.
    rows = [min(40 * n, 400) + (n % 3) for n in range(61)]
    check = bounded(every_minute(rows, "sessions"), HOUR, "sessions", kept=600)
    assert check == {"before": 402, "last": 402, "ok": True}


def test_a_table_that_keeps_growing_is_not_bounded():
    rows = [40 * n for n in range(61)]
    check = bounded(every_minute(rows, "sessions"), HOUR, "sessions", kept=600)
    assert check == {"before": 1960, "last": 2400, "ok": False}


def test_a_table_kept_longer_than_the_run_is_shown_not_judged():
    rows = [40 * n for n in range(61)]
    check = bounded(every_minute(rows, "tasks"), HOUR, "tasks", kept=86400)
    assert check == {"before": 1960, "last": 2400, "ok": None}


def test_a_table_kept_until_the_last_window_cannot_be_judged():
    # Kept 50 minutes: the last window begins at 50.
    rows = [40 * n for n in range(61)]
    assert bounded(every_minute(rows, "t"), HOUR, "t", kept=3000)["ok"] is None
    assert bounded(every_minute(rows, "t"), HOUR, "t", kept=2999)["ok"] is False


def pages(first: list[float], last: list[float]) -> list[tuple[float, float]]:
    return [(400.0, s) for s in first] + [(3500.0, s) for s in last]


def test_p99_within_a_quarter_of_the_first_windows_holds():
    check = drift(pages([0.01] * 99 + [0.100], [0.01] * 99 + [0.125]), HOUR)
    assert check == {"first": 0.100, "last": 0.125, "ok": True}


def test_p99_more_than_a_quarter_slower_fails():
    check = drift(pages([0.01] * 99 + [0.100], [0.01] * 99 + [0.126]), HOUR)
    assert check["ok"] is False


def test_pages_in_the_warm_up_and_the_middle_do_not_count():
    timed = pages([0.02] * 10, [0.02] * 10) + [(100.0, 9.0), (2000.0, 9.0)]
    assert drift(timed, HOUR) == {"first": 0.02, "last": 0.02, "ok": True}


@pytest.mark.parametrize(
    ("oks", "verdict"),
    [
        ([True, True, None], True),
        ([True, False], False),
        ([None, None], False),  # nothing judged is no pass
    ],
)
def test_the_verdict_needs_every_judged_check(oks, verdict):
    assert passed({str(n): {"ok": ok} for n, ok in enumerate(oks)}) is verdict
