"""libdoca_common served by the emulator: errors, version, devices, mmap, buf, inventory, pe, ctx, task."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from ...emulated import buf as emu_buf
from ...emulated import dev as emu_dev
from ...emulated import mmap as emu_mmap
from ...emulated import pe as emu_pe
from ...emulated import version as emu_version
from ...emulated.buf import EmuBuf, EmuBufInventory
from ...emulated.ctx import EmuCtx, EmuTask, TaskPool
from ...emulated.dev import EmuDev, EmuDevInfo, EmuDevInfoRep, EmuDevRep
from ...emulated.mmap import EmuMmap
from ...emulated.pe import EmuPe
from ...errors import DocaInvalidValue, ErrorCode, error_descr, error_name
from ...memory import find_shared
from ...types import CtxState
from ._core import (CtxStateFn, TaskCompletionFn, c_function, c_string, forget, handle, impl, log, obj, opt,
                    out_bytes, out_int, out_ptr, out_u8, out_u16, out_u32, out_u64, read_str)

__all__ = ["TaskRec", "task_set_conf", "task_alloc", "task_of", "ctx_of", "buf_of", "opt_buf", "buf_out"]

_IN_PROGRESS = int(ErrorCode.IN_PROGRESS)
_STARTING = int(CtxState.STARTING)
_STOPPING = int(CtxState.STOPPING)


# -- errors and version ------------------------------------------------------------------------------

@impl("doca_error_get_name")
def _error_get_name(code: int) -> int:
    return c_string(error_name(code))


@impl("doca_error_get_descr")
def _error_get_descr(code: int) -> int:
    return c_string(error_descr(code))


@impl("doca_version_runtime")
def _version_runtime() -> int:
    return c_string(emu_version.version_runtime())


# -- devices -----------------------------------------------------------------------------------------

class _PtrList:
    """A C array of handles given out by a ``*_create_list``, kept until its ``*_destroy_list``."""

    lists: dict[int, _PtrList] = {}

    def __init__(self, items: list[object]) -> None:
        self.items = items
        self.array = (ctypes.c_void_p * max(1, len(items)))(*(handle(o) for o in items))
        _PtrList.lists[ctypes.addressof(self.array)] = self

    @classmethod
    def destroy(cls, addr: int | None) -> None:
        lst = cls.lists.pop(addr or 0, None)
        if lst is None:
            raise DocaInvalidValue("not a list this library created (or destroyed already)")


@impl("doca_devinfo_create_list")
def _devinfo_create_list(out_list: int | None, out_n: int | None) -> None:
    infos: list[object] = list(emu_dev.devinfo_create_list())
    lst = _PtrList(infos)
    out_ptr(out_list, ctypes.addressof(lst.array))
    out_u32(out_n, len(infos))


@impl("doca_devinfo_destroy_list", "doca_devinfo_rep_destroy_list")
def _destroy_list(addr: int | None) -> None:
    _PtrList.destroy(addr)


@impl("doca_devinfo_rep_create_list")
def _devinfo_rep_create_list(dev: int | None, filt: int, out_list: int | None, out_n: int | None) -> None:
    reps: list[object] = list(obj(dev, EmuDev, "doca_dev").rep_list(filt))
    lst = _PtrList(reps)
    out_ptr(out_list, ctypes.addressof(lst.array))
    out_u32(out_n, len(reps))


@impl("doca_dev_open")
def _dev_open(info: int | None, out: int | None) -> None:
    out_ptr(out, handle(obj(info, EmuDevInfo, "doca_devinfo").open()))


@impl("doca_dev_close")
def _dev_close(dev: int | None) -> None:
    d = obj(dev, EmuDev, "doca_dev")
    d.close()
    forget(d)


@impl("doca_dev_rep_open")
def _dev_rep_open(info: int | None, out: int | None) -> None:
    out_ptr(out, handle(obj(info, EmuDevInfoRep, "doca_devinfo_rep").open()))


@impl("doca_dev_rep_close")
def _dev_rep_close(rep: int | None) -> None:
    r = obj(rep, EmuDevRep, "doca_dev_rep")
    r.close()
    forget(r)


@impl("doca_dev_as_devinfo")
def _dev_as_devinfo(dev: int | None) -> int:
    return handle(obj(dev, EmuDev, "doca_dev").devinfo)


@impl("doca_dev_rep_as_devinfo")
def _dev_rep_as_devinfo(rep: int | None) -> int:
    return handle(obj(rep, EmuDevRep, "doca_dev_rep").devinfo_rep)


def _put_str(dst: int | None, size: int, text: str, what: str) -> None:
    raw = text.encode()
    if size < len(raw) + 1:
        raise DocaInvalidValue(f"{what}: the buffer of {size} bytes cannot hold {len(raw) + 1}")
    out_bytes(dst, raw + b"\0")


def _put_raw(dst: int | None, size: int, raw: bytes, what: str) -> None:
    if size < len(raw):
        raise DocaInvalidValue(f"{what}: the buffer of {size} bytes cannot hold {len(raw)}")
    out_bytes(dst, raw)


_PCI_ADDR_SIZE = 13


@impl("doca_devinfo_get_pci_addr_str")
def _devinfo_pci(info: int | None, dst: int | None) -> None:
    _put_str(dst, _PCI_ADDR_SIZE, obj(info, EmuDevInfo, "doca_devinfo").pci_addr_str(), "pci_addr_str")


@impl("doca_devinfo_rep_get_pci_addr_str")
def _rep_pci(info: int | None, dst: int | None) -> None:
    _put_str(dst, _PCI_ADDR_SIZE, obj(info, EmuDevInfoRep, "doca_devinfo_rep").pci_addr_str(), "pci_addr_str")


@impl("doca_devinfo_is_equal_pci_addr")
def _devinfo_eq(info: int | None, pci: int | None, out: int | None) -> None:
    out_u8(out, int(obj(info, EmuDevInfo, "doca_devinfo").is_equal_pci_addr(read_str(pci, "pci_addr"))))


@impl("doca_devinfo_rep_is_equal_pci_addr")
def _rep_eq(info: int | None, pci: int | None, out: int | None) -> None:
    out_u8(out, int(obj(info, EmuDevInfoRep, "doca_devinfo_rep").is_equal_pci_addr(read_str(pci, "pci_addr"))))


def _bytes_getter(name: str, method: str) -> None:
    def get(info: int | None, dst: int | None, size: int) -> None:
        _put_raw(dst, size, getattr(obj(info, EmuDevInfo, "doca_devinfo"), method)(), name)
    impl(name)(get)


def _str_getter(name: str, cls: type, method: str) -> None:
    def get(info: int | None, dst: int | None, size: int) -> None:
        _put_str(dst, size, getattr(obj(info, cls, cls.__name__), method)(), name)
    impl(name)(get)


_bytes_getter("doca_devinfo_get_ipv4_addr", "ipv4_addr")
_bytes_getter("doca_devinfo_get_ipv6_addr", "ipv6_addr")
_bytes_getter("doca_devinfo_get_mac_addr", "mac_addr")
_str_getter("doca_devinfo_get_iface_name", EmuDevInfo, "iface_name")
_str_getter("doca_devinfo_get_ibdev_name", EmuDevInfo, "ibdev_name")
_str_getter("doca_devinfo_rep_get_vuid", EmuDevInfoRep, "vuid")
_str_getter("doca_devinfo_rep_get_iface_name", EmuDevInfoRep, "iface_name")


@impl("doca_devinfo_get_lid")
def _lid(info: int | None, out: int | None) -> None:
    out_u16(out, obj(info, EmuDevInfo, "doca_devinfo").lid())


@impl("doca_devinfo_get_vhca_id")
def _vhca(info: int | None, out: int | None) -> None:
    out_u16(out, obj(info, EmuDevInfo, "doca_devinfo").vhca_id())


@impl("doca_devinfo_rep_get_vhca_id")
def _rep_vhca(info: int | None, out: int | None) -> None:
    out_u16(out, obj(info, EmuDevInfoRep, "doca_devinfo_rep").vhca_id())


@impl("doca_devinfo_get_active_rate")
def _active_rate(info: int | None, out: int | None) -> None:
    rate = obj(info, EmuDevInfo, "doca_devinfo").active_rate()
    if emu_version.VERSION < (3, 0):  # 2.x writes a double of Gb/s
        if not out:
            raise DocaInvalidValue("NULL output pointer")
        ctypes.c_double.from_address(out).value = rate / 1e9
    else:
        out_u64(out, rate)


@impl("doca_devinfo_rep_get_pci_func_type")
def _rep_func_type(info: int | None, out: int | None) -> None:
    out_int(out, obj(info, EmuDevInfoRep, "doca_devinfo_rep").pci_func_type())


@impl("doca_devinfo_rep_get_is_hotplug")
def _rep_hotplug(info: int | None, out: int | None) -> None:
    out_u8(out, int(obj(info, EmuDevInfoRep, "doca_devinfo_rep").is_hotplug()))


def _cap(name: str, cap: str) -> None:
    def get(info: int | None, out: int | None) -> None:
        out_u8(out, int(obj(info, EmuDevInfo, "doca_devinfo").cap(cap)))
    impl(name)(get)


for _name, _capname in (("doca_devinfo_cap_is_hotplug_manager_supported", "hotplug_manager"),
                        ("doca_devinfo_cap_is_notification_moderation_supported", "notification_moderation"),
                        ("doca_devinfo_cap_is_accelerate_resource_reclaim_supported", "accelerate_resource_reclaim"),
                        ("doca_devinfo_rep_cap_is_filter_all_supported", "rep_filter_all"),
                        ("doca_devinfo_rep_cap_is_filter_net_supported", "rep_filter_net"),
                        ("doca_devinfo_rep_cap_is_filter_emulated_supported", "rep_filter_emulated")):
    _cap(_name, _capname)


# -- mmap --------------------------------------------------------------------------------------------

class _MmapExtra:
    """What C attaches to a doca_mmap beside the emulator's state."""

    __slots__ = ("user_data", "free_cb", "free_cookie")

    def __init__(self) -> None:
        self.user_data = 0
        self.free_cb: Any = None
        self.free_cookie: int | None = None


