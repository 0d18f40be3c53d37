"""Extensions: functions an app registers next to its agents' own (HTTP routes, orchestrators).

`build_app` registers exactly the extensions it is given, nothing by itself. An extension's routes
are route-table entries like the agent routes, so they are registered and documented in the
OpenAPI document by the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import azure.functions as func
from pydantic import BaseModel, ValidationError

from ._handlers import Handler
from ._settings import ApiSettings
from .http import RouteSpec, parse_json_object, validation_problem

M = TypeVar("M", bound=BaseModel)



def _no_handlers(settings: ApiSettings) -> Mapping[str, Handler]:
    return {}


@dataclass(frozen=True)
class Extension:
    """What an app adds to `build_app(agents, extensions=[...])`.

    * `routes`: route-table entries; each becomes an HTTP function named `RouteSpec.function` and
      an entry of the OpenAPI document.
    * `handlers(settings)`: the handler of every route's function, by function name (made once per
      app, with the app's `ApiSettings`).
    * `orchestrators`: orchestrator functions by name (generator functions of the context).
    * `requires_agents`: agent names that must be hosted (checked at build time).
    """

    name: str
    routes: Sequence[RouteSpec] = ()
    handlers: Callable[[ApiSettings], Mapping[str, Handler]] = _no_handlers
    orchestrators: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    requires_agents: Sequence[str] = ()


def parse_body(req: func.HttpRequest, model: type[M], settings: ApiSettings) -> M:
    """An extension route's JSON body as `model`, with the API's rules: at most
    `settings.max_body_bytes`, a JSON object, no lone surrogates; a 400/413/415 problem naming
    the field otherwise (what the agent routes answer)."""
    raw = parse_json_object(req, settings.max_body_bytes)
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise validation_problem(error) from error
