"""Synchronous batches of EC and decompress tasks over one memory arena.

Used by the sbc generator (EC create, EC recover, LZ4 stream decompress) and by tools
and tests that need the same maths as the hardware. A `OffloadSession` owns a
``Pe``, a ``BufInventory``, one started ``Mmap`` over a page-aligned arena and the
``Ec``/``Compress`` contexts; each ``*_batch`` call keeps up to ``max_inflight`` tasks
in flight and returns the per-job failures.

A failed task stops its context (DOCA's rule); the session then lets the other
in-flight tasks be flushed, resubmits those, restarts the context and carries on, so
one bad block does not hide the state of the others.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import doca_py as d
from doca_py.errors import DocaError, DocaTimeout, ErrorCode

__all__ = ["EcJob", "DecompressJob", "OffloadSession", "matrix_type_from_name"]

_STALL_TIMEOUT = 30.0


def matrix_type_from_name(name: str) -> d.EcMatrixType:
    """``vandermonde`` / ``cauchy`` → [`doca_py.EcMatrixType`][doca_py.ec.EcMatrixType]."""
    try:
        return d.EcMatrixType[name.upper()]
    except KeyError:
        raise ValueError(f"unknown matrix type {name!r} (expected vandermonde or cauchy)") from None


@dataclass(frozen=True, slots=True)
class EcJob:
    """One EC task over arena offsets: the source blocks (one span, or several chained) and
    the output span; the output must come out exactly ``dst_len`` bytes."""

    src: tuple[tuple[int, int], ...]
    dst_offset: int
    dst_len: int


@dataclass(frozen=True, slots=True)
class DecompressJob:
    """One LZ4 stream decompress: ``src_len`` bytes at ``src_offset`` into at most
    ``dst_capacity`` bytes at ``dst_offset``."""

    src_offset: int
    src_len: int
    dst_offset: int
    dst_capacity: int


class OffloadSession:
    """A device's EC/Compress contexts and an arena of *arena_size* bytes (``.arena``)."""

    def __init__(self, dev: d.Dev, arena_size: int, *, ec: bool = True, decompress: bool = False,
                 max_inflight: int = 32) -> None:
        self.dev = dev
        self.max_inflight = max(1, max_inflight)
        self._events: list[tuple[Any, int]] = []
        self.pe = d.Pe()
        self.inv = d.BufInventory(self.max_inflight * 3 + 4)
        self.mm = d.Mmap()
        self.ec: d.Ec | None = None
        self.comp: d.Compress | None = None
        try:
            self.arena = self.mm.allocate(max(arena_size, 64))
            self.mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
            self.mm.add_dev(dev)
            self.mm.start()
            self.base = self.mm.get_memrange()[0]
            if ec:
                self.ec = d.Ec(dev)
                self.pe.connect_ctx(self.ec)
                self.ec.task_create_set_conf(self._ok, self._err, self.max_inflight)
                self.ec.task_recover_set_conf(self._ok, self._err, self.max_inflight)
                self.ec.start()
            if decompress:
                self.comp = d.Compress(dev)
                self.pe.connect_ctx(self.comp)
                self.comp.task_decompress_lz4_stream_set_conf(self._ok, self._err, self.max_inflight)
                self.comp.start()
        except BaseException:
            self.close()
            raise

    # -- callbacks (run inside Pe.progress) ------------------------------------------------------
    def _ok(self, task: d.Task, user_data: Any, ctx_user_data: Any) -> None:
        self._events.append((user_data, int(ErrorCode.SUCCESS)))

    def _err(self, task: d.Task, user_data: Any, ctx_user_data: Any) -> None:
        self._events.append((user_data, int(task.get_status())))

    # -- helpers -----------------------------------------------------------------------------------
    def _src(self, offset: int, length: int) -> d.Buf:
        return self.inv.buf_get_by_data(self.mm, self.base + offset, length)

    def _dst(self, offset: int, length: int) -> d.Buf:
        return self.inv.buf_get_by_addr(self.mm, self.base + offset, length)

    def _restart(self, ctx: d.Ctx) -> None:
        deadline = time.monotonic() + _STALL_TIMEOUT
        while ctx.get_state() != d.CtxState.IDLE:
            if not self.pe.progress() and time.monotonic() > deadline:
                raise DocaTimeout("context did not stop after a failed task")
        ctx.start()

    def _run(self, ctx: d.Ctx, count: int, make: Callable[[int], tuple[d.Task, list[d.Buf]]],
             check: Callable[[int, d.Task], str | None]) -> dict[int, str]:
        """Run jobs ``0..count-1``; return ``{job: problem}`` for those that failed."""
        queue: deque[int] = deque(range(count))
        inflight: dict[int, tuple[d.Task, list[d.Buf]]] = {}
        failures: dict[int, str] = {}
        failed_since_start = False
        last = time.monotonic()
        while queue or inflight:
            while queue and len(inflight) < self.max_inflight and not failed_since_start:
                i = queue.popleft()
                task, bufs = make(i)
                try:
                    task.submit()
                except DocaError as exc:
                    task.free()
                    for b in bufs:
                        b.dec_refcount()
                    failures[i] = f"submit failed: {exc}"
                    continue
                inflight[i] = (task, bufs)
            if not inflight:
                if failed_since_start:
                    self._restart(ctx)
                    failed_since_start = False
                continue
            if not self.pe.progress():
                self.pe.wait(0.5)
            if not self._events:
                if time.monotonic() - last > _STALL_TIMEOUT:
                    raise DocaTimeout(f"{len(inflight)} offload tasks did not complete within {_STALL_TIMEOUT} s")
                continue
            last = time.monotonic()
            events, self._events = self._events, []
            for i, status in events:
                task, bufs = inflight.pop(i)
                try:
                    if status == ErrorCode.SUCCESS:
                        problem = check(i, task)
                        if problem:
                            failures[i] = problem
                    elif not failed_since_start:
                        failed_since_start = True
                        failures[i] = f"task failed with {ErrorCode(status).c_name}" \
                            if status in ErrorCode._value2member_map_ else f"task failed with status {status}"
                    else:
                        queue.appendleft(i)  # flushed by the stop the failure caused: run it again
                finally:
                    task.free()
                    for b in bufs:
                        b.dec_refcount()
            if failed_since_start and not inflight:
                self._restart(ctx)
                failed_since_start = False
        return failures

    # -- batches -----------------------------------------------------------------------------------
    def ec_batch(self, matrix: d.EcMatrix, jobs: Sequence[EcJob], *, recover: bool = False) -> dict[int, str]:
        """Run EC create (or recover) tasks, one per job; ``{job index: problem}``."""
        ec = self.ec
        if ec is None:
            raise ValueError("this session has no Ec context")

        def make(i: int) -> tuple[d.Task, list[d.Buf]]:
            job = jobs[i]
            srcs = [self._src(o, n) for o, n in job.src]
            for extra in srcs[1:]:
                srcs[0].chain_list(extra)
            dst = self._dst(job.dst_offset, job.dst_len)
            task: d.Task
            if recover:
                task = ec.task_recover_allocate_init(matrix, srcs[0], dst, user_data=i)
            else:
                task = ec.task_create_allocate_init(matrix, srcs[0], dst, user_data=i)
            return task, [srcs[0], dst]

        def check(i: int, task: d.Task) -> str | None:
            out = task.get_recovered_data() if isinstance(task, d.EcTaskRecover) else \
                task.get_rdnc_blocks() if isinstance(task, d.EcTaskCreate) else None
            n = -1 if out is None else out.get_data_len()
            return None if n == jobs[i].dst_len else f"EC output is {n} bytes, expected {jobs[i].dst_len}"

        return self._run(ec, len(jobs), make, check)

    def decompress_batch(self, jobs: Sequence[DecompressJob]) -> tuple[dict[int, str], list[int]]:
        """Run LZ4 stream decompress tasks; ``({job: problem}, output lengths)``."""
        comp = self.comp
        if comp is None:
            raise ValueError("this session has no Compress context")
        lengths = [0] * len(jobs)

        def make(i: int) -> tuple[d.Task, list[d.Buf]]:
            job = jobs[i]
            src = self._src(job.src_offset, job.src_len)
            dst = self._dst(job.dst_offset, job.dst_capacity)
            return comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst, user_data=i), [src, dst]

        def check(i: int, task: d.Task) -> str | None:
            assert isinstance(task, d.CompressTaskDecompressLz4Stream)
            lengths[i] = task.get_dst().get_data_len()
            return None

        return self._run(comp, len(jobs), make, check), lengths

    def close(self) -> None:
        """Stop the contexts and release everything (idempotent)."""
        for ctx in (self.ec, self.comp):
            if ctx is not None and not ctx.closed:
                ctx.close()
        self.inv.close()
        self.mm.close()
        self.pe.close()

    def __enter__(self) -> OffloadSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
