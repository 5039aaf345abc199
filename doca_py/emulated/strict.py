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

Each progress engine draws from its own generator, seeded from the seed, the current
:func:`reseed` token (a test harness passes the test's id) and the engine's creation
number under that token: the same seed replays the same shuffle and fault decisions
whatever ran before in the process and however threads interleave.
"""

from __future__ import annotations

import os
import random

from ..errors import DocaUsageError, ErrorCode
from . import trace

__all__ = ["STRICT", "SHUFFLE", "SEED", "FAULTS", "KINDS", "violation", "generator", "fault_rate", "draw",
           "describe", "parse_faults", "configure", "reseed"]

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
_token = ""
_made = 0  # generators made under the current token


def configure(strict: bool | None = None, shuffle: bool | None = None, faults: str | None = None,
              seed: int | None = None) -> None:
    """Set the knobs (``None``: from the environment). Tasks already allocated keep
    their pinning behaviour; call before creating objects."""
    global STRICT, SHUFFLE, SEED, FAULTS
    STRICT = _flag("DOCA_PY_STRICT") if strict is None else strict
    SHUFFLE = _flag("DOCA_PY_EMU_SHUFFLE") if shuffle is None else shuffle
    FAULTS = parse_faults(os.environ.get("DOCA_PY_EMU_FAULTS", "") if faults is None else faults)
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
    """Start a new series of generators: the next :func:`generator` calls give the same
    sequence for the same seed and *token*, whatever came before (a test harness calls this
    with each test's id)."""
    global _token, _made
    _token, _made = token, 0


def generator() -> random.Random:
    """A new seeded generator (one per progress engine: shuffling and fault draws)."""
    global _made
    _made += 1
    return random.Random(f"{SEED}/{_token}/{_made}")


def fault_rate(kind: str) -> tuple[float, int] | None:
    """``(rate, code)`` configured for task *kind*, or ``None``."""
    return FAULTS.get(kind)


def draw(kind: str, rng: random.Random) -> int:
    """The status to inject into one task of *kind* (0: none), drawn from *rng* (its Pe's)."""
    f = FAULTS.get(kind)
    if f is None or rng.random() >= f[0]:
        return 0
    return f[1]


def describe() -> str:
    """One line with every knob and the seed, to replay a run."""
    faults = ",".join(f"{k}={r}:{ErrorCode(c).name}" for k, (r, c) in FAULTS.items())
    return (f"DOCA_PY_STRICT={int(STRICT)} DOCA_PY_EMU_SHUFFLE={int(SHUFFLE)} "
            f"DOCA_PY_EMU_FAULTS={faults!r} DOCA_PY_EMU_SEED={SEED}")


configure()
