"""``python -m doca_py`` (installed as ``doca_py``): devices, capabilities, the library probe.

::

    python -m doca_py [devices] [-d DEVICE] [--list] [--json]
    python -m doca_py probe [--json] [LIBDIR_OR_FILE ...]

``devices`` (the default) lists every device with its PCI address, IB device name and
network interface, and the representors it lists (like ``ibv_devices`` and
``doca_caps --list-devs``); without ``--list`` it adds, per device, what each DOCA
library can do there (like ``doca_caps``): DMA, EC, compress, RDMA, sync events, comch and
mmap export, read with the public ``cap_*`` functions of `doca_py`. The first lines
name the backend in use (`doca_py.impl`), why the native one did not load when
``DOCA_PY_IMPL=auto`` fell back to the emulated one, and the DOCA version it presents
([`doca_py.version_runtime`][doca_py.version.version_runtime]).

``probe`` is [`doca_py.native.probe`][doca_py.native.probe]: which declared DOCA functions the installed
``libdoca_*.so`` export, read from their ELF symbol tables.

A capability query that fails is reported (``null`` in JSON, with the error in the
device's ``errors``), never fatal. Exit status: 0; 1 when the devices cannot be
listed or ``--device`` names none of them; the probe's own status for ``probe``; 2 on bad usage,
including a ``DOCA_PY_IMPL`` that cannot be honoured (``probe`` still runs first, see `doca_py._program`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from . import __version__, _backend, comch
from .comch import ComchClient, ComchConsumer, ComchProducer, ComchServer
from .compress import Compress, CompressTaskType
from .dev import DevInfo, devinfo_create_list
from .dma import Dma
from .mmap_advise import MmapAdvise
from .ec import Ec
from .errors import DocaError
from .mmap import Mmap
from .rdma import Rdma, RdmaTransportType
from .sync_event import SyncEvent
from .types import DevinfoRepFilter
from .version import version_runtime

__all__ = ["LIBRARIES", "build_parser", "capabilities", "device_report", "report", "format_text", "main"]

CapQuery = Callable[[DevInfo], object]
T = TypeVar("T")


def _swap(query: Callable[[DevInfo, T], object], arg: T, info: DevInfo) -> object:
    """``query(info, arg)``, for ``partial(_swap, query, arg)``."""
    return query(info, arg)


def _cap_table() -> dict[str, dict[str, CapQuery]]:
    """``{library: {capability: query(devinfo)}}``; names are the ``cap_*`` methods' without ``cap_``."""
    compress: dict[str, CapQuery] = {}
    for t in CompressTaskType:
        compress[f"task_{t.value}_is_supported"] = partial(_swap, Compress.cap_task_is_supported, t)
        compress[f"task_{t.value}_get_max_buf_size"] = partial(_swap, Compress.cap_task_get_max_buf_size, t)
        compress[f"task_{t.value}_get_max_buf_list_len"] = partial(_swap, Compress.cap_task_get_max_buf_list_len, t)
    rdma: dict[str, CapQuery] = {}
    for tr in RdmaTransportType:
        rdma[f"transport_{tr.name.lower()}_is_supported"] = partial(_swap, Rdma.cap_transport_type_is_supported, tr)
    rdma.update({
        "get_max_send_queue_size": Rdma.cap_get_max_send_queue_size,
        "get_max_recv_queue_size": Rdma.cap_get_max_recv_queue_size,
        "get_max_message_size": Rdma.cap_get_max_message_size,
        "get_max_send_buf_list_len": Rdma.cap_get_max_send_buf_list_len,
        "get_gid_table_size": Rdma.cap_get_gid_table_size,
        "task_receive_is_supported": Rdma.cap_task_receive_is_supported,
        "task_send_is_supported": Rdma.cap_task_send_is_supported,
        "task_send_imm_is_supported": Rdma.cap_task_send_imm_is_supported,
        "task_read_is_supported": Rdma.cap_task_read_is_supported,
        "task_write_is_supported": Rdma.cap_task_write_is_supported,
        "task_write_imm_is_supported": Rdma.cap_task_write_imm_is_supported,
        "task_atomic_cmp_swp_is_supported": Rdma.cap_task_atomic_cmp_swp_is_supported,
        "task_atomic_fetch_add_is_supported": Rdma.cap_task_atomic_fetch_add_is_supported,
        "task_remote_net_sync_event_get_is_supported": Rdma.cap_task_remote_net_sync_event_get_is_supported,
        "task_remote_net_sync_event_notify_set_is_supported":
            Rdma.cap_task_remote_net_sync_event_notify_set_is_supported,
        "task_remote_net_sync_event_notify_add_is_supported":
            Rdma.cap_task_remote_net_sync_event_notify_add_is_supported,
    })
    sync_event: dict[str, CapQuery] = {
        "is_create_from_export_supported": SyncEvent.cap_is_create_from_export_supported,
        "is_export_to_remote_pci_supported": SyncEvent.cap_is_export_to_remote_pci_supported,
        "is_export_to_remote_net_supported": SyncEvent.cap_is_export_to_remote_net_supported,
        "remote_net_is_create_from_export_supported": SyncEvent.cap_remote_net_is_create_from_export_supported,
    }
    for task in ("get", "notify_set", "notify_add", "wait_eq", "wait_neq"):
        sync_event[f"task_{task}_is_supported"] = partial(SyncEvent.cap_task_is_supported, task)
    for tr in RdmaTransportType:
        rdma[f"task_receive_get_max_dst_buf_list_len_{tr.name.lower()}"] = \
            partial(_swap, Rdma.cap_task_receive_get_max_dst_buf_list_len, tr)
    return {
        "dev": {
            "is_hotplug_manager_supported": DevInfo.cap_is_hotplug_manager_supported,
            "is_notification_moderation_supported": DevInfo.cap_is_notification_moderation_supported,
            "is_accelerate_resource_reclaim_supported": DevInfo.cap_is_accelerate_resource_reclaim_supported,
            "rep_is_filter_all_supported": DevInfo.rep_cap_is_filter_all_supported,
            "rep_is_filter_net_supported": DevInfo.rep_cap_is_filter_net_supported,
            "rep_is_filter_emulated_supported": DevInfo.rep_cap_is_filter_emulated_supported,
        },
        "mmap": {
            "is_export_pci_supported": Mmap.cap_is_export_pci_supported,
            "is_create_from_export_pci_supported": Mmap.cap_is_create_from_export_pci_supported,
        },
        "dma": {
            "task_memcpy_is_supported": Dma.cap_task_memcpy_is_supported,
            "task_memcpy_get_max_buf_size": Dma.cap_task_memcpy_get_max_buf_size,
            "task_memcpy_get_max_buf_list_len": Dma.cap_task_memcpy_get_max_buf_list_len,
            "get_max_num_tasks": Dma.cap_get_max_num_tasks,
        },
        "mmap_advise": {
            "task_cache_invalidate_is_supported": MmapAdvise.cap_task_cache_invalidate_is_supported,
            "task_cache_invalidate_get_max_buf_size": MmapAdvise.task_cache_invalidate_get_max_buf_size,
        },
        "ec": {
            "task_create_is_supported": Ec.cap_task_create_is_supported,
            "task_recover_is_supported": Ec.cap_task_recover_is_supported,
            "task_update_is_supported": Ec.cap_task_update_is_supported,
            "task_galois_mul_is_supported": Ec.cap_task_galois_mul_is_supported,
            "get_max_block_size": Ec.cap_get_max_block_size,
            "get_max_buf_list_len": Ec.cap_get_max_buf_list_len,
        },
        "compress": compress,
        "rdma": rdma,
        "sync_event": sync_event,
        "comch": {
            "server_is_supported": ComchServer.cap_is_supported,
            "client_is_supported": ComchClient.cap_is_supported,
            "get_max_name_len": comch.cap_get_max_name_len,
            "get_max_msg_size": comch.cap_get_max_msg_size,
            "get_max_recv_queue_size": comch.cap_get_max_recv_queue_size,
            "get_max_clients": comch.cap_get_max_clients,
            "get_max_send_tasks": comch.cap_get_max_send_tasks,
            "consumer_is_supported": ComchConsumer.cap_is_supported,
            "consumer_get_max_num_tasks": ComchConsumer.cap_get_max_num_tasks,
            "consumer_get_max_buf_size": ComchConsumer.cap_get_max_buf_size,
            "consumer_get_max_buf_list_len": ComchConsumer.cap_get_max_buf_list_len,
            "consumer_get_max_consumers": ComchConsumer.cap_get_max_consumers,
            "consumer_get_max_imm_data_len": ComchConsumer.cap_get_max_imm_data_len,
            "producer_is_supported": ComchProducer.cap_is_supported,
            "producer_get_max_num_tasks": ComchProducer.cap_get_max_num_tasks,
            "producer_get_max_buf_size": ComchProducer.cap_get_max_buf_size,
            "producer_get_max_buf_list_len": ComchProducer.cap_get_max_buf_list_len,
            "producer_get_max_producers": ComchProducer.cap_get_max_producers,
        },
    }