_mmap_extra: dict[int, _MmapExtra] = {}


def _extra(m: EmuMmap) -> _MmapExtra:
    e = _mmap_extra.get(id(m))
    if e is None:
        e = _mmap_extra[id(m)] = _MmapExtra()
    return e


def _mmap(p: int | None) -> EmuMmap:
    return obj(p, EmuMmap, "doca_mmap")


@impl("doca_mmap_create")
def _mmap_create(out: int | None) -> None:
    m = emu_mmap.mmap_create()
    out_ptr(out, handle(m))


@impl("doca_mmap_destroy")
def _mmap_destroy(p: int | None) -> None:
    m = _mmap(p)
    rng = m.get_memrange() if m.range_set and not m.from_export else None
    m.destroy()
    e = _mmap_extra.pop(id(m), None)
    _exports.pop(id(m), None)
    forget(m)
    if e is not None and e.free_cb is not None and rng is not None:
        e.free_cb(rng[0], rng[1], e.free_cookie)


_MemrangeFreeFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


@impl("doca_mmap_set_free_cb")
def _mmap_set_free_cb(p: int | None, cb: int | None, cookie: int | None) -> None:
    m = _mmap(p)
    if m.started:
        from ...errors import DocaBadState
        raise DocaBadState("doca_mmap_set_free_cb: mmap is started")
    e = _extra(m)
    e.free_cb, e.free_cookie = c_function(_MemrangeFreeFn, cb), cookie


