"""libdoca's doca_sync_event: C programs and the native backend over libdoca 2.6 and 3.0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .cbuild import compile_c, run_c
from .env import native_env

ROOT = Path(__file__).resolve().parents[2]

DECLS = r"""
#include <pthread.h>
struct doca_sync_event; struct doca_ctx; struct doca_pe; struct doca_task; struct doca_dev; struct doca_devinfo;
struct doca_mmap; struct doca_buf_inventory; struct doca_buf;
typedef void (*task_cb)(struct doca_task *, union doca_data, union doca_data);
doca_error_t doca_sync_event_create(struct doca_sync_event **);
doca_error_t doca_sync_event_destroy(struct doca_sync_event *);
doca_error_t doca_sync_event_add_publisher_location_cpu(struct doca_sync_event *, struct doca_dev *);
doca_error_t doca_sync_event_add_subscriber_location_cpu(struct doca_sync_event *, struct doca_dev *);
doca_error_t doca_sync_event_set_addr(struct doca_sync_event *, uint64_t *);
doca_error_t doca_sync_event_set_doca_buf(struct doca_sync_event *, struct doca_buf *);
doca_error_t doca_sync_event_start(struct doca_sync_event *);
doca_error_t doca_sync_event_stop(struct doca_sync_event *);
doca_error_t doca_sync_event_get(struct doca_sync_event *, uint64_t *);
doca_error_t doca_sync_event_update_set(struct doca_sync_event *, uint64_t);
doca_error_t doca_sync_event_update_add(struct doca_sync_event *, uint64_t, uint64_t *);
doca_error_t doca_sync_event_wait_gt(struct doca_sync_event *, uint64_t, uint64_t);
doca_error_t doca_sync_event_wait_gt_yield(struct doca_sync_event *, uint64_t, uint64_t);
struct doca_ctx *doca_sync_event_as_ctx(struct doca_sync_event *);
doca_error_t doca_sync_event_task_get_set_conf(struct doca_sync_event *, task_cb, task_cb, uint32_t);
doca_error_t doca_sync_event_task_get_alloc_init(struct doca_sync_event *, uint64_t *, union doca_data, void **);
struct doca_task *doca_sync_event_task_get_as_doca_task(void *);
uint64_t *doca_sync_event_task_get_get_ret_val_ptr(void *);
doca_error_t doca_sync_event_task_wait_gt_set_conf(struct doca_sync_event *, task_cb, task_cb, uint32_t);
doca_error_t doca_sync_event_task_wait_gt_alloc_init(struct doca_sync_event *, uint64_t, uint64_t, union doca_data,
						     void **);
struct doca_task *doca_sync_event_task_wait_gt_as_doca_task(void *);
uint64_t doca_sync_event_task_wait_gt_get_wait_val(void *);
doca_error_t doca_pe_create(struct doca_pe **);
doca_error_t doca_pe_destroy(struct doca_pe *);
uint8_t doca_pe_progress(struct doca_pe *);
doca_error_t doca_pe_connect_ctx(struct doca_pe *, struct doca_ctx *);
doca_error_t doca_ctx_start(struct doca_ctx *);
doca_error_t doca_ctx_stop(struct doca_ctx *);
doca_error_t doca_ctx_set_user_data(struct doca_ctx *, union doca_data);
doca_error_t doca_task_submit(struct doca_task *);
doca_error_t doca_task_get_status(const struct doca_task *);
void doca_task_free(struct doca_task *);
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***, uint32_t *);
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **);
doca_error_t doca_dev_open(struct doca_devinfo *, struct doca_dev **);
doca_error_t doca_dev_close(struct doca_dev *);
doca_error_t doca_mmap_create(struct doca_mmap **);
doca_error_t doca_mmap_set_memrange(struct doca_mmap *, void *, size_t);
doca_error_t doca_mmap_add_dev(struct doca_mmap *, struct doca_dev *);
doca_error_t doca_mmap_start(struct doca_mmap *);
doca_error_t doca_mmap_stop(struct doca_mmap *);
doca_error_t doca_mmap_destroy(struct doca_mmap *);
doca_error_t doca_buf_inventory_create(size_t, struct doca_buf_inventory **);
doca_error_t doca_buf_inventory_start(struct doca_buf_inventory *);
doca_error_t doca_buf_inventory_destroy(struct doca_buf_inventory *);
doca_error_t doca_buf_inventory_buf_get_by_args(struct doca_buf_inventory *, struct doca_mmap *, void *, size_t,
						void *, size_t, struct doca_buf **);
doca_error_t doca_buf_dec_refcount(struct doca_buf *, uint16_t *);

