"""Side functions of the test kit's own tests (module level: a spawned side finds them by name)."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
import time
from typing import Any

import doca_py as d
from doca_py.testing import Side

N_TASKS = 16


def describe(side: Side) -> dict[str, Any]:
    """What a side sees: its device, representor, knobs and version."""
    from doca_py.emulated import strict

    return {"role": side.role, "pci": side.dev.as_devinfo().get_pci_addr_str(),
            "rep": side.rep.get_pci_addr_str() if side.rep is not None else None, "token": side.token,
            "args": side.args, "seed": (side.seed, strict.SEED, os.environ["DOCA_PY_EMU_SEED"]),
            "strict": strict.STRICT, "shuffle": strict.SHUFFLE, "faults": dict(strict.FAULTS),
            "version": d.version_runtime(), "impl": d.impl}


def host_ping(side: Side) -> Any:
    side.send(("ping", describe(side)))
    return side.recv(30), describe(side)


def dpu_pong(side: Side) -> Any:
    kind, host = side.recv(30)
    side.send(("pong", host["pci"]))
    return (kind, host), describe(side)


def raise_value_error(side: Side) -> None:
    assert side.recv(30) == "asleep"  # fail once the peer sleeps: the kit must end it
    print(f"{side.role} side about to fail")
    raise ValueError("the dpu side exploded")


def sleep_long(side: Side) -> None:
    side.send("asleep")
    time.sleep(600)


def exit_3(side: Side) -> None:
    assert side.recv(30) == "asleep"  # die once the peer sleeps: the kit must end it
    print("leaving with os._exit(3)", flush=True)
    os._exit(3)


def sigkill_self(side: Side) -> None:
    assert side.recv(30) == "asleep"  # die once the peer sleeps: the kit must end it
    os.kill(os.getpid(), signal.SIGKILL)


def segfault(side: Side) -> None:
    assert side.recv(30) == "asleep"  # die once the peer sleeps: the kit must end it
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def unpicklable(side: Side) -> Any:
    from doca_py.testing import PeerGone

    try:
        side.recv(30)  # until the peer has returned (and sent its result: it does so before it leaves)
    except PeerGone:
        pass
    return lambda: None


def recv_times_out(side: Side) -> str:
    try:
        side.recv(0.2)
    except TimeoutError as exc:
        side.send("go on")
        return str(exc)
    return "no timeout"


def wait_then_return(side: Side) -> str:
    return str(side.recv(30))


def returns_early(side: Side) -> str:
    return "done"


def recv_after_peer_left(side: Side) -> str:
    from doca_py.testing import PeerGone

    try:
        side.recv(30)
    except PeerGone as exc:
        return str(exc)
    return "got something"


def dma_order(side: Side) -> list[int]:
    """Copy N_TASKS blocks with one DMA ctx and return the order the completions came in
    (shuffled by the seed); a side with faults on returns each task's status instead, negated."""
    done: list[int] = []
    with d.Pe() as pe, d.BufInventory(2 * N_TASKS) as inv:
        dma = d.Dma(side.dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: done.append(u), lambda t, u, c: done.append(-1 - u), N_TASKS)
        dma.start()
        mm = d.Mmap()
        mem = mm.allocate(2 * N_TASKS * 64)
        mm.add_dev(side.dev)
        mm.start()
        base = mm.get_memrange()[0]
        tasks = []
        for i in range(N_TASKS):
            mem[i * 64:i * 64 + 8] = i.to_bytes(8, "little")
            src = inv.buf_get_by_data(mm, base + i * 64, 8)
            dst = inv.buf_get_by_addr(mm, base + (N_TASKS + i) * 64, 8)
            t = dma.task_memcpy_alloc_init(src, dst, user_data=i)
            tasks.append((t, src, dst))
        for t, _, _ in tasks:
            t.submit()
        while len(done) < N_TASKS:
            pe.progress()
        for t, src, dst in tasks:
            t.free()
            src.dec_refcount()
            dst.dec_refcount()
        dma.close()
        del mem
        mm.close()
    return done


_LEFT_BEHIND: list[Any] = []


def state_of_a_side(side: Side) -> dict[str, Any]:
    """What a side finds when it starts: DOCA objects alive, threads, knobs, environment, task events."""
    import gc
    import threading

    from doca_py._lifetime import DocaObject
    from doca_py.emulated import strict, trace

    gc.collect()
    alive = sorted(type(o).__name__ for o in gc.get_objects()
                   if isinstance(o, DocaObject) and o is not side.dev and o is not side.rep)
    return {"alive": alive, "threads": sorted(t.name for t in threading.enumerate()),
            "left_behind": list(_LEFT_BEHIND), "env": os.environ.get("DOCA_PY_TEST_LEFT_BEHIND"),
            "knobs": (strict.SEED, strict.STRICT, strict.SHUFFLE, dict(strict.FAULTS), d.version_runtime()),
            "events": [e[1] for e in trace.events() if e[1] != "kit"], "ppid": os.getppid(),  # the kit marks its own
            "log_level": logging.getLogger("doca_py").level}


