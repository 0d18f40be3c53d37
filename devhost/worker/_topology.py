"""Which worker group runs which function: one group, or Flex Consumption's split.

On Flex Consumption, HTTP functions (with MCP tool triggers) and Durable functions
(orchestrations, activities, entities) scale as separate groups on separate instances, so an
HTTP handler and the entity batch of its turn never share a process. ``--topology flex`` (or
``DEVHOST_TOPOLOGY=flex``) runs the two groups in separate worker processes, each group with its
own temp dir; nothing passes between them but the host, the stores and the network.
"""

from __future__ import annotations

import enum
import os

from .._errors import AppLoadError

TOPOLOGY_ENV = "DEVHOST_TOPOLOGY"


class Topology(enum.StrEnum):
    SINGLE = "single"  # every function in one group of workers (a Functions app on one instance)
    FLEX = "flex"  # HTTP/MCP and Durable functions in separate groups, as Flex Consumption scales them


class Group(enum.StrEnum):
    APP = "app"
    HTTP = "http"
    DURABLE = "durable"


DURABLE_TRIGGERS = frozenset({"entityTrigger", "orchestrationTrigger", "activityTrigger"})


def topology_from(value: str | None) -> Topology:
    raw = (value if value is not None else os.environ.get(TOPOLOGY_ENV, "")).strip().lower() or "single"
    try:
        return Topology(raw)
    except ValueError:
        raise AppLoadError(f"unknown topology {raw!r}: use 'single' or 'flex'") from None


def groups_of(topology: Topology) -> tuple[Group, ...]:
    return (Group.APP,) if topology is Topology.SINGLE else (Group.HTTP, Group.DURABLE)


def group_for(topology: Topology, trigger: str) -> Group:
    if topology is Topology.SINGLE:
        return Group.APP
    return Group.DURABLE if trigger in DURABLE_TRIGGERS else Group.HTTP