static __attribute__((unused)) struct doca_dev *open_dev(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev;
	uint32_t n;
	CHECK(doca_devinfo_create_list(&list, &n));
	CHECK(doca_dev_open(list[0], &dev));
	CHECK(doca_devinfo_destroy_list(list));
	return dev;
}
"""


def _run(tmp_path: Path, body: str, version: str | None = None) -> str:
    proc = run_c(compile_c(tmp_path, DECLS + body, version))
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def test_a_c_thread_waits_for_the_value_another_c_thread_sets(tmp_path: Path) -> None:
    """Both threads enter the emulator through C (the waiter holds no GIL while it spins: the emulator's
    wait loop gives it back between reads), so the publisher runs and the wait ends."""
    out = _run(tmp_path, r"""
static struct doca_sync_event *se;
static void *waiter(void *arg)
{
	CHECK(doca_sync_event_wait_gt(se, 41, UINT64_MAX));
	CHECK(doca_sync_event_wait_gt_yield(se, 99, 0xFF));
	return NULL;
}
int main(void)
{
	struct doca_dev *dev = open_dev();
	pthread_t t;
	uint64_t v, old;
	CHECK(doca_sync_event_create(&se));
	CHECK(doca_sync_event_add_publisher_location_cpu(se, dev));
	CHECK(doca_sync_event_add_subscriber_location_cpu(se, dev));
	CHECK(doca_sync_event_start(se));
	pthread_create(&t, NULL, waiter, NULL);
	CHECK(doca_sync_event_update_set(se, 42));
	CHECK(doca_sync_event_update_add(se, 58, &old)); /* 100 & 0xFF = 100 > 99 */
	pthread_join(t, NULL);
	CHECK(doca_sync_event_get(se, &v));
	printf("old=%llu value=%llu\n", (unsigned long long)old, (unsigned long long)v);
	CHECK(doca_sync_event_stop(se));
	CHECK(doca_sync_event_destroy(se));
	CHECK(doca_dev_close(dev));
	return 0;
}
""")
    assert out == "old=42 value=100\n"


def test_set_addr_keeps_the_value_in_the_callers_memory(tmp_path: Path) -> None:
    out = _run(tmp_path, r"""
int main(void)
{
	struct doca_sync_event *se;
	static uint64_t cell[2] __attribute__((aligned(8)));
	uint64_t v;
	CHECK(doca_sync_event_create(&se));
	if (doca_sync_event_set_addr(se, (uint64_t *)((char *)cell + 4)) == 0) /* not 64-bit aligned */
		return 2;
	CHECK(doca_sync_event_set_addr(se, &cell[1]));
	CHECK(doca_sync_event_start(se));
	if (doca_sync_event_set_addr(se, &cell[0]) == 0) /* started: configuration is over */
		return 3;
	CHECK(doca_sync_event_update_set(se, 7));
	cell[1] += 5; /* the program's own write is the event's value */
	CHECK(doca_sync_event_get(se, &v));
	printf("cell=%llu get=%llu\n", (unsigned long long)cell[1], (unsigned long long)v);
	CHECK(doca_sync_event_stop(se));
	CHECK(doca_sync_event_destroy(se));
	printf("after destroy cell=%llu\n", (unsigned long long)cell[1]);
	return 0;
}
""")
    assert out == "cell=12 get=12\nafter destroy cell=12\n"


def test_set_doca_buf_keeps_the_value_in_the_buffer(tmp_path: Path) -> None:
    out = _run(tmp_path, r"""