def leave_state_behind(side: Side) -> dict[str, Any]:
    """Leave everything a careless side can leave: a running ctx on a Pe, an exported mmap, a
    changed knob, an environment variable, a module global."""
    from doca_py.emulated import strict

    before = state_of_a_side(side)
    pe = d.Pe()
    dma = d.Dma(side.dev)
    pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(lambda t, u, c: None, lambda t, u, c: None, 4)
    dma.start()
    mm = d.Mmap()
    mm.allocate(4096)
    mm.add_dev(side.dev)
    mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
    mm.start()
    blob = mm.export_pci(side.dev)
    _LEFT_BEHIND.extend([pe, dma, mm, blob])
    strict.configure(strict=not strict.STRICT, shuffle=not strict.SHUFFLE, faults="*=1", seed=1)
    os.environ["DOCA_PY_TEST_LEFT_BEHIND"] = "1"
    return before


def comch_shm_on(side: Side) -> tuple[bool, bytes | None]:
    from doca_py.emulated.comch import config
    from doca_py.emulated.rdma import config as rdma_config

    return config._shm, rdma_config.cfg.host_id


def helper_thread(started: Any) -> None:
    started.set()
    threading.Event().wait()


def stuck_in_c(side: Side) -> None:
    """Stuck where no Python signal handler runs: SIGTERM is blocked in this thread and goes to
    the helper thread, whose C-level handler sets a flag this thread never looks at."""
    started = threading.Event()
    threading.Thread(target=helper_thread, args=(started,), daemon=True).start()
    started.wait()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    side.send("asleep")
    time.sleep(600)


def leaks_a_pe_and_a_mmap(side: Side) -> str:
    _LEFT_BEHIND.append(d.Pe())
    mm = d.Mmap()
    mm.allocate(4096)
    _LEFT_BEHIND.append(mm)
    d.BufInventory(4)  # dropped open: collected without close()
    return "leaked"


def log_levels(side: Side) -> int:
    side.log.debug("a debug record")
    return logging.getLogger().level


def host_fails_then_waits(side: Side) -> None:
    """A host that fails first and handles it (``side.args``: ``"strict"``, it frees a buffer in flight and
    strict mode refuses; ``"fault"``, its copy fails with an injected fault; ``"callback"``, its completion
    callback raises), tells the DPU, then waits in its clean-up for an answer that never comes: the DPU's
    function ends first, and the kit ends this side."""
    done: list[int] = []

    def on_copied(task: Any, user_data: Any, ctx_user_data: Any) -> None:
        if side.args == "callback":
            raise ValueError("the completion callback failed")
        done.append(0)

    def on_error(task: Any, user_data: Any, ctx_user_data: Any) -> None:
        done.append(int(task.get_status()))

    pe, inv, dma, mm = d.Pe(), d.BufInventory(2), d.Dma(side.dev), d.Mmap()
    pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(on_copied, on_error, 1)
    dma.start()
    mm.allocate(128)
    mm.add_dev(side.dev)
    mm.start()
    base = mm.get_memrange()[0]
    src, dst = inv.buf_get_by_data(mm, base, 8), inv.buf_get_by_addr(mm, base + 64, 8)
    dma.task_memcpy_alloc_init(src, dst).submit()
    try:
        if side.args == "strict":
            src.dec_refcount()  # the copy still reads it
        while not done:
            pe.progress()
    except Exception as exc:  # noqa: BLE001 - the application handles it...
        side.log.info("the host handled %r", exc)
    side.send("the host failed")
    side.recv(600)  # ... and its clean-up waits for the DPU


def dpu_raises_when_told(side: Side) -> None:
    side.recv(60)
    raise RuntimeError("receive failed: CONNECTION_RESET")


def leaks_in_a_cycle(side: Side) -> str:
    """Leaves an Mmap and a Dma ctx open, reachable only through a reference cycle."""
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    mm = d.Mmap()
    mm.allocate(4096)
    cycle["mmap"], cycle["dma"] = mm, d.Dma(side.dev)
    return "leaked"


def python_random(side: Side) -> list[float]:
    import random

    return [random.random() for _ in range(3)]


def imported_emulators(side: Side) -> list[str]:
    """Which of the comch and RDMA emulators the side has imported (a side that uses neither needs none)."""
    import sys

    return [m for m in ("doca_py.emulated.comch", "doca_py.emulated.rdma") if m in sys.modules]


def closes_its_control_pipe_and_runs_on(side: Side) -> None:
    """Closes the pipe its process reports to the kit on (a side that loses it: the kit sees it end), then runs
    on for a minute: the kit must not wait for its process to end."""
    import sys

    frame = sys._getframe()
    while frame.f_code.co_name != "_child":  # the kit's frame that runs this function holds the pipe
        assert frame.f_back is not None
        frame = frame.f_back
    frame.f_locals["ctl"].close()
    side.send("asleep")
    time.sleep(60)


def stops_its_zygote_then_sleeps(side: Side) -> None:
    """Once the peer runs (the zygote has forked both sides), stops (SIGSTOP) the zygote this warm side was
    forked from, which reports its exit to the kit, then sleeps until the kit ends it: its exit is never
    reported while the zygote is stopped."""
    assert side.recv(30) == "ready"
    os.kill(os.getppid(), signal.SIGSTOP)
    side.send("asleep")
    time.sleep(600)


def ready_then_raise(side: Side) -> None:
    side.send("ready")
    raise_value_error(side)
