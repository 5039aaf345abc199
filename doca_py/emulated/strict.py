"""Strict mode and the seeded CI knobs of the emulated backend.

Hardware leaves much misuse undefined: a buffer re-aimed while a task reads it, a
task freed in flight, completions assumed to come in submission order. A BlueField
turns these into corrupt data or a crash later and elsewhere; the emulator can say
so at the call that broke the rule. Read once, at import, from the environment:

``DOCA_PY_STRICT=1``
    Check what DOCA leaves undefined and raise :class:`~doca_py.errors.DocaUsageError`
    naming the object, the task and the rule. On by default under the test suite and
    ``apps.topology``; off by default elsewhere (it costs a little per task).
``DOCA_PY_EMU_SHUFFLE=1``
    Deliver the task completions of one ``progress()`` in a seeded random order, across
    every ctx of the Pe (DOCA promises no order). Events of one connection (messages,
    connection and state changes) keep their order.
``DOCA_PY_EMU_FAULTS=KIND=RATE[:CODE],...``
    Fail tasks of a kind with a seeded probability, with the error hardware reports
    (each task kind has a default; ``CODE`` is an ``ErrorCode`` name). ``KIND`` is a task
    kind (:data:`KINDS`) or ``*`` for all. ``comch_producer_send`` faults are ``AGAIN``
    returned by ``submit`` itself, as DOCA does when the consumer has no receive posted.
``DOCA_PY_EMU_SEED=N``
    Seed of both knobs (random when unset). :func:`describe` prints it so a failing run
    can be replayed.

No decision draws from a running generator: each is a hash (blake2b) of the seed, the
current :func:`reseed` token (the test suite passes the test's id, a ``doca_pair`` side its
role) and the identity of what is decided. A task's identity is its ctx's type and creation
number under the token (:func:`ctx_id`: ``EmuRdma#0``), its task pool's place in the ctx
and its submission number in that pool (:func:`task_id`: ``EmuRdma#0/3#17``), all fixed
by the application's own calls. So whether a task is failed (:func:`fault`) does not depend
on how many decisions came before, on which ``progress()`` launched the task, or on what
the other side of a two-process run did meanwhile: a seed replays the same faults into the
same tasks. Shuffling keys each item of a batch the same way (:func:`order_key`): the same
items in a batch always get the same order; which items one ``progress()`` finds together
still depends on timing (see ``doca_py.emulated.pe``). :func:`injected` lists the faults
injected since the last :func:`reseed`.
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import NamedTuple

from ..errors import DocaUsageError, ErrorCode
from . import trace

__all__ = ["STRICT", "SHUFFLE", "SEED", "FAULTS", "FAULTS_ON", "KINDS", "Fault", "violation", "ctx_id", "task_id",
           "order_key", "uniform", "fault_rate", "fault", "injected", "describe", "parse_faults", "configure", "reseed"]

#: Task kinds that fault injection knows, with the status hardware reports for each.
KINDS: dict[str, int] = {
    "dma_memcpy": int(ErrorCode.IO_FAILED),
    "ec_create": int(ErrorCode.IO_FAILED),
    "ec_recover": int(ErrorCode.IO_FAILED),
    "ec_update": int(ErrorCode.IO_FAILED),
    "ec_galois_mul": int(ErrorCode.IO_FAILED),
    "compress_deflate": int(ErrorCode.IO_FAILED),
    "decompress_deflate": int(ErrorCode.IO_FAILED),
    "decompress_lz4_stream": int(ErrorCode.IO_FAILED),
    "decompress_lz4_block": int(ErrorCode.IO_FAILED),
    "rdma_send": int(ErrorCode.CONNECTION_RESET),
    "rdma_receive": int(ErrorCode.CONNECTION_RESET),
    "rdma_read": int(ErrorCode.CONNECTION_RESET),
    "rdma_write": int(ErrorCode.CONNECTION_RESET),
    "rdma_atomic": int(ErrorCode.CONNECTION_RESET),
    "comch_send": int(ErrorCode.AGAIN),
    "comch_producer_send": int(ErrorCode.AGAIN),
    "comch_consumer_post_recv": int(ErrorCode.CONNECTION_RESET),
}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def parse_faults(spec: str) -> dict[str, tuple[float, int]]:
    """``"dma_memcpy=0.01,*=0.001:IO_FAILED"`` → ``{kind: (rate, code)}``; ``ValueError`` if malformed."""
    out: dict[str, tuple[float, int]] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        kind, sep, rest = item.partition("=")
        if not sep:
            raise ValueError(f"DOCA_PY_EMU_FAULTS: {item!r} is not KIND=RATE[:CODE]")
        rate_text, _, code_text = rest.partition(":")
        rate = float(rate_text)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"DOCA_PY_EMU_FAULTS: rate {rate} of {kind!r} is not in [0, 1]")
        kinds = list(KINDS) if kind == "*" else [kind]
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"DOCA_PY_EMU_FAULTS: unknown task kind {k!r} (one of {', '.join(KINDS)}, *)")
            try:
                code = int(ErrorCode[code_text.strip().upper()]) if code_text else KINDS[k]
            except KeyError:
                raise ValueError(f"DOCA_PY_EMU_FAULTS: {code_text!r} is not an ErrorCode name") from None
            out[k] = (rate, code)
    return out


STRICT = False
SHUFFLE = False
SEED = 0
FAULTS: dict[str, tuple[float, int]] = {}
#: Whether :data:`FAULTS` holds any kind: the per-task test of the hot paths. A bool, not the dict: on a
#: free-threaded build reading a module's dict attribute writes the dict's reference count, one cache
#: line that every worker thread would write on every task (measured: ~5 % CPU per task with two).
#: :func:`configure` keeps it in step; code that replaces :data:`FAULTS` sets it too.
FAULTS_ON = False
_token = ""
_base = b""  # the hash prefix of every decision: seed and token
_ctxs_made: dict[str, int] = {}  # ctxs made per type under the current token
#: At most this many injected faults are kept for :func:`injected` (the count goes on).
MAX_RECORDED = 10_000


class Fault(NamedTuple):
    """One injected fault: which task (:func:`task_id`), its kind and the status it got."""

    task: str
    kind: str
    status: str


_injected: list[Fault] = []


def configure(strict: bool | None = None, shuffle: bool | None = None, faults: str | None = None,
              seed: int | None = None) -> None:
    """Set the knobs (``None``: from the environment). Tasks already allocated keep
    their pinning behaviour; call before creating objects."""
    global STRICT, SHUFFLE, SEED, FAULTS, FAULTS_ON
    STRICT = _flag("DOCA_PY_STRICT") if strict is None else strict
    SHUFFLE = _flag("DOCA_PY_EMU_SHUFFLE") if shuffle is None else shuffle
    FAULTS = parse_faults(os.environ.get("DOCA_PY_EMU_FAULTS", "") if faults is None else faults)
    FAULTS_ON = bool(FAULTS)
    if seed is None:
        text = os.environ.get("DOCA_PY_EMU_SEED", "").strip()
        seed = int(text) if text else random.SystemRandom().randrange(1 << 31)
    SEED = seed
    reseed(_token)


def violation(obj: object, rule: str) -> DocaUsageError:
    """The error strict mode raises: names the object and the DOCA rule it broke (also kept as the
    error's ``doca_rule`` attribute, so a teardown that breaks it for many objects says so once)."""
    trace.finding(f"{obj!r}: {rule}")  # trace hook: strict-mode finding
    err = DocaUsageError(f"strict mode: {obj!r}: {rule} (DOCA leaves this undefined; hardware would "
                         f"corrupt data or fail later) [DOCA_PY_STRICT=0 turns the check off]")
    setattr(err, "doca_rule", rule)  # noqa: B010 - an attribute of this instance only
    return err


def reseed(token: str) -> None:
    """Start a new series of identities under *token*: ctxs are numbered from 0 again and the
    record of injected faults is emptied, so the same seed and token give the same decisions
    whatever came before in the process (a test harness calls this with each test's id, a
    ``doca_pair`` side with its role)."""
    global _token, _base
    _token = token
    _base = f"{SEED}/{token}/".encode()
    _ctxs_made.clear()
    _injected.clear()


def ctx_id(kind: str) -> str:
    """The identity of a new ctx of type *kind*: ``kind#n``, its creation number among the ctxs of
    that type made under the current token (the application's order of creating them)."""
    n = _ctxs_made.get(kind, 0)
    _ctxs_made[kind] = n + 1
    return f"{kind}#{n}"


def task_id(pool_id: str, n: int) -> str:
    """The identity of the *n*-th task submitted to the task pool *pool_id* (``ctx_id/place``)."""
    return f"{pool_id}#{n}"


def _hash(ident: str) -> int:
    return int.from_bytes(hashlib.blake2b(_base + ident.encode(), digest_size=8).digest(), "big")


def uniform(ident: str) -> float:
    """A number in [0, 1) that depends only on the seed, the token and *ident*."""
    return _hash(ident) / 18446744073709551616.0  # 2**64


def order_key(ident: str) -> int:
    """The shuffle key of a Pe queue item identified by *ident* (seed and token included)."""
    return _hash(ident)


def fault_rate(kind: str) -> tuple[float, int] | None:
    """``(rate, code)`` configured for task *kind*, or ``None``."""
    return FAULTS.get(kind)


def fault(kind: str, task: str) -> int:
    """The status to inject into *task* (a :func:`task_id`, with an attempt suffix for a decision
    taken again) of *kind*, 0 for none: a function of the seed, the token, *task* and *kind* only.
    An injected fault is recorded (:func:`injected`)."""
    f = FAULTS.get(kind)
    if f is None or uniform(f"{task}/{kind}") >= f[0]:
        return 0
    if len(_injected) < MAX_RECORDED:
        _injected.append(Fault(task, kind, ErrorCode(f[1]).name))
    if trace.ON: trace.fault(f"fault injected into task {task} ({kind}): {ErrorCode(f[1]).name}")  # trace hook
    return f[1]


def injected() -> list[Fault]:
    """The faults injected in this process since the last :func:`reseed` (or :func:`configure`), in
    the order they were injected (at most :data:`MAX_RECORDED`)."""
    return list(_injected)


def describe() -> str:
    """One line with every knob and the seed, to replay a run."""
    faults = ",".join(f"{k}={r}:{ErrorCode(c).name}" for k, (r, c) in FAULTS.items())
    return (f"DOCA_PY_STRICT={int(STRICT)} DOCA_PY_EMU_SHUFFLE={int(SHUFFLE)} "
            f"DOCA_PY_EMU_FAULTS={faults!r} DOCA_PY_EMU_SEED={SEED}")


configure()