@impl("doca_mmap_start")
def _mmap_start(p: int | None) -> None:
    _mmap(p).start()


@impl("doca_mmap_stop")
def _mmap_stop(p: int | None) -> None:
    _mmap(p).stop()


@impl("doca_mmap_add_dev")
def _mmap_add_dev(p: int | None, dev: int | None) -> None:
    _mmap(p).add_dev(obj(dev, EmuDev, "doca_dev"))


@impl("doca_mmap_rm_dev")
def _mmap_rm_dev(p: int | None, dev: int | None) -> None:
    _mmap(p).rm_dev(obj(dev, EmuDev, "doca_dev"))


def _export(kind: str) -> Callable[..., None]:
    def export(p: int | None, dev: int | None, out_blob: int | None, out_len: int | None) -> None:
        m = _mmap(p)
        blob: bytes = getattr(m, f"export_{kind}")(obj(dev, EmuDev, "doca_dev"))
        if not m.from_export and m.range_set and find_shared(m.addr, m.length) is None:
            log.warning("doca_mmap_export_%s: [%#x, +%d) is not shareable memory: only this process can "
                        "reach it through the export (allocate it with doca_py's Mmap.allocate or "
                        "SharedMemory for another process to map it)", kind, m.addr, m.length)
        keep = _exports.setdefault(id(m), {})
        buf = keep.get(kind)
        if buf is None or buf.raw != blob:
            buf = keep[kind] = ctypes.create_string_buffer(blob, len(blob))
        out_ptr(out_blob, ctypes.addressof(buf))
        out_u64(out_len, len(blob))
    return export


