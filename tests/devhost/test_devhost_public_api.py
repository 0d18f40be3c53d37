"""Pins the public names of ``devhost``."""

import devhost


def test_devhost_all_is_pinned() -> None:
    assert sorted(devhost.__all__) == [
        "AppLoadError",
        "DevHostError",
        "EntityGateway",
        "EntityIdError",
        "LocalHost",
        "RouteTemplateError",
        "encode_input",
        "list_functions",
        "main",
        "make_entity_id",
        "parse_entity_id",
    ]
    for name in devhost.__all__:
        assert getattr(devhost, name) is not None
