"""``doca_sync_event.h`` differs between DOCA 2.6 and 3.0: each declaration says which versions have it,
and the object layer calls a 2.6 library's own name where 3.0 only renamed a function."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from doca_py.native import sync_event as nse
from doca_py.native.capi import MissingFunction
from doca_py.native.capi.sync_event import SYNC_EVENT

# From the DOCA 3.0 header, absent from 2.6's.
ONLY_30 = {f"doca_sync_event_{n}" for n in (
    "add_publisher_location_remote_pci", "add_subscriber_location_remote_pci", "set_doca_buf",
    "cap_task_wait_eq_is_supported", "task_wait_eq_set_conf", "task_wait_eq_alloc_init", "task_wait_eq_as_doca_task",
    "task_wait_eq_set_wait_val", "task_wait_eq_get_wait_val", "task_wait_eq_set_mask", "task_wait_eq_get_mask",
    "cap_task_wait_neq_is_supported", "task_wait_neq_set_conf", "task_wait_neq_alloc_init",
    "task_wait_neq_as_doca_task", "task_wait_neq_set_wait_val", "task_wait_neq_get_wait_val",
    "task_wait_neq_set_mask", "task_wait_neq_get_mask", "export_to_remote_pci",
    "cap_is_export_to_remote_pci_supported", "get_dpa_handle", "get_gpu_handle", "remote_net_get_dpa_handle",
    "remote_net_get_gpu_handle", "wait_eq", "wait_eq_yield", "wait_neq", "wait_neq_yield")}
# From the DOCA 2.6 header, absent from 3.0's.
ONLY_26 = {f"doca_sync_event_{n}" for n in (
    "add_publisher_location_dpu", "add_subscriber_location_dpu", "cap_task_wait_gt_is_supported",
    "task_wait_gt_set_conf", "task_wait_gt_alloc_init", "task_wait_gt_as_doca_task", "task_wait_gt_set_wait_val",
    "task_wait_gt_get_wait_val", "task_wait_gt_set_mask", "task_wait_gt_get_mask", "export_to_dpu",
    "cap_is_export_to_dpu_supported", "export_to_dpa", "export_to_gpu", "remote_net_export_to_dpa",
    "remote_net_export_to_gpu")}


def test_each_function_is_declared_with_the_versions_that_have_it() -> None:
    assert (len(ONLY_30), len(ONLY_26)) == (29, 16)
    by_name = {d.name: d for d in SYNC_EVENT}
    assert len(by_name) == len(SYNC_EVENT) and ONLY_30 | ONLY_26 <= set(by_name)
    assert {n for n, d in by_name.items() if d.since is not None} == ONLY_30
    assert {n for n, d in by_name.items() if d.until is not None} == ONLY_26
    assert all(by_name[n].since == (3, 0) for n in ONLY_30) and all(by_name[n].until == (2, 6) for n in ONLY_26)
    # A missing 3.0 function on a 2.6 runtime names the version that has it, not a broken library.
    text = MissingFunction(by_name["doca_sync_event_wait_eq"], "common", (2, 6, 58)).message
    assert "from DOCA 3.0" in text and "not DOCA's" not in text


def test_renamed_functions_pair_a_3_0_name_with_its_2_6_name() -> None:
    by_name = {d.name: d for d in SYNC_EVENT}
    for new, old in nse.RENAMED_26.items():
        assert new in ONLY_30 and old in ONLY_26
        assert by_name[new].argtypes == by_name[old].argtypes and by_name[new].restype == by_name[old].restype
        assert new in by_name[old].note


class _Fn:
    def __init__(self, name: str) -> None:
        self.__name__ = name
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> int:
        self.calls.append(args)
        return 0


def _lib(names: list[str]) -> Any:
    attrs: dict[str, Any] = {}
    for d in SYNC_EVENT:
        attrs[d.name] = _Fn(d.name) if d.name in names else MissingFunction(d, "common", (2, 6, 58))
    return SimpleNamespace(**attrs)


@pytest.mark.parametrize("exported", ["2.6", "3.0", "neither"])
def test_the_object_layer_calls_the_name_the_library_exports(exported: str, monkeypatch: pytest.MonkeyPatch) -> None:
    new, old = "doca_sync_event_add_publisher_location_remote_pci", "doca_sync_event_add_publisher_location_dpu"
    fake = _lib({"2.6": [old], "3.0": [new], "neither": []}[exported])
    monkeypatch.setattr(nse, "lib", lambda: fake)
    fn = nse._fn(new)
    if exported == "neither":
        assert not fn and fn.__name__ == new  # the 3.0 name's stub: it says which versions have it
    else:
        assert fn is getattr(fake, old if exported == "2.6" else new)
