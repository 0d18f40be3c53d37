"""Write tests/durations.json, the order the parallel suite takes (tests/conftest.py), from JUnit
reports: `make unit PYTEST_ARGS=--junitxml=unit.xml`, then `python .ci/durations.py unit.xml`.

Each test's time is its whole time (setup, call, teardown), the longest of the reports given;
tests under half a second are left out (the order counts them as half a second).
"""

from __future__ import annotations

import json
import pathlib
import sys
import xml.etree.ElementTree as ET

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "durations.json"


def node_id(classname: str, name: str) -> str:
    """The pytest node id of a JUnit test case: its module's path, then classes, then the name."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (REPO / path).is_file():
            return "::".join([path, *parts[cut:], name])
    raise SystemExit(f"no test module for {classname!r}")


def main(reports: list[str]) -> None:
    times: dict[str, float] = {}
    for report in reports:
        for case in ET.parse(report).iter("testcase"):
            key = node_id(case.get("classname", ""), case.get("name", ""))
            times[key] = max(times.get(key, 0.0), float(case.get("time", "0")))
    kept = {key: round(value, 1) for key, value in sorted(times.items()) if value >= 0.5}
    OUT.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
    print(f"{OUT.relative_to(REPO)}: {len(kept)} of {len(times)} tests, {sum(times.values()):.0f} s in all")


if __name__ == "__main__":
    main(sys.argv[1:])
