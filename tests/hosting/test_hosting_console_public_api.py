"""The public surface of `hosting.console`, and how `build_app` registers (or leaves out) the console."""

from __future__ import annotations

import pathlib

import pytest
from hosting_support import all_functions, make_agents

import hosting.console
from agents.testing import ModelServer
from hosting import build_app
from hosting.console import CONTENT_SECURITY_POLICY, Console, load_assets


def test_all_is_pinned() -> None:
    assert sorted(hosting.console.__all__) == [
        "Asset",
        "CONSOLE_ROUTES",
        "CONTENT_SECURITY_POLICY",
        "Console",
        "load_assets",
    ]


def test_the_console_is_on_by_default_and_can_be_left_out(model_server: ModelServer) -> None:
    def names(console: bool) -> set[str]:
        app = build_app(make_agents(model_server), console=console)
        return {f.get_function_name() for f in all_functions(app)}

    assert names(True) - names(False) == {"console"}


def test_only_known_file_types_are_loaded(tmp_path: pathlib.Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "app.js").write_text("export {};")
    (tmp_path / "secret.py").write_text("KEY = 1")
    (tmp_path / ".env").write_text("KEY=1")
    assets = load_assets(tmp_path)
    assert sorted(assets) == ["app.js", "index.html"]
    assert assets["app.js"].content_type == "text/javascript; charset=utf-8"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY


def test_a_console_without_its_page_refuses_to_start(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"index\.html"):
        Console(load_assets(tmp_path))
