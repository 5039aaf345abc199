"""A fake ``libdoca_common`` in C, compiled on demand, for tests and benchmarks.

It exports a few DOCA functions with the real ABI (``union doca_data`` by value,
out-parameters, lists through ``T ***``, callbacks called from C, error codes) so
the declarations of :mod:`doca_py.native.capi` can be exercised without DOCA.
Behaviour is only what the tests need; it is not an emulator.

Extra ``fake_*`` exports (declared in :data:`FAKE_DECLS`) create the objects that
real DOCA makes in other libraries: a ctx, tasks, and the task callback that a
``*_task_*_set_conf`` call would register.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from ctypes import POINTER, c_int, c_uint64, c_void_p
from pathlib import Path

from ..errors import ErrorCode, error_descr
from .capi._decl import Decl, TaskCompletionCb

__all__ = ["FAKE_DECLS", "FakeBuildError", "build_fake_common", "find_compiler", "c_source"]

_C_TEMPLATE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int doca_error_t;
union doca_data { void *ptr; uint64_t u64; };

struct doca_pe;
struct doca_task;
struct doca_ctx;
typedef void (*doca_task_completion_cb_t)(struct doca_task *, union doca_data, union doca_data);
typedef void (*doca_ctx_state_changed_callback_t)(const union doca_data, struct doca_ctx *, int, int);

enum { S_IDLE = 0, S_RUNNING = 2 };
enum { E_OK = 0, E_IN_USE = 3, E_AGAIN = 5, E_INVALID = 6, E_NO_MEMORY = 7, E_NOT_CONNECTED = 14, E_BAD_STATE = 18 };

static const char *const error_names[] = { @ERROR_NAMES@ };
static const char *const error_descrs[] = { @ERROR_DESCRS@ };
#define N_ERRORS ((int)(sizeof(error_names) / sizeof(error_names[0])))

EXPORT const char *doca_version_runtime(void) { return "@VERSION@"; }

EXPORT const char *doca_error_get_name(doca_error_t e)
{ return (e >= 0 && e < N_ERRORS) ? error_names[e] : "DOCA_ERROR_UNKNOWN"; }

EXPORT const char *doca_error_get_descr(doca_error_t e)
{ return (e >= 0 && e < N_ERRORS) ? error_descrs[e] : "Unrecognized error code"; }

/* ---- devinfo: a list returned through T*** ---- */
struct doca_devinfo { char pci[13]; };
static struct doca_devinfo devs[2] = { { "0000:03:00.0" }, { "0000:03:00.1" } };
static int outstanding_lists;

EXPORT doca_error_t doca_devinfo_create_list(struct doca_devinfo ***list, uint32_t *n)
{
	struct doca_devinfo **arr;
	if (list == NULL || n == NULL)
		return E_INVALID;
	arr = malloc(2 * sizeof(*arr));
	if (arr == NULL)
		return E_NO_MEMORY;
	arr[0] = &devs[0];
	arr[1] = &devs[1];
	*list = arr;
	*n = 2;
	outstanding_lists++;
	return E_OK;
}

EXPORT doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **list)
{
	if (list == NULL)
		return E_INVALID;
	free(list);
	outstanding_lists--;
	return E_OK;
}

EXPORT int fake_outstanding_lists(void) { return outstanding_lists; }

EXPORT doca_error_t doca_devinfo_get_pci_addr_str(const struct doca_devinfo *d, char *out)
{
	if (d == NULL || out == NULL)
		return E_INVALID;
	memcpy(out, d->pci, sizeof(d->pci));
	return E_OK;
}

/* 2.6 wrote a double, 3.x a uint64_t: a wrong binding reads garbage. */
#if @RATE_DOUBLE@
EXPORT doca_error_t doca_devinfo_get_active_rate(const struct doca_devinfo *d, double *rate)
{ if (d == NULL || rate == NULL) return E_INVALID; *rate = 200.5; return E_OK; }
#else
EXPORT doca_error_t doca_devinfo_get_active_rate(const struct doca_devinfo *d, uint64_t *rate)
{ if (d == NULL || rate == NULL) return E_INVALID; *rate = 400000000000ULL; return E_OK; }
#endif

/* ---- pe, ctx, task ---- */
#define QUEUE 256
#define MAX_CTX 8
struct doca_pe {
	struct doca_task *queue[QUEUE];
	unsigned head, count;
	struct doca_ctx *ctxs[MAX_CTX];
	int nctx;
};
struct doca_ctx {
	union doca_data user_data;
	doca_ctx_state_changed_callback_t state_cb;
	doca_task_completion_cb_t task_cb;
	struct doca_pe *pe;
	int state, pending, prev;
};
struct doca_task {
	union doca_data user_data;
	struct doca_ctx *ctx;
	doca_error_t status;
};

EXPORT doca_error_t doca_pe_create(struct doca_pe **pe)
{
	if (pe == NULL)
		return E_INVALID;
	*pe = calloc(1, sizeof(**pe));
	return *pe ? E_OK : E_NO_MEMORY;
}

EXPORT doca_error_t doca_pe_destroy(struct doca_pe *pe)
{
	if (pe == NULL)
		return E_INVALID;
	if (pe->nctx > 0)
		return E_IN_USE;
	free(pe);
	return E_OK;
}

EXPORT doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	if (pe == NULL || ctx == NULL)
		return E_INVALID;
	if (ctx->pe != NULL)
		return E_BAD_STATE;
	if (pe->nctx == MAX_CTX)
		return E_NO_MEMORY;
	pe->ctxs[pe->nctx++] = ctx;
	ctx->pe = pe;
	return E_OK;
}

EXPORT uint8_t doca_pe_progress(struct doca_pe *pe)
{
	uint8_t any = 0;
	unsigned n;
	int i;
	for (i = 0; i < pe->nctx; i++) {
		struct doca_ctx *c = pe->ctxs[i];
		if (c->pending) {
			c->pending = 0;
			any = 1;
			if (c->state_cb)
				c->state_cb(c->user_data, c, c->prev, c->state);
		}
	}
	/* Only what was queued before this call: callbacks may resubmit. */
	for (n = pe->count; n > 0; n--) {
		struct doca_task *t = pe->queue[pe->head];
		pe->head = (pe->head + 1) % QUEUE;
		pe->count--;
		any = 1;
		t->ctx->task_cb(t, t->user_data, t->ctx->user_data);
	}
	return any;
}

EXPORT doca_error_t fake_ctx_create(struct doca_ctx **ctx)
{
	if (ctx == NULL)
		return E_INVALID;
	*ctx = calloc(1, sizeof(**ctx));
	return *ctx ? E_OK : E_NO_MEMORY;
}

EXPORT void fake_ctx_destroy(struct doca_ctx *ctx)
{
	struct doca_pe *pe = ctx->pe;
	int i;
	if (pe != NULL)
		for (i = 0; i < pe->nctx; i++)
			if (pe->ctxs[i] == ctx) {
				pe->ctxs[i] = pe->ctxs[--pe->nctx];
				break;
			}
	free(ctx);
}

EXPORT void fake_ctx_set_task_cb(struct doca_ctx *ctx, doca_task_completion_cb_t cb) { ctx->task_cb = cb; }

EXPORT doca_error_t doca_ctx_start(struct doca_ctx *ctx)
{
	if (ctx->pe == NULL)
		return E_NOT_CONNECTED;
	ctx->prev = ctx->state;
	ctx->state = S_RUNNING;
	ctx->pending = 1;
	return E_OK;
}

EXPORT doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, int *state)
{ *state = ctx->state; return E_OK; }

EXPORT doca_error_t doca_ctx_set_user_data(struct doca_ctx *ctx, union doca_data ud)
{ ctx->user_data = ud; return E_OK; }

EXPORT doca_error_t doca_ctx_get_user_data(const struct doca_ctx *ctx, union doca_data *ud)
{ if (ud == NULL) return E_INVALID; *ud = ctx->user_data; return E_OK; }

EXPORT doca_error_t doca_ctx_set_state_changed_cb(struct doca_ctx *ctx, doca_ctx_state_changed_callback_t cb)
{ ctx->state_cb = cb; return E_OK; }

/* Like every *_alloc_init: user data by value, task through an out-param. */
EXPORT doca_error_t fake_task_alloc_init(struct doca_ctx *ctx, union doca_data ud, struct doca_task **task)
{
	struct doca_task *t;
	if (ctx == NULL || task == NULL)
		return E_INVALID;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return E_NO_MEMORY;
	t->ctx = ctx;
	t->user_data = ud;
	*task = t;
	return E_OK;
}

EXPORT void doca_task_free(struct doca_task *task) { free(task); }
EXPORT void doca_task_set_user_data(struct doca_task *task, union doca_data ud) { task->user_data = ud; }
EXPORT union doca_data doca_task_get_user_data(const struct doca_task *task) { return task->user_data; }
EXPORT struct doca_ctx *doca_task_get_ctx(const struct doca_task *task) { return task->ctx; }
EXPORT doca_error_t doca_task_get_status(const struct doca_task *task) { return task->status; }

EXPORT doca_error_t doca_task_submit(struct doca_task *task)
{
	struct doca_pe *pe = task->ctx->pe;
	if (pe == NULL)
		return E_NOT_CONNECTED;
	if (task->ctx->state != S_RUNNING || task->ctx->task_cb == NULL)
		return E_BAD_STATE;
	if (pe->count == QUEUE)
		return E_AGAIN;
	pe->queue[(pe->head + pe->count) % QUEUE] = task;
	pe->count++;
	return E_OK;
}

/* ---- bufs (inventory and mmap are not modelled) ---- */
struct doca_buf { void *head; size_t len; void *data; size_t data_len; uint16_t refcount; };
static int last_reuse; /* 1 reuse_by_addr, 2 reuse_by_data, 3 reuse_by_args */

EXPORT doca_error_t doca_buf_inventory_buf_get_by_args(void *inv, void *mmap, void *addr, size_t len,
							void *data, size_t data_len, struct doca_buf **buf)
{
	struct doca_buf *b;
	(void)mmap;
	if (inv == NULL || buf == NULL)
		return E_INVALID;
	b = malloc(sizeof(*b));
	if (b == NULL)
		return E_NO_MEMORY;
	b->head = addr; b->len = len; b->data = data; b->data_len = data_len; b->refcount = 1;
	*buf = b;
	return E_OK;
}

EXPORT doca_error_t doca_buf_dec_refcount(struct doca_buf *buf, uint16_t *before)
{
	if (before != NULL)
		*before = buf->refcount;
	if (--buf->refcount == 0)
		free(buf);
	return E_OK;
}

EXPORT doca_error_t doca_buf_get_head(const struct doca_buf *b, void **p) { *p = b->head; return E_OK; }
EXPORT doca_error_t doca_buf_get_len(const struct doca_buf *b, size_t *n) { *n = b->len; return E_OK; }
EXPORT doca_error_t doca_buf_get_data(const struct doca_buf *b, void **p) { *p = b->data; return E_OK; }
EXPORT doca_error_t doca_buf_get_data_len(const struct doca_buf *b, size_t *n) { *n = b->data_len; return E_OK; }
EXPORT int fake_last_reuse(void) { return last_reuse; }

#if @REUSE_ARGS@
EXPORT doca_error_t doca_buf_inventory_buf_reuse_by_args(struct doca_buf *b, void *addr, size_t len,
							  void *data, size_t data_len)
{ b->head = addr; b->len = len; b->data = data; b->data_len = data_len; last_reuse = 3; return E_OK; }
#endif
#if @REUSE_DATA@
EXPORT doca_error_t doca_buf_inventory_buf_reuse_by_data(struct doca_buf *b, void *data, size_t len)
{ b->head = data; b->len = len; b->data = data; b->data_len = len; last_reuse = 2; return E_OK; }
#endif
"""