_exports: dict[int, dict[str, Any]] = {}  # the export blobs C points at, alive while the map lives
impl("doca_mmap_export_pci")(_export("pci"))
impl("doca_mmap_export_rdma")(_export("rdma"))


@impl("doca_mmap_create_from_export")
def _mmap_create_from_export(user_data: int | None, blob: int | None, length: int, dev: int | None,
                             out: int | None) -> None:
    if not blob or not length:
        raise DocaInvalidValue("doca_mmap_create_from_export: empty export descriptor")
    m = emu_mmap.mmap_create_from_export(ctypes.string_at(blob, length), obj(dev, EmuDev, "doca_dev"))
    if user_data is not None:  # a `const union doca_data *`: read the value (NULL: none)
        _extra(m).user_data = ctypes.c_uint64.from_address(user_data).value
    out_ptr(out, handle(m))


@impl("doca_mmap_set_memrange")
def _mmap_set_memrange(p: int | None, addr: int | None, length: int) -> None:
    _mmap(p).set_memrange(addr or 0, length)


@impl("doca_mmap_get_memrange")
def _mmap_get_memrange(p: int | None, out_addr: int | None, out_len: int | None) -> None:
    addr, length = _mmap(p).get_memrange()
    out_ptr(out_addr, addr)
    out_u64(out_len, length)


@impl("doca_mmap_set_permissions")
def _mmap_set_permissions(p: int | None, flags: int) -> None:
    _mmap(p).set_permissions(flags)


@impl("doca_mmap_set_max_num_devices")
def _mmap_set_max(p: int | None, n: int) -> None:
    _mmap(p).set_max_num_devices(n)


@impl("doca_mmap_get_max_num_devices")
def _mmap_get_max(p: int | None, out: int | None) -> None:
    out_u32(out, _mmap(p).get_max_num_devices())


@impl("doca_mmap_get_num_bufs")
def _mmap_num_bufs(p: int | None, out: int | None) -> None:
    out_u32(out, _mmap(p).get_num_bufs())


@impl("doca_mmap_get_exported")
def _mmap_exported(p: int | None, out: int | None) -> None:
    out_u8(out, int(_mmap(p).get_exported()))


@impl("doca_mmap_get_from_export")
def _mmap_from_export(p: int | None, out: int | None) -> None:
    out_u8(out, int(_mmap(p).get_from_export()))


@impl("doca_mmap_enable_thread_safety")
def _mmap_thread_safety(p: int | None) -> None:
    _mmap(p).enable_thread_safety()


