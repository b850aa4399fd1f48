"""Fail unless each JUnit report named exists, counts tests that ran and none that
failed: .ci/run's proof that both passes of `make test` ran. A pass that never
started leaves no report (make test removes the previous ones first).

Usage: python .ci/check_test_reports.py REPORT.xml...
"""

import sys
import xml.etree.ElementTree as ElementTree

COUNTS = ("tests", "skipped", "failures", "errors")


def problems(path: str) -> list[str]:
    try:
        root = ElementTree.parse(path).getroot()
    except FileNotFoundError:
        return [f"{path}: no report: that pass of make test did not run"]
    except ElementTree.ParseError as exc:
        return [f"{path}: not a readable JUnit report ({exc})"]
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = {key: sum(int(suite.get(key, 0)) for suite in suites) for key in COUNTS}
    found = []
    if total["tests"] - total["skipped"] <= 0:
        found.append(f"{path}: no test ran")
    if total["failures"] or total["errors"]:
        found.append(f"{path}: {total['failures']} failed, {total['errors']} errors")
    if not found:
        print(f"{path}: {total['tests'] - total['skipped']} tests ran, all passed")
    return found


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = [problem for path in paths for problem in problems(path)]
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
