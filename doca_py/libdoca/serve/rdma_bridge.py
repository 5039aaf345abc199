"""``doca_rdma_bridge.h`` (libdoca_common) served by the emulator: the bridge between DOCA and rdma-core.

An emulated device is software, with no ibverbs device (and so no protection domain or memory keys)
behind it: every bridge call checks its arguments as DOCA does, then answers ``DOCA_ERROR_NOT_SUPPORTED``
saying why, as the emulated backend does.
"""

from __future__ import annotations

from ...emulated import dev as emu_dev
from ...emulated.dev import EmuDev
from ...emulated.mmap import EmuMmap
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import impl, obj, out_ptr
from .common import buf_of

_NO_MKEY = ("{what}: the emulated backend has no ibverbs memory keys: its devices are software, with no RDMA "
            "device (rdma-core) behind them; bridging DOCA and ibverbs needs the native backend on a host or "
            "BlueField with DOCA installed")


@impl("doca_rdma_bridge_get_dev_pd")
def _get_dev_pd(dev: int | None, out: int | None) -> None:
    d = obj(dev, EmuDev, "doca_dev")
    if not out:
        raise DocaInvalidValue("doca_rdma_bridge_get_dev_pd: NULL output pointer")
    out_ptr(out, d.get_pd())  # the emulator refuses: no ibverbs device


@impl("doca_rdma_bridge_open_dev_from_pd")
def _open_dev_from_pd(pd: int | None, out: int | None) -> None:
    if not pd or not out:
        raise DocaInvalidValue("doca_rdma_bridge_open_dev_from_pd: NULL argument")
    emu_dev.open_dev_from_pd(pd)  # the emulator refuses: no ibverbs PD names an emulated device


@impl("doca_rdma_bridge_get_buf_mkey")
def _get_buf_mkey(buf: int | None, dev: int | None, out: int | None) -> None:
    buf_of(buf)
    obj(dev, EmuDev, "doca_dev")
    if not out:
        raise DocaInvalidValue("doca_rdma_bridge_get_buf_mkey: NULL output pointer")
    raise DocaNotSupported(_NO_MKEY.format(what="doca_rdma_bridge_get_buf_mkey"))


@impl("doca_rdma_bridge_get_mmap_mkey_from_pd")
def _get_mmap_mkey_from_pd(mmap: int | None, pd: int | None, out: int | None) -> None:
    obj(mmap, EmuMmap, "doca_mmap")
    if not pd or not out:
        raise DocaInvalidValue("doca_rdma_bridge_get_mmap_mkey_from_pd: NULL argument")
    raise DocaNotSupported(_NO_MKEY.format(what="doca_rdma_bridge_get_mmap_mkey_from_pd"))