FAKE_DECLS: tuple[Decl, ...] = (
    Decl("fake_outstanding_lists", c_int, ()),
    Decl("fake_ctx_create", c_int, (POINTER(c_void_p),)),
    Decl("fake_ctx_destroy", None, (c_void_p,)),
    Decl("fake_ctx_set_task_cb", None, (c_void_p, TaskCompletionCb)),
    Decl("fake_task_alloc_init", c_int, (c_void_p, c_uint64, POINTER(c_void_p))),
    Decl("fake_last_reuse", c_int, ()),
)
"""Declarations of the fake-only helpers (bind them with :func:`~doca_py.native.capi.bind`)."""


class FakeBuildError(RuntimeError):
    """The fake library could not be compiled (no compiler, or a compiler error)."""


def _c_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_source(version: str = "3.0.0058", *, reuse_args: bool = False, reuse_data: bool = False) -> str:
    """The C source of a fake libdoca_common reporting *version*.

    A major version below 3 gets the 2.6 ``double *`` ``doca_devinfo_get_active_rate``.
    ``reuse_args``/``reuse_data`` export the 3.2 buf re-aim functions.
    """
    codes = sorted(ErrorCode)
    subst = {
        "@VERSION@": version,
        "@ERROR_NAMES@": ", ".join(_c_str(c.c_name) for c in codes),
        "@ERROR_DESCRS@": ", ".join(_c_str(error_descr(c)) for c in codes),
        "@RATE_DOUBLE@": "1" if int(version.split(".")[0]) < 3 else "0",
        "@REUSE_ARGS@": "1" if reuse_args else "0",
        "@REUSE_DATA@": "1" if reuse_data else "0",
    }
    src = _C_TEMPLATE
    for key, value in subst.items():
        src = src.replace(key, value)
    return src


