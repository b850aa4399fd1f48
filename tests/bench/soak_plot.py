"""The soak's plot (tests/bench/soak.py), drawn with Pillow: one panel per kind
of figure (memory, open files, connections and rows, latency), a line per
series over the run's seconds, the warm-up (grey) and the two windows the
verdict compares (blue) shaded."""

from pathlib import Path

from PIL import Image, ImageDraw

WIDTH, PANEL, MARGIN = 900, 220, 60
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def owner_sums(samples: list[dict], kind: str) -> dict[str, list]:
    """`kind` ("rss", "files") summed per owner (host n, nginx), per sample."""
    owners: dict[str, list] = {}
    for entry in samples:
        totals: dict[str, float] = {}
        for name, value in entry["values"].items():
            if name.startswith(kind + " "):
                owner = " ".join(name.split()[1:-2])
                totals[owner] = totals.get(owner, 0) + value
        for owner, total in totals.items():
            owners.setdefault(owner, []).append((entry["at"], total))
    return owners


def named(samples: list[dict], names: list[str]) -> dict[str, list]:
    return {
        name: [
            (e["at"], e["values"][name])
            for e in samples
            if e["values"].get(name) is not None
        ]
        for name in names
    }


def panels(results: dict) -> list[tuple[str, dict[str, list]]]:
    samples = results["samples"]
    rows = [n for n in samples[0]["values"] if n.startswith("rows ")]
    return [
        ("RSS, MB", owner_sums(samples, "rss")),
        ("open files", owner_sums(samples, "files")),
        ("connections, rows", named(samples, ["connections", *rows])),
        ("ms", named(samples, ["page p50 ms", "page p99 ms", "event p95 ms"])),
    ]


def draw(results: dict, path: Path) -> None:
    shown = panels(results)
    image = Image.new("RGB", (WIDTH, PANEL * len(shown) + 20), "white")
    pen = ImageDraw.Draw(image)
    end = max(results["samples"][-1]["at"], 1)
    windows = results["windows"]
    left, right = MARGIN, WIDTH - 220

    def x(at: float) -> float:
        return left + (right - left) * at / end

    for n, (title, lines) in enumerate(shown):
        top, bottom = 20 + n * PANEL, 20 + (n + 1) * PANEL - 40
        for start, stop, fill in (
            (0, windows["warm_up"], "#dddddd"),
            (windows["warm_up"], windows["warm_up"] + windows["length"], "#e8f0fc"),
            (end - windows["length"], end, "#e8f0fc"),
        ):
            pen.rectangle([x(start), top, x(stop), bottom], fill=fill)
        pen.rectangle([left, top, right, bottom], outline="black")
        # Scaled to what follows the warm-up; the warm-up's peaks run off the top.
        after = [
            v
            for points in lines.values()
            for at, v in points
            if at >= windows["warm_up"]
        ]
        high = max(after or [0]) * 1.1 or 1
        pen.text((left, top - 14), title, fill="black")
        pen.text((4, top), f"{high:.0f}", fill="black")
        pen.text((4, bottom - 10), "0", fill="black")
        pen.text((right - 30, bottom + 4), f"{end:.0f} s", fill="black")
        for k, (name, points) in enumerate(lines.items()):
            colour = COLOURS[k % len(COLOURS)]
            xy = [
                (x(at), bottom - (bottom - top) * min(v, high) / high)
                for at, v in points
            ]
            if len(xy) > 1:
                pen.line(xy, fill=colour, width=2)
            pen.text((right + 10, top + 14 * k), name, fill=colour)
    path.parent.mkdir(exist_ok=True)
    image.save(path)
