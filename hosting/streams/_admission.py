"""Starting a run exactly once, for the JSON and the SSE paths alike: a claim per run in the store.

The submit path (hosting.client `Submitter.submit`) has read the session and answered what the
stored state settles (an unreadable state, a finished run, a discarded one, a full session). What
remains is a run that is not stored: new, or still pending. The first request for it records a
`RunClaim` (its request identity and whether it streams live) atomically in the stream store,
which every process and instance shares, and sends the turn; a later request for the same run
finds the claim and either attaches to the pending run (same request) or is refused at once
(another request: the edge answers 409 `idempotency_conflict`), as a stored run's retry would be.

The claim never decides alone whether a turn runs: the entity answers a correlation id it has
stored from its state and runs a turn once. So a claim with no event yet (its turn may never have
been sent: the host died between the claim and the signal) is sent again, and a store that cannot
be reached stops only the callers that read the stream: the others send without a claim.

Each run claimed also becomes its session's latest claimed run (`latest_run`), a record of the
session's own (no user named in it): what the edge reads to learn that a run of the session is in
flight before the stored state can show it (a turn's first step is stored when it ends), and whose
run it is (its claim names the user).

What sending takes is handed in as values (`Dispatch`), so the turn's walk never comes back into
its caller: what goes first (a webhook's delivery, stored before the run can end), the marks an
`interrupt` run sets, the signal, and what to tell the caller once it was sent.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ._store import RunClaim, StreamKey, StreamStore, StreamStoreUnavailable

log = logging.getLogger("hosting.streams")

_CLAIM_USER = " user="


def claim_identity(request_hash: str, user: str | None) -> str:
    """The identity a run's claim in the stream store records: the request's hash and, for a
    caller acting for a user, that user (a pending run is joined only by a caller acting for the
    same user: before the session is stored there is no owner to check)."""
    return request_hash if user is None else f"{request_hash}{_CLAIM_USER}{user}"


def claimed_user(identity: str | None) -> tuple[str | None, str | None]:
    """(request hash, user) of a claim's identity (`claim_identity`)."""
    if identity is None or _CLAIM_USER not in identity:
        return identity, None
    request_hash, user = identity.split(_CLAIM_USER, 1)
    return request_hash, user


class Admission(enum.Enum):
    """What `start_run` did with a request."""

    SENT = "sent"
    """This request sent the turn."""
    JOINED = "joined"
    """The same request for the run is pending: this one attaches to it, nothing sent."""
    CONFLICT = "conflict"
    """Another request for the run is pending (`same_request` said no): nothing sent."""
    HIDDEN = "hidden"
    """Another user's request for the run is pending: nothing sent (their session, once stored, is
    theirs alone; until then only the claim knows its owner)."""


@dataclass(frozen=True)
class Dispatch:
    """How a claimed run is sent, in order: `before`, the `interrupts` marked (cancel requests:
    a step in flight that the stored state does not show yet stops at its mark), `signal`, then
    `on_sent` (even when what follows fails)."""

    signal: Callable[[], Awaitable[object]]
    before: Callable[[], Awaitable[object]] | None = None
    interrupts: tuple[StreamKey, ...] = ()
    on_sent: Callable[[], None] | None = None


async def start_run(
    store: StreamStore | None,
    key: StreamKey,
    claim: RunClaim,
    *,
    user_id: str | None,
    same_request: Callable[[str | None, None], bool],
    dispatch: Dispatch,
    streamed: bool = False,
) -> Admission:
    """Send the run's turn (`dispatch`) unless a request for the same run is pending.

    A pending run is joined by the same request (`same_request(request_hash, None)`) of the same
    user (`user_id`; of anyone, for a run of no one in particular). `streamed`: the
    caller reads the run's stream, so a store it cannot use (`StreamStoreUnavailable`) is its
    answer; any other caller then sends without a claim. Without a store every request sends (the
    entity answers a repeated id from its state and runs a turn once)."""
    if store is None:
        await _send(None, dispatch)
        return Admission.SENT
    try:
        earlier = await _claim(store, key, claim, user_id, same_request)
    except StreamStoreUnavailable as error:
        if streamed:
            raise
        log.warning("run %s: sent without a claim (%s)", key, error)
        await _send(store, dispatch)
        return Admission.SENT
    if earlier is not None:
        return earlier
    try:
        # The note alongside the send: not one more round trip on the way to the first token.
        await asyncio.gather(_note_latest(store, key), _send(store, dispatch))
    except BaseException:
        # Not sent: a retry must be able to send it.
        try:
            await store.release(key)
        except Exception:
            log.exception("could not release the claim of run %s", key)
        raise
    return Admission.SENT


