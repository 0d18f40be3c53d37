"""`python -m agents.testing [--host H] [--port N] [--mode offline|scripted]`: serve until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading

from ._server import ModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.testing", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--mode", choices=("offline", "scripted"), default="offline")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ModelServer(mode=args.mode, host=args.host, port=args.port) as server:
        print(f"model server ({args.mode}) listening: OPENAI_BASE_URL={server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