@impl("doca_mmap_set_user_data")
def _mmap_set_ud(p: int | None, ud: int) -> None:
    _extra(_mmap(p)).user_data = ud


@impl("doca_mmap_get_user_data")
def _mmap_get_ud(p: int | None, out: int | None) -> None:
    out_u64(out, _extra(_mmap(p)).user_data)


@impl("doca_mmap_cap_is_export_pci_supported")
def _mmap_cap_export(info: int | None, out: int | None) -> None:
    out_u8(out, int(emu_mmap.cap_is_export_pci_supported(obj(info, EmuDevInfo, "doca_devinfo"))))


@impl("doca_mmap_cap_is_create_from_export_pci_supported")
def _mmap_cap_from_export(info: int | None, out: int | None) -> None:
    out_u8(out, int(emu_mmap.cap_is_create_from_export_pci_supported(obj(info, EmuDevInfo, "doca_devinfo"))))


# -- doca_buf ----------------------------------------------------------------------------------------

def buf_of(p: int | None) -> EmuBuf:
    """The buf behind a ``doca_buf *`` (``DocaInvalidValue`` for anything else)."""
    return obj(p, EmuBuf, "doca_buf")


def opt_buf(p: int | None) -> EmuBuf | None:
    """:func:`buf_of`, NULL allowed."""
    return opt(p, EmuBuf, "doca_buf")


def buf_out(out: int | None, b: EmuBuf | None) -> None:
    """Write *b*'s handle (NULL for ``None``) to a ``doca_buf **``."""
    out_ptr(out, handle(b) if b is not None else None)


@impl("doca_buf_inc_refcount")
def _buf_inc(p: int | None, out: int | None) -> None:
    n = buf_of(p).inc_refcount()
    if out:
        out_u16(out, n)


@impl("doca_buf_dec_refcount")
def _buf_dec(p: int | None, out: int | None) -> None:
    n = buf_of(p).dec_refcount()
    if out:
        out_u16(out, n)


@impl("doca_buf_get_refcount")
def _buf_refcount(p: int | None, out: int | None) -> None:
    out_u16(out, buf_of(p).get_refcount())


@impl("doca_buf_get_len")
def _buf_len(p: int | None, out: int | None) -> None:
    out_u64(out, buf_of(p).get_len())


@impl("doca_buf_get_head")
def _buf_head(p: int | None, out: int | None) -> None:
    out_ptr(out, buf_of(p).get_head())


@impl("doca_buf_get_data_len")
def _buf_data_len(p: int | None, out: int | None) -> None:
    out_u64(out, buf_of(p).get_data_len())


@impl("doca_buf_get_data")
def _buf_data(p: int | None, out: int | None) -> None:
    out_ptr(out, buf_of(p).get_data())


@impl("doca_buf_set_data")
def _buf_set_data(p: int | None, data: int | None, n: int) -> None:
    buf_of(p).set_data(data or 0, n)


@impl("doca_buf_set_data_len")
def _buf_set_data_len(p: int | None, n: int) -> None:
    buf_of(p).set_data_len(n)


@impl("doca_buf_reset_data_len")
def _buf_reset(p: int | None) -> None:
    buf_of(p).reset_data_len()


@impl("doca_buf_get_next_in_list")
def _buf_next(p: int | None, out: int | None) -> None:
    buf_out(out, buf_of(p).get_next_in_list())


@impl("doca_buf_get_last_in_list")
def _buf_last(p: int | None, out: int | None) -> None:
    buf_out(out, buf_of(p).get_last_in_list())


@impl("doca_buf_is_last_in_list")
def _buf_is_last(p: int | None, out: int | None) -> None:
    out_u8(out, int(buf_of(p).is_last_in_list()))


@impl("doca_buf_is_first_in_list")
def _buf_is_first(p: int | None, out: int | None) -> None:
    out_u8(out, int(buf_of(p).is_first_in_list()))