LIBRARIES = ("dev", "mmap", "dma", "mmap_advise", "ec", "compress", "rdma", "sync_event", "comch")
"""The libraries whose capabilities ``devices`` reports, in report order."""


def _error(exc: BaseException) -> str:
    if isinstance(exc, DocaError):
        return f"{exc.name}: {exc.detail}" if exc.detail else exc.name
    return f"{type(exc).__name__}: {exc}"


def _value(v: object) -> object:
    return bool(v) if isinstance(v, bool) else int(v) if isinstance(v, int) else v


def capabilities(info: DevInfo) -> tuple[dict[str, dict[str, object]], dict[str, str]]:
    """Every capability of *info*: ``({library: {name: value}}, {"library.name": error})``.

    A query that raises gives ``None`` and an entry in the errors.
    """
    caps: dict[str, dict[str, object]] = {}
    errors: dict[str, str] = {}
    table = _cap_table()
    for lib in LIBRARIES:
        caps[lib] = {}
        for name, query in table[lib].items():
            try:
                caps[lib][name] = _value(query(info))
            except Exception as exc:  # noqa: BLE001 - a diagnostics tool reports, it does not stop
                caps[lib][name] = None
                errors[f"{lib}.{name}"] = _error(exc)
    return caps, errors


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _attr(errors: dict[str, str], key: str, get: Callable[[], object]) -> Any:
    try:
        return get()
    except Exception as exc:  # noqa: BLE001
        errors[key] = _error(exc)
        return None


