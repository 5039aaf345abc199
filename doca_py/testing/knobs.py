"""The emulator's knobs as the test kit sets them: seed, DOCA version, strict mode, shuffling, faults.

The emulator reads them from the environment at import (``doca_py.emulated.strict``,
``doca_py.emulated.version``). ``Knobs`` holds one setting of all of them, from
options and the environment (options win), writes them to an environment (so child
processes inherit them) and applies them to the running emulator.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shlex
from collections.abc import MutableMapping

__all__ = ["Knobs", "VERSIONS", "IMPLS", "FAULT_KINDS", "fault_kinds_text", "ENV_SEED", "ENV_STRICT", "ENV_SHUFFLE",
           "ENV_FAULTS", "ENV_VERSION"]

VERSIONS = ("2.6", "3.0", "3.2")
"""The DOCA versions the emulator presents (``--doca-version``, ``@pytest.mark.doca_versions``)."""
IMPLS = ("emulated", "native")
"""The paths a ``doca_pair`` side can take (``--doca-impl``): the emulated backend, or the native one over a
real DOCA or, without one, over libdoca served by the emulator (``doca_py.testing.native``)."""
FAULT_KINDS = {
    "dma_memcpy": "IO_FAILED", "ec_create": "IO_FAILED", "ec_recover": "IO_FAILED", "ec_update": "IO_FAILED",
    "ec_galois_mul": "IO_FAILED", "compress_deflate": "IO_FAILED", "decompress_deflate": "IO_FAILED",
    "decompress_lz4_stream": "IO_FAILED", "decompress_lz4_block": "IO_FAILED",
    "rdma_send": "CONNECTION_RESET", "rdma_receive": "CONNECTION_RESET", "rdma_read": "CONNECTION_RESET",
    "rdma_write": "CONNECTION_RESET", "rdma_atomic": "CONNECTION_RESET",
    "comch_send": "AGAIN", "comch_producer_send": "AGAIN", "comch_consumer_post_recv": "CONNECTION_RESET",
}
"""Every task kind fault injection knows (``--doca-faults KIND=RATE[:CODE]``), with the DOCA error
(``DOCA_ERROR_<name>``) it injects when no ``CODE`` is given: what hardware reports. The same
table as ``doca_py.emulated.strict.KINDS``, here so that ``--help`` needs no emulator import."""


def fault_kinds_text() -> str:
    """``dma_memcpy (IO_FAILED), ...``: the fault kinds and their default errors, for help texts."""
    return ", ".join(f"{k} ({v})" for k, v in FAULT_KINDS.items())


ENV_SEED = "DOCA_PY_EMU_SEED"
"""The seed's environment variable."""
ENV_STRICT = "DOCA_PY_STRICT"
"""Strict mode's environment variable."""
ENV_SHUFFLE = "DOCA_PY_EMU_SHUFFLE"
"""Completion shuffling's environment variable."""
ENV_FAULTS = "DOCA_PY_EMU_FAULTS"
"""The fault spec's environment variable."""
ENV_VERSION = "DOCA_PY_EMU_VERSION"
"""The DOCA version's environment variable."""
_TRUE = ("1", "true", "yes", "on")


def _flag(env: MutableMapping[str, str] | os._Environ[str], name: str, default: bool) -> bool:
    text = env.get(name)
    return default if text is None or not text.strip() else text.strip().lower() in _TRUE


def check_version(text: str) -> str:
    """``"3.2"`` if *text* names a version the emulator presents, else ``ValueError``."""
    major, _, minor = text.strip().partition(".")
    norm = f"{major}.{minor.split('.')[0]}" if minor else text.strip()
    if norm not in VERSIONS:
        raise ValueError(f"DOCA version {text!r}: the emulator presents one of {', '.join(VERSIONS)}")
    return norm


def check_impl(text: str) -> str:
    """*text* if it names a path of the sides (``IMPLS``), else ``ValueError``."""
    if text not in IMPLS:
        raise ValueError(f"the sides' path {text!r}: one of {', '.join(IMPLS)}")
    return text


def check_faults(spec: str) -> str:
    """*spec* if it is a valid fault spec (see ``doca_py.emulated.strict.parse_faults``), else ``ValueError``."""
    if not spec.strip():
        return spec
    from ..emulated.strict import parse_faults

    try:
        parse_faults(spec)
    except ValueError as exc:
        raise ValueError(f"fault spec {spec!r}: {exc}") from None
    return spec