async def _send(store: StreamStore | None, dispatch: Dispatch) -> None:
    if dispatch.before is not None:
        await dispatch.before()
    if store is not None:
        await _mark(store, dispatch.interrupts)
    await dispatch.signal()
    if dispatch.on_sent is not None:
        dispatch.on_sent()


async def _mark(store: StreamStore, keys: tuple[StreamKey, ...]) -> None:
    for marked in keys:
        try:
            await store.request_cancel(marked)
        except Exception:
            # The entity cancels them between steps whatever happens here.
            log.warning(
                "run %s: the interrupt could not be marked in the stream store", marked.text(), exc_info=True
            )


async def _claim(
    store: StreamStore,
    key: StreamKey,
    claim: RunClaim,
    user_id: str | None,
    same_request: Callable[[str | None, None], bool],
) -> Admission | None:
    """Claim the run: JOINED, CONFLICT or HIDDEN when a pending run holds it (nothing to send),
    None when this request must send the turn."""
    earlier = await store.claim(key, claim)
    if earlier is None:
        return None
    last = await store.last(key)
    if last is not None and last.terminal:
        # Closed, yet the caller found no stored run: its record is gone (the session was
        # deleted) or the host died between publishing the answer and storing it (then the
        # entity answers this second signal from its state). Either way: a new claim, sent.
        await store.claim(key, claim, replace=True)
        return None
    # Pending: attach to it, never a second turn.
    request_hash, owner = claimed_user(earlier.request_hash)
    if owner is not None and owner != user_id:
        return Admission.HIDDEN
    if not same_request(request_hash, None):
        return Admission.CONFLICT
    if claim.live and not earlier.live:
        # A stream asked for after a waiting JSON request: stream the model if the entity has
        # not begun the turn yet (it reads the claim when it does).
        await store.claim(key, RunClaim(earlier.request_hash, True), replace=True)
    if last is None:
        # Claimed, and no event yet: queued behind another turn of the session, or never sent
        # (the host died between the claim and the signal). Send it again: the entity runs a
        # correlation id once and answers a repeat from its state.
        return None
    return Admission.JOINED


def _latest_key(agent: str, session_id: str) -> StreamKey:
    # The session's own key (no run has the empty id); in the claims, apart from its interrupt mark.
    return StreamKey.interrupt(agent, session_id)


async def _note_latest(store: StreamStore, key: StreamKey) -> None:
    """Record `key`'s run as its session's latest claimed run (a hint: never fails the run)."""
    try:
        await store.claim(
            _latest_key(key.agent, key.session_id), RunClaim(key.correlation_id, live=False), replace=True
        )
    except Exception:
        log.warning("run %s: could not be noted as its session's latest run", key, exc_info=True)


async def latest_run(store: StreamStore, agent: str, session_id: str) -> tuple[StreamKey, RunClaim] | None:
    """The session's latest claimed run and its claim while the run is in flight (claimed, and its
    stream not closed); None when there is none, or the store cannot tell."""
    try:
        latest = await store.claimed(_latest_key(agent, session_id))
        if latest is None or not latest.request_hash:
            return None
        key = StreamKey(agent, session_id, latest.request_hash)
        claim, last = await store.opening(key)
    except StreamStoreUnavailable:
        return None
    if claim is None or (last is not None and last.terminal):
        return None
    return key, claim
