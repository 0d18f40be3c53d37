"""`make console-assets`: copy the console's browser libraries from `node_modules/` (installed by
`npm ci` from the committed package-lock.json) into `static/vendor/`.

The copies are committed, so the app never needs npm or a network; `--check` (and a test) fails
when a copy differs from what the lockfile installs. Source-map comments are dropped: the maps
are not shipped, and a browser would otherwise ask for them.

    python -m hosting.console._vendor [--check] [--node-modules DIR]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

from ._assets import STATIC_DIR

REPO = STATIC_DIR.parents[2]
VENDOR_DIR = STATIC_DIR / "vendor"

# (npm package, file inside the package, name under static/vendor/)
FILES: tuple[tuple[str, str, str], ...] = (
    ("marked", "lib/marked.esm.js", "marked.esm.js"),
    ("marked", "LICENSE", "licenses/marked.txt"),
    ("dompurify", "dist/purify.es.mjs", "purify.es.mjs"),
    ("dompurify", "LICENSE", "licenses/dompurify.txt"),
    ("eventsource-parser", "dist/index.js", "eventsource-parser/index.js"),
    ("eventsource-parser", "dist/parse.js", "eventsource-parser/parse.js"),
    ("eventsource-parser", "dist/errors.js", "eventsource-parser/errors.js"),
    ("eventsource-parser", "LICENSE", "licenses/eventsource-parser.txt"),
)

_SOURCE_MAP = re.compile(rb"\n?//# sourceMappingURL=\S+\s*$")


def vendored(node_modules: pathlib.Path) -> dict[str, bytes]:
    """What `static/vendor/` must hold, built from an installed `node_modules/`."""
    out: dict[str, bytes] = {}
    versions: dict[str, str] = {}
    for package, source, target in FILES:
        root = node_modules / package
        body = (root / source).read_bytes()
        out[target] = _SOURCE_MAP.sub(b"\n", body) if target.endswith((".js", ".mjs")) else body
        versions[package] = json.loads((root / "package.json").read_text())["version"]
    out["versions.json"] = (json.dumps(versions, indent=2, sort_keys=True) + "\n").encode()
    return out


def differences(node_modules: pathlib.Path, vendor_dir: pathlib.Path = VENDOR_DIR) -> list[str]:
    """The vendored files that are missing, stale or extra (empty: up to date)."""
    expected = vendored(node_modules)
    present = {p.relative_to(vendor_dir).as_posix() for p in vendor_dir.rglob("*") if p.is_file()}
    problems = [f"missing {name}" for name in sorted(set(expected) - present)]
    problems += [f"extra {name}" for name in sorted(present - set(expected))]
    problems += [
        f"stale {name}"
        for name in sorted(set(expected) & present)
        if (vendor_dir / name).read_bytes() != expected[name]
    ]
    return problems


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the vendored copies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only report differences")
    parser.add_argument("--node-modules", type=pathlib.Path, default=REPO / "node_modules")
    args = parser.parse_args(argv)
    if args.check:
        problems = differences(args.node_modules)
        for problem in problems:
            print(f"console assets: {problem} (run `make console-assets`)", file=sys.stderr)
        return 1 if problems else 0
    for name, body in vendored(args.node_modules).items():
        target = VENDOR_DIR / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    for stale in differences(args.node_modules):
        if stale.startswith("extra "):
            (VENDOR_DIR / stale.removeprefix("extra ")).unlink()
    print(f"console assets: {len(FILES) + 1} files in {VENDOR_DIR.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