def find_compiler() -> str | None:
    """``$CC``, ``gcc`` or ``cc`` if one is on ``PATH``."""
    for name in (os.environ.get("CC", ""), "gcc", "cc"):
        if name and (path := shutil.which(name)):
            return path
    return None


def compile_library(source: str, dest: Path, filename: str, *, soname: str | None = None) -> Path:
    """Compile C *source* into ``dest/filename`` (a shared library; the ``.c`` file is kept
    beside it for debugging). Raises :class:`FakeBuildError` without a compiler or on a
    compile error."""
    cc = find_compiler()
    if cc is None:
        raise FakeBuildError("no C compiler found (tried $CC, gcc, cc)")
    dest.mkdir(parents=True, exist_ok=True)
    src = dest / f"{filename.split('.so')[0]}.c"
    src.write_text(source)
    lib = dest / filename
    cmd = [
        cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
        "-fvisibility=hidden",
        *([f"-Wl,-soname,{soname}"] if soname else []),
        # Bind calls inside the library to itself: several fakes are loaded
        # RTLD_GLOBAL into one test process and must not resolve into each other.
        "-Wl,-Bsymbolic",
        "-o", str(lib), str(src),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise FakeBuildError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return lib


def attach_common(lib: ctypes.CDLL, entry: str, common: ctypes.CDLL, names: tuple[str, ...]) -> None:
    """Call the fake *lib*'s ``entry(...)`` with the addresses of *names* in the fake *common*:
    the fake engines and transports create their ctxs and tasks through the fake common."""
    fn = lib[entry]
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * len(names)
    fn(*[ctypes.cast(common[name], ctypes.c_void_p).value for name in names])


def build_fake_common(
    dest: Path, version: str = "3.0.0058", *, reuse_args: bool = False, reuse_data: bool = False
) -> Path:
    """Compile the fake into *dest* as ``libdoca_common.so.<version>`` with its symlinks.

    Lays out ``libdoca_common.so -> .so.<major> -> .so.<version>`` like a DOCA install
    and returns the real file. Raises :class:`FakeBuildError` without a compiler or on
    a compile error.
    """
    major = version.split(".")[0]
    real = compile_library(c_source(version, reuse_args=reuse_args, reuse_data=reuse_data), dest,
                           f"libdoca_common.so.{version}", soname=f"libdoca_common.so.{major}")
    for link in (dest / f"libdoca_common.so.{major}", dest / "libdoca_common.so"):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(real.name if link.name.endswith(f".so.{major}") else f"libdoca_common.so.{major}")
    return real
