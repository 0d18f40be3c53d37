"""The web console's weight and load time: what the browser fetches for the first view, and how
long headless Chromium takes to show the agents view (cold, then a reload that revalidates with
ETags), against the real `python -m devhost` and the offline model.

    python bench/console_bench.py [--loads 5]

Prints figures; asserts nothing. Needs Debian's chromium (.ci/services.sh) and playwright.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

from host_bench import Host

from agents.testing import ModelServer

ROOT = pathlib.Path(__file__).resolve().parents[1]
STATIC = ROOT / "hosting" / "console" / "static"


def _shipped() -> tuple[int, int]:
    served = (".html", ".js", ".mjs", ".css", ".svg")
    files = [p for p in STATIC.rglob("*") if p.is_file() and p.suffix in served]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import Response, sync_playwright

    count, size = _shipped()
    print(f"console files shipped: {count} files, {size / 1024:.1f} KiB uncompressed")
    with tempfile.TemporaryDirectory() as tmp, ModelServer(mode="offline") as model:
        host = Host(pathlib.Path(tmp) / "data", model.base_url, pathlib.Path(tmp) / "host.log")
        host.start()
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(
                    executable_path="/usr/bin/chromium",
                    args=["--headless", "--no-sandbox", "--disable-background-networking"],
                )
                cold: list[float] = []
                warm: list[float] = []
                statuses: dict[int, int] = {}
                fetched = 0
                for _ in range(args.loads):
                    context = browser.new_context()
                    page = context.new_page()
                    seen: list[int] = []

                    def record(response: Response, seen: list[int] = seen) -> None:
                        seen.append(response.status)

                    page.on("response", record)
                    started = time.perf_counter()
                    page.goto(f"{host.url}/api/console/#/agents")
                    page.wait_for_selector(".cards .card")
                    cold.append((time.perf_counter() - started) * 1000)
                    fetched = len(seen)
                    seen.clear()
                    started = time.perf_counter()
                    page.reload()
                    page.wait_for_selector(".cards .card")
                    warm.append((time.perf_counter() - started) * 1000)
                    for status in seen:
                        statuses[status] = statuses.get(status, 0) + 1
                    context.close()
                browser.close()
        finally:
            host.stop()
    print(f"first view (agents), new browser context: {fetched} requests; "
          f"median {statistics.median(cold):.0f} ms, best {min(cold):.0f} ms over {args.loads} loads")
    print(f"reload (ETag revalidation): median {statistics.median(warm):.0f} ms, best {min(warm):.0f} ms; "
          f"answers {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