int main(void)
{
	struct doca_dev *dev = open_dev();
	struct doca_sync_event *se;
	struct doca_mmap *mm;
	struct doca_buf_inventory *inv;
	struct doca_buf *buf, *short_buf;
	static uint64_t mem[4] __attribute__((aligned(64)));
	CHECK(doca_mmap_create(&mm));
	CHECK(doca_mmap_set_memrange(mm, mem, sizeof(mem)));
	CHECK(doca_mmap_add_dev(mm, dev));
	CHECK(doca_mmap_start(mm));
	CHECK(doca_buf_inventory_create(2, &inv));
	CHECK(doca_buf_inventory_start(inv));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem, sizeof(mem), &mem[2], 8, &buf));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem, sizeof(mem), &mem[1], 4, &short_buf));
	CHECK(doca_sync_event_create(&se));
	printf("short: %d\n", doca_sync_event_set_doca_buf(se, short_buf)); /* NOT_PERMITTED: not 8 bytes */
	CHECK(doca_sync_event_set_doca_buf(se, buf));
	CHECK(doca_sync_event_start(se));
	CHECK(doca_sync_event_update_set(se, 0x1234));
	printf("mem[2]=%#llx\n", (unsigned long long)mem[2]);
	CHECK(doca_sync_event_stop(se));
	CHECK(doca_sync_event_destroy(se));
	CHECK(doca_buf_dec_refcount(buf, NULL));
	CHECK(doca_buf_dec_refcount(short_buf, NULL));
	CHECK(doca_buf_inventory_destroy(inv));
	CHECK(doca_mmap_stop(mm));
	CHECK(doca_mmap_destroy(mm));
	CHECK(doca_dev_close(dev));
	return 0;
}
""")
    assert out == "short: 2\nmem[2]=0x1234\n"  # DOCA_ERROR_NOT_PERMITTED


def test_doca_26_wait_gt_task_and_the_get_task_result(tmp_path: Path) -> None:
    """DOCA 2.6's wait-greater-than task stays in flight until the value passes; a get task writes its
    result through the caller's pointer before its completion callback runs."""
    out = _run(tmp_path, r"""
static int done;
static uint64_t seen_in_cb;
static void ok(struct doca_task *t, union doca_data ud, union doca_data ctx_ud)
{
	if (ud.u64 == 1)
		seen_in_cb = *doca_sync_event_task_get_get_ret_val_ptr(ud.ptr == NULL ? NULL : (void *)t);
	printf("done %llu ctx %llu\n", (unsigned long long)ud.u64, (unsigned long long)ctx_ud.u64);
	done++;
}
static void err(struct doca_task *t, union doca_data ud, union doca_data ctx_ud) { printf("error\n"); done++; }
int main(void)
{
	struct doca_sync_event *se;
	struct doca_pe *pe;
	void *get, *wait;
	uint64_t ret = 0;
	int i;
	CHECK(doca_sync_event_create(&se));
	struct doca_ctx *ctx = doca_sync_event_as_ctx(se);
	if (!ctx)
		return 2;
	CHECK(doca_pe_create(&pe));
	CHECK(doca_pe_connect_ctx(pe, ctx));
	CHECK(doca_ctx_set_user_data(ctx, (union doca_data){.u64 = 77}));
	CHECK(doca_sync_event_task_get_set_conf(se, ok, err, 1));
	CHECK(doca_sync_event_task_wait_gt_set_conf(se, ok, err, 1));
	CHECK(doca_ctx_start(ctx));
	CHECK(doca_sync_event_task_wait_gt_alloc_init(se, 3, 0xF, (union doca_data){.u64 = 2}, &wait));
	printf("wait_val %llu\n", (unsigned long long)doca_sync_event_task_wait_gt_get_wait_val(wait));
	CHECK(doca_task_submit(doca_sync_event_task_wait_gt_as_doca_task(wait)));
	for (i = 0; i < 100; i++)
		doca_pe_progress(pe);
	printf("after 100 progress: %d done\n", done);
	CHECK(doca_sync_event_update_set(se, 0x14)); /* 0x14 & 0xF = 4 > 3 */
	while (done < 1)
		doca_pe_progress(pe);
	CHECK(doca_sync_event_task_get_alloc_init(se, &ret, (union doca_data){.u64 = 1}, &get));
	CHECK(doca_task_submit(doca_sync_event_task_get_as_doca_task(get)));
	while (done < 2)
		doca_pe_progress(pe);
	printf("ret %#llx seen in callback %#llx\n", (unsigned long long)ret, (unsigned long long)seen_in_cb);
	doca_task_free(doca_sync_event_task_wait_gt_as_doca_task(wait));
	doca_task_free(doca_sync_event_task_get_as_doca_task(get));
	doca_ctx_stop(ctx);
	for (i = 0; i < 10; i++)
		doca_pe_progress(pe);
	CHECK(doca_sync_event_destroy(se));
	CHECK(doca_pe_destroy(pe));
	return 0;
}
""", "2.6")
    assert out == ("wait_val 3\nafter 100 progress: 0 done\ndone 2 ctx 77\ndone 1 ctx 77\n"
                   "ret 0x14 seen in callback 0x14\n")


def test_eq_wait_capability_query_on_doca_26_is_not_supported() -> None:
    """DOCA 2.6 cannot ask about the eq/neq wait tasks: the native backend raises DocaNotSupported, as the
    emulator's 2.6 mode does (it answered False: a device without the task, not a library without the query)."""
    code = ("import doca_py as d\n"
            "info = d.devinfo_create_list()[0]\n"
            "try:\n"
            "    d.SyncEvent.cap_task_is_supported('wait_eq', info)\n"
            "except d.errors.DocaNotSupported as exc:\n"
            "    print('not supported:', 'doca_sync_event_cap_task_wait_eq_is_supported' in str(exc))\n"
            "print('get:', d.SyncEvent.cap_task_is_supported('get', info))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=native_env("2.6"), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "not supported: True\nget: True\n", proc.stdout + proc.stderr


@pytest.mark.parametrize("version", ["2.6", "3.0"])
def test_conformance_of_the_common_objects_through_libdoca(version: str) -> None:
    """The sync event, buf pool and mmap advise conformance tests, whole, with the native backend over libdoca
    of *version* as the process's own (not the per-test rebinding of the usual run)."""
    tests = [f"tests/conformance/{name}" for name in ("test_sync_event.py", "test_buf_pool.py", "test_mmap_advise.py")]
    proc = subprocess.run([sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--doca-version", version], cwd=ROOT, env=native_env(version), capture_output=True,
                          text=True, timeout=600, check=False)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail, tail
