"""The app's worker groups: started together, one index of the functions, invoked by trigger."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import pathlib

from .._errors import AppLoadError
from ._messages import InvocationRequest, InvocationResponse, RpcFunctionMetadata
from ._pool import WorkerGroup, WorkerSpec
from ._topology import Group, Topology, group_for, groups_of

INIT_INDEXING_ENV = "PYTHON_ENABLE_INIT_INDEXING"


def _init_indexing_on() -> bool:
    return os.environ.get(INIT_INDEXING_ENV, "").strip().lower() in ("1", "true")


class Workers:
    """Every worker process of the app, by group (see ``_topology``)."""

    def __init__(
        self, spec: WorkerSpec, *, topology: Topology, count: int, temp_root: pathlib.Path,
        log: logging.Logger, timeout: float | None = None,
    ) -> None:
        if spec.app is not None and topology is Topology.FLEX:
            raise AppLoadError("the flex topology runs workers in processes: give the app as a module name")
        self.topology = topology
        self._log = log
        self.groups: dict[Group, WorkerGroup] = {}
        for group in groups_of(topology):
            group_spec = spec
            if topology is Topology.FLEX:
                # Separate instances share no disk: each group gets a temp dir of its own.
                temp = temp_root / group.value
                temp.mkdir(parents=True, exist_ok=True)
                env = {**spec.environment, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
                group_spec = dataclasses.replace(spec, environment=env)
            self.groups[group] = WorkerGroup(group.value, group_spec, count, log, timeout)

    async def start(self) -> list[RpcFunctionMetadata]:
        """Start every group; the functions metadata (the same app in each) from the first."""
        try:
            results = await asyncio.gather(*(g.start() for g in self.groups.values()))
        except BaseException:
            await self.stop()
            raise
        metadata = results[0]
        if any(g.workers and g.workers[0].http_uri for g in self.groups.values()) and not _init_indexing_on():
            await self.stop()
            # The proxy worker indexes at worker init, and starts the HTTP streams server there,
            # only with this setting; without it Azure serves none of the streaming functions.
            raise AppLoadError(
                f"the app uses HTTP streams (azurefunctions-extensions-http-*): set {INIT_INDEXING_ENV}=1 "
                "in the app settings (local.settings.json Values), as Azure requires"
            )
        return metadata

    def group(self, trigger: str) -> WorkerGroup:
        return self.groups[group_for(self.topology, trigger)]

    async def invoke(self, trigger: str, request: InvocationRequest) -> InvocationResponse:
        return await self.group(trigger).invoke(request)

    @property
    def restarts(self) -> int:
        return sum(g.restarts for g in self.groups.values())

    async def stop(self) -> None:
        await asyncio.gather(*(g.stop() for g in self.groups.values()), return_exceptions=True)