@dataclasses.dataclass(frozen=True)
class Knobs:
    """One setting of the emulator's knobs.

    """

    seed: int
    """Seed of completion shuffling and fault injection (``DOCA_PY_EMU_SEED``)."""
    version: str | None = None
    """DOCA version the emulator presents (``DOCA_PY_EMU_VERSION``); ``None``: its default (3.2)."""
    strict: bool = True
    """Strict mode (``DOCA_PY_STRICT``), on by default under the kit."""
    shuffle: bool = True
    """Shuffled completion order (``DOCA_PY_EMU_SHUFFLE``), on by default under the kit."""
    faults: str = ""
    """Fault-injection spec (``DOCA_PY_EMU_FAULTS``), ``""`` for none."""
    impl: str = "emulated"
    """The path of the ``doca_pair`` sides (``--doca-impl``): ``"emulated"`` or ``"native"``."""

    @classmethod
    def resolve(cls, seed: int | None = None, version: str | None = None, strict: bool | None = None,
                faults: str | None = None, env: MutableMapping[str, str] | None = None,
                impl: str | None = None) -> Knobs:
        """The knobs from options (the arguments, ``None`` when not given) over the environment
        over the kit's defaults (strict and shuffling on, a random seed, emulated sides)."""
        e = os.environ if env is None else env
        if seed is None:
            text = e.get(ENV_SEED, "").strip()
            seed = int(text) if text else random.SystemRandom().randrange(1 << 31)
        if version is None:
            version = e.get(ENV_VERSION, "").strip() or None
        return cls(seed=seed, version=check_version(version) if version else None,
                   strict=_flag(e, ENV_STRICT, True) if strict is None else strict,
                   shuffle=_flag(e, ENV_SHUFFLE, True),
                   # The environment's spec is checked by the emulator when it reads it: importing it
                   # here would read the other knobs before a conftest sets them.
                   faults=e.get(ENV_FAULTS, "") if faults is None else check_faults(faults),
                   impl=check_impl(impl) if impl else "emulated")

    def replace(self, **changes: object) -> Knobs:
        """A copy with some knobs changed (``version=``, ``faults=`` …)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def env(self) -> dict[str, str]:
        """The knobs as environment variables."""
        out = {ENV_SEED: str(self.seed), ENV_STRICT: str(int(self.strict)), ENV_SHUFFLE: str(int(self.shuffle)),
               ENV_FAULTS: self.faults}
        if self.version is not None:
            out[ENV_VERSION] = self.version
        return out

    def write_env(self, env: MutableMapping[str, str] | None = None) -> None:
        """Put the knobs into *env* (default ``os.environ``): processes started later inherit them."""
        (os.environ if env is None else env).update(self.env())

    def apply(self, token: str | None = None) -> None:
        """Configure the running emulator with these knobs (imports it) and reseed it: its decisions
        start again from the seed and *token* (``None``: the current one), its ctxs are numbered from 0
        and its record of injected faults is emptied (``doca_py.emulated.strict.reseed``)."""
        from ..emulated import strict
        from ..emulated import version as emu_version

        strict.configure(strict=self.strict, shuffle=self.shuffle, faults=self.faults, seed=self.seed)
        if token is not None:
            strict.reseed(token)
        if self.version is not None:
            emu_version.VERSION = emu_version.parse(self.version)

    def options(self, default_version: str | None = None) -> list[str]:
        """The pytest options that replay these knobs (shuffling has no option: see `replay`)."""
        out = ["--doca-seed", str(self.seed)]
        if self.version is not None and self.version != default_version:
            out += ["--doca-version", self.version]
        if not self.strict:
            out.append("--doca-no-strict")
        if self.faults:
            out += ["--doca-faults", self.faults]
        if self.impl != "emulated":
            out += ["--doca-impl", self.impl]
        return out

    def replay(self, nodeid: str = "", rootdir: str | os.PathLike[str] | None = None) -> str:
        """The command line that replays a test (*nodeid*, relative to *rootdir*) with these knobs: every
        knob that differs from the kit's defaults (shuffling off as ``DOCA_PY_EMU_SHUFFLE=0`` before the
        command), and ``cd <rootdir> &&`` first when *rootdir* is given, so that it works from any
        directory."""
        words = ["pytest", *self.options(), *([nodeid] if nodeid else [])]
        cmd = shlex.join(words)
        if not self.shuffle:
            cmd = f"{ENV_SHUFFLE}=0 {cmd}"
        if rootdir is not None:
            cmd = f"cd {shlex.quote(os.fspath(rootdir))} && {cmd}"
        return cmd

    def describe(self) -> str:
        """One line: every knob."""
        return (f"seed {self.seed}, DOCA {self.version or 'default'}, strict {'on' if self.strict else 'off'}, "
                f"shuffle {'on' if self.shuffle else 'off'}, faults {self.faults or 'none'}, sides {self.impl}")