@impl("doca_buf_is_in_list")
def _buf_in_list(p: int | None, out: int | None) -> None:
    out_u8(out, int(buf_of(p).is_in_list()))


@impl("doca_buf_get_list_len")
def _buf_list_len(p: int | None, out: int | None) -> None:
    out_u32(out, buf_of(p).get_list_len())


@impl("doca_buf_chain_list")
def _buf_chain(head: int | None, other: int | None) -> None:
    buf_of(head).chain_list(buf_of(other))


@impl("doca_buf_chain_list_tail")
def _buf_chain_tail(list1: int | None, list1_tail: int | None, list2: int | None) -> None:
    buf_of(list1_tail)  # validated: DOCA uses it to skip the walk; the emulator walks
    buf_of(list1).chain_list(buf_of(list2))


@impl("doca_buf_unchain_list")
def _buf_unchain(list1: int | None, list2: int | None) -> None:
    buf_of(list1).unchain_list(buf_of(list2))


# -- doca_buf_inventory ------------------------------------------------------------------------------

_inv_ud: dict[int, int] = {}


def _inv(p: int | None) -> EmuBufInventory:
    return obj(p, EmuBufInventory, "doca_buf_inventory")


@impl("doca_buf_inventory_create")
def _inv_create(n: int, out: int | None) -> None:
    out_ptr(out, handle(emu_buf.buf_inventory_create(n)))


@impl("doca_buf_inventory_destroy")
def _inv_destroy(p: int | None) -> None:
    inv = _inv(p)
    inv.destroy()  # refused while a buf is out: every descriptor is in inv.free now
    _inv_ud.pop(id(inv), None)
    for b in inv.free:
        forget(b)
    forget(inv)


@impl("doca_buf_inventory_start")
def _inv_start(p: int | None) -> None:
    _inv(p).start()


@impl("doca_buf_inventory_stop")
def _inv_stop(p: int | None) -> None:
    _inv(p).stop()


@impl("doca_buf_inventory_expand")
def _inv_expand(p: int | None, n: int) -> None:
    _inv(p).expand(n)


@impl("doca_buf_inventory_get_num_elements")
def _inv_num(p: int | None, out: int | None) -> None:
    out_u32(out, _inv(p).get_num_elements())


@impl("doca_buf_inventory_get_num_free_elements")
def _inv_free(p: int | None, out: int | None) -> None:
    out_u32(out, _inv(p).get_num_free_elements())


@impl("doca_buf_inventory_set_user_data")
def _inv_set_ud(p: int | None, ud: int) -> None:
    _inv_ud[id(_inv(p))] = ud


@impl("doca_buf_inventory_get_user_data")
def _inv_get_ud(p: int | None, out: int | None) -> None:
    out_u64(out, _inv_ud.get(id(_inv(p)), 0))


