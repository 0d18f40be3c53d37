"""Errors raised by the local host."""

from __future__ import annotations


class DevHostError(Exception):
    """Base of every error the local host raises."""

    retryable: bool = False


class AppLoadError(DevHostError):
    """The function app could not be imported or is not a Functions app."""


class RouteTemplateError(DevHostError):
    """An HTTP trigger declares a route template the host cannot parse."""


class EntityIdError(DevHostError, ValueError):
    """An entity id is not of the form ``@name@key``."""


class EntityBatchAborted(DevHostError):
    """The entity function failed the whole batch (it raised, or answered no valid batch result):
    nothing is committed and the batch is retried later, as the Durable extension aborts it."""

    retryable = True
