"""Parse every .bicep file under the given folders with pycep-parser; exit 1 on the first that fails.

checkov parses Bicep with the same library but reports a file it cannot parse as a parsing error
and goes on, passing: this step makes a syntax error fail the build. It cannot compile: names,
types and API versions are not checked (docs/deploy.md "What the checks do not catch").
"""

import pathlib
import sys

from pycep import BicepParser


def main(folders: list[str]) -> int:
    files = sorted(f for folder in folders for f in pathlib.Path(folder).rglob("*.bicep"))
    if not files:
        print(f"bicep-parse: no .bicep files under {' '.join(folders)}", file=sys.stderr)
        return 1
    parser = BicepParser()
    for path in files:
        try:
            parser.parse(file_path=path)
        except Exception as error:  # lark's errors carry the line and column
            print(f"bicep-parse: {path}: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
    print(f"bicep-parse: {len(files)} files parsed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["infra"]))