def device_report(info: DevInfo, *, caps: bool = True) -> dict[str, Any]:
    """What ``devices --json`` says about one device."""
    errors: dict[str, str] = {}
    dev: dict[str, Any] = {
        "pci_addr": info.get_pci_addr_str(),
        "ibdev_name": _attr(errors, "ibdev_name", info.get_ibdev_name),
        "iface_name": _attr(errors, "iface_name", info.get_iface_name),
        "mac_addr": _attr(errors, "mac_addr", lambda: _mac(info.get_mac_addr())),
        "ipv4_addr": _attr(errors, "ipv4_addr", lambda: str(info.get_ipv4_addr())),
        "vhca_id": _attr(errors, "vhca_id", info.get_vhca_id),
        "active_rate": _attr(errors, "active_rate", info.get_active_rate),
        "representors": [],
    }
    try:
        with info.open() as opened:
            filt = DevinfoRepFilter.ALL if info.rep_cap_is_filter_all_supported() else DevinfoRepFilter.NET
            for rep in opened.rep_create_list(filt):
                rerr: dict[str, str] = {}
                dev["representors"].append({
                    "pci_addr": rep.get_pci_addr_str(),
                    "iface_name": _attr(rerr, "iface_name", rep.get_iface_name),
                    "vuid": _attr(rerr, "vuid", rep.get_vuid),
                    "pci_func_type": _attr(rerr, "pci_func_type", lambda: rep.get_pci_func_type().name),
                    "is_hotplug": _attr(rerr, "is_hotplug", rep.get_is_hotplug),
                    "vhca_id": _attr(rerr, "vhca_id", rep.get_vhca_id),
                })
                errors.update({f"representors.{rep.get_pci_addr_str()}.{k}": v for k, v in rerr.items()})
    except Exception as exc:  # noqa: BLE001 - e.g. a host, where DOCA lists no representors
        errors["representors"] = _error(exc)
    if caps:
        dev["caps"], cap_errors = capabilities(info)
        errors.update(cap_errors)
    dev["errors"] = errors
    return dev


def _matches(info: DevInfo, name: str) -> bool:
    """Whether *name* (PCI address, IB device or interface name) names *info*."""
    for get in (info.get_ibdev_name, info.get_iface_name):
        try:
            if get() == name:
                return True
        except Exception:  # noqa: BLE001 - a name the backend cannot read: try the others
            pass
    try:
        return info.is_equal_pci_addr(name)
    except Exception:  # noqa: BLE001 - not a PCI address
        return False


def report(*, caps: bool = True, device: str | None = None) -> dict[str, Any]:
    """The whole ``devices --json`` document (raises if the devices cannot be listed)."""
    try:
        doca_version: str | None = version_runtime()
    except Exception:  # noqa: BLE001
        doca_version = None
    infos = devinfo_create_list()
    if device is not None:
        infos = [i for i in infos if _matches(i, device)]
    return {
        "backend": _backend.impl,
        "native_unavailable": _backend.native_unavailable,
        "doca_version": doca_version,
        "doca_py_version": __version__,
        "devices": [device_report(i, caps=caps) for i in infos],
    }


def _human(n: int) -> str:
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n} ({n >> shift} {unit})"
    return str(n)