@impl("doca_buf_inventory_buf_get_by_args")
def _inv_get_by_args(p: int | None, m: int | None, addr: int | None, length: int, data: int | None,
                     data_len: int, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    b = _inv(p).get_by_args(_mmap(m), addr or 0, length, data or 0, data_len)
    out_ptr(out, handle(b))


@impl("doca_buf_inventory_buf_dup")
def _inv_dup(p: int | None, src: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    out_ptr(out, handle(_inv(p).dup(buf_of(src))))


@impl("doca_buf_inventory_buf_reuse_by_args")
def _buf_reuse_args(p: int | None, addr: int | None, length: int, data: int | None, data_len: int) -> None:
    buf_of(p).reuse_by_args(addr or 0, length, data or 0, data_len)


@impl("doca_buf_inventory_buf_reuse_by_addr")
def _buf_reuse_addr(p: int | None, addr: int | None, length: int) -> None:
    buf_of(p).reuse_by_args(addr or 0, length, addr or 0, 0)


@impl("doca_buf_inventory_buf_reuse_by_data")
def _buf_reuse_data(p: int | None, data: int | None, data_len: int) -> None:
    buf_of(p).reuse_by_args(data or 0, data_len, data or 0, data_len)


# -- doca_pe -----------------------------------------------------------------------------------------

def _pe(p: int | None) -> EmuPe:
    return obj(p, EmuPe, "doca_pe")


@impl("doca_pe_create")
def _pe_create(out: int | None) -> None:
    out_ptr(out, handle(emu_pe.pe_create()))


@impl("doca_pe_destroy")
def _pe_destroy(p: int | None) -> None:
    pe = _pe(p)
    pe.destroy()
    forget(pe)


@impl("doca_pe_progress")
def _pe_progress(p: int | None) -> int:
    return 1 if _pe(p).progress() else 0


@impl("doca_pe_get_notification_handle")
def _pe_get_notif(p: int | None, out: int | None) -> None:
    out_int(out, _pe(p).get_notification_handle())


@impl("doca_pe_request_notification")
def _pe_request(p: int | None) -> None:
    _pe(p).request_notification()


@impl("doca_pe_clear_notification")
def _pe_clear(p: int | None, h: int) -> None:
    _pe(p).clear_notification(h)


@impl("doca_pe_get_num_inflight_tasks")
def _pe_inflight(p: int | None, out: int | None) -> None:
    out_u64(out, _pe(p).get_num_inflight_tasks())


@impl("doca_pe_set_event_mode")
def _pe_event_mode(p: int | None, mode: int) -> None:
    _pe(p).set_event_mode(mode)


@impl("doca_pe_connect_ctx")
def _pe_connect(p: int | None, ctx: int | None) -> None:
    _pe(p).connect_ctx(ctx_of(ctx))


# -- doca_ctx ----------------------------------------------------------------------------------------

class _CtxExtra:
    __slots__ = ("user_data", "state_cb", "handle")

    def __init__(self, h: int) -> None:
        self.user_data = 0
        self.state_cb: Any = None
        self.handle = h


_ctx_extra: dict[int, _CtxExtra] = {}


def ctx_of(p: int | None) -> EmuCtx:
    """The ctx behind a ``doca_ctx *`` (every library's ``*_as_ctx`` gives its object's own handle)."""
    return obj(p, EmuCtx, "doca_ctx")


def ctx_extra(c: EmuCtx) -> _CtxExtra:
    e = _ctx_extra.get(id(c))
    if e is None:
        e = _ctx_extra[id(c)] = _CtxExtra(handle(c))
    return e


def forget_ctx(c: EmuCtx) -> None:
    """A library's ``*_destroy`` ran: drop the handles of the ctx and its tasks, and its C state."""
    _ctx_extra.pop(id(c), None)
    for pool in c.pools:
        for t in pool.free:
            forget(t)
    forget(c)


@impl("doca_ctx_start")
def _ctx_start(p: int | None) -> int:
    return _IN_PROGRESS if ctx_of(p).start() == _STARTING else 0


@impl("doca_ctx_stop")
def _ctx_stop(p: int | None) -> int:
    return _IN_PROGRESS if ctx_of(p).stop() == _STOPPING else 0


@impl("doca_ctx_get_state")
def _ctx_state(p: int | None, out: int | None) -> None:
    out_int(out, ctx_of(p).get_state())


@impl("doca_ctx_get_num_inflight_tasks")
def _ctx_inflight(p: int | None, out: int | None) -> None:
    out_u64(out, ctx_of(p).get_num_inflight_tasks())


@impl("doca_ctx_set_user_data")
def _ctx_set_ud(p: int | None, ud: int) -> None:
    ctx_extra(ctx_of(p)).user_data = ud


@impl("doca_ctx_get_user_data")
def _ctx_get_ud(p: int | None, out: int | None) -> None:
    out_u64(out, ctx_extra(ctx_of(p)).user_data)


@impl("doca_ctx_set_state_changed_cb")
def _ctx_set_state_cb(p: int | None, cb: int | None) -> None:
    c = ctx_of(p)
    e = ctx_extra(c)
    fn = c_function(CtxStateFn, cb)

    def changed(prev: int, nxt: int) -> None:
        if fn is not None:
            fn(e.user_data, e.handle, prev, nxt)

    c.set_state_changed_cb(changed)
    e.state_cb = fn


@impl("doca_ctx_flush_tasks")
def _ctx_flush(p: int | None) -> None:
    ctx_of(p).flush_tasks()


# -- doca_task ---------------------------------------------------------------------------------------

class TaskRec:
    """A task's C side: its handle and ``union doca_data`` (the emulated task's ``owner``)."""

    __slots__ = ("addr", "user_data", "extra")

    def __init__(self, addr: int) -> None:
        self.addr = addr
        self.user_data = 0
        self.extra: Any = None  # library-specific C state (e.g. an out-pointer the task writes)


def task_of(p: int | None) -> EmuTask:
    """The task behind a ``doca_task *`` or a typed task pointer (one handle for both)."""
    return obj(p, EmuTask, "doca_task")


def task_set_conf(pool: TaskPool[Any], ok_cb: int | None, err_cb: int | None, num: int) -> None:
    """A ``*_task_*_set_conf``: the pool completes through the C callbacks, with the ctx's user data."""
    ok = c_function(TaskCompletionFn, ok_cb)
    err = c_function(TaskCompletionFn, err_cb)
    if ok is None or err is None:
        raise DocaInvalidValue("set_conf needs a success and an error completion callback")
    e = ctx_extra(pool.ctx)

    # The pool calls these with (owner, owner.user_data, e.user_data): C gets the task's handle instead.
    def success(rec: TaskRec, task_ud: int, ctx_ud: int) -> None:
        ok(rec.addr, task_ud, ctx_ud)

    def error(rec: TaskRec, task_ud: int, ctx_ud: int) -> None:
        err(rec.addr, task_ud, ctx_ud)

    pool.set_conf(success, error, num, e)


def task_alloc(t: EmuTask, user_data: int, out: int | None) -> TaskRec:
    """An allocated task handed to C: its handle written to *out*, its user data set."""
    rec = t.owner
    if not isinstance(rec, TaskRec):
        rec = t.owner = TaskRec(handle(t))
    rec.user_data = user_data
    if out:
        out_ptr(out, rec.addr)
    return rec


def alloc_or_fail(alloc: Callable[[], EmuTask], user_data: int, out: int | None) -> TaskRec:
    """:func:`task_alloc` of ``alloc()``, checking *out* first (a NULL out must not leak a task)."""
    if not out:
        raise DocaInvalidValue("NULL output pointer for the task")
    return task_alloc(alloc(), user_data, out)


def _rec(t: EmuTask) -> TaskRec:
    rec = t.owner
    if not isinstance(rec, TaskRec):
        raise DocaInvalidValue("task was not allocated through libdoca")
    return rec


@impl("doca_task_submit")
def _task_submit(p: int | None) -> None:
    task_of(p).submit()


@impl("doca_task_try_submit")
def _task_try_submit(p: int | None) -> None:
    task_of(p).try_submit()


@impl("doca_task_submit_ex")
def _task_submit_ex(p: int | None, flags: int) -> None:
    task_of(p).submit_ex(flags)


@impl("doca_task_free")
def _task_free(p: int | None) -> None:
    try:
        task_of(p).free()
    except Exception:  # void in C: a misuse is logged (the wrapper logs DocaErrors at debug only)
        log.warning("doca_task_free(%#x) refused", p or 0, exc_info=True)


@impl("doca_task_get_status")
def _task_status(p: int | None) -> int:
    return task_of(p).get_status()


@impl("doca_task_set_user_data")
def _task_set_ud(p: int | None, ud: int) -> None:
    _rec(task_of(p)).user_data = ud


@impl("doca_task_get_user_data")
def _task_get_ud(p: int | None) -> int:
    return _rec(task_of(p)).user_data


@impl("doca_task_get_ctx")
def _task_ctx(p: int | None) -> int:
    return ctx_extra(task_of(p).ctx).handle