def _show(name: str, v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) and name.endswith("_size"):
        return _human(v)
    if isinstance(v, int) and name.endswith("_rate"):
        return f"{v / 1e9:g} Gb/s" if v >= 10**9 else f"{v} bit/s"
    return str(v)


def _table(rows: list[list[str]], indent: str = "") -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def format_text(doc: dict[str, Any]) -> str:
    """The text form of a `report` document."""
    lines = [f"backend: {doc['backend']}"]
    if doc.get("native_unavailable"):
        lines.append(f"native backend not loaded: {doc['native_unavailable']}")
    lines += [f"DOCA version: {doc['doca_version'] or 'unknown'}",
             f"doca_py version: {doc['doca_py_version']}", ""]
    devices: list[dict[str, Any]] = doc["devices"]
    if not devices:
        lines.append("no devices")
        return "\n".join(lines) + "\n"
    rows = [["PCI address", "ibdev", "interface", "representors"]]
    for d in devices:
        reps = d["representors"]
        rows.append([d["pci_addr"], d["ibdev_name"] or "-", d["iface_name"] or "-", str(len(reps))])
        for r in reps:
            rows.append([f"  rep {r['pci_addr']}", r["pci_func_type"] or "-", r["iface_name"] or "-",
                         f"vuid {r['vuid']}" if r["vuid"] else ""])
    lines += _table(rows)
    for d in devices:
        if "caps" not in d:
            continue
        lines += ["", f"{d['pci_addr']} ({d['ibdev_name'] or '-'}, {d['iface_name'] or '-'})",
                  f"  mac {d['mac_addr'] or '-'}, ipv4 {d['ipv4_addr'] or '-'}, vhca_id {_show('', d['vhca_id'])}, "
                  f"rate {_show('active_rate', d['active_rate'])}"]
        errors: dict[str, str] = d["errors"]
        for lib, caps in d["caps"].items():
            lines.append(f"  {lib}")
            rows = []
            for name, v in caps.items():
                err = errors.get(f"{lib}.{name}")
                rows.append([name, f"error: {err}" if err else _show(name, v)])
            lines += _table(rows, "    ")
        if "representors" in errors:
            lines.append(f"  representors: {errors['representors']}")
    return "\n".join(lines) + "\n"


def build_parser(prog: str = "doca_py") -> argparse.ArgumentParser:
    """The command line of ``python -m doca_py`` / ``doca_py``."""
    from .native import probe

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Show the DOCA devices of this machine and what each DOCA library can do on them "
                    "(backend: DOCA_PY_IMPL=native|emulated|auto).",
        epilog="Without a command: devices.",
    )
    parser.add_argument("--version", action="version", version=f"doca_py {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    devices = sub.add_parser(
        "devices", help="list devices, representors and capabilities (default)",
        description="List every device (PCI address, IB device, interface) with its representors and, "
                    "unless --list, the capabilities of each DOCA library on it.")
    devices.add_argument("-d", "--device", metavar="DEVICE",
                         help="only this device: PCI address, IB device name or interface name")
    devices.add_argument("--list", action="store_true", help="devices and representors only, no capabilities")
    devices.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    probe_parser = probe.build_parser()
    sub.add_parser("probe", parents=[probe_parser], add_help=False,
                   help="which declared DOCA functions the installed libdoca_*.so export",
                   description=probe_parser.description)
    sub.add_parser("libdoca", add_help=False, help="build DOCA's C libraries served by the emulator "
                                                   "(--out DIR [--doca-version V])")
    return parser


_COMMANDS = ("devices", "probe", "libdoca")


def main(argv: Sequence[str] | None = None, prog: str = "doca_py") -> int:
    """Run the tool; returns the exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if not args_in or (args_in[0] not in _COMMANDS and args_in[0] not in ("-h", "--help", "--version")):
        args_in.insert(0, "devices")
    if args_in[0] == "libdoca":
        from . import libdoca

        return libdoca.main(args_in[1:], prog=f"{prog} libdoca")
    args = build_parser(prog).parse_args(args_in)
    if args.command == "probe":
        from .native import probe

        return probe.main(args_in[1:])
    try:
        doc = report(caps=not args.list, device=args.device)
    except Exception as exc:  # noqa: BLE001
        print(f"{prog}: cannot list the devices: {_error(exc)}", file=sys.stderr)
        return 1
    if args.device is not None and not doc["devices"]:
        print(f"{prog}: no device {args.device!r}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(format_text(doc))
    return 0


def console_main() -> int:
    """The ``doca_py`` console script."""
    try:
        return main()
    except BrokenPipeError:  # "| head"
        return 1
