"""Fake ``libdoca_dma``, ``libdoca_erasure_coding`` and ``libdoca_compress`` in C, for tests.

Each fake exports the functions of its library that the native object layer calls,
with the real ABI: ``*_create``/``*_destroy``/``*_as_ctx``, ``*_set_conf`` taking two
task callbacks, ``*_alloc_init`` with ``union doca_data`` by value and the task
through an out-parameter, ``*_as_task`` returning a *different* pointer (the
embedded ``doca_task``), buffer/matrix setters and getters, checksum getters and the
capability functions. It is not an emulator: tasks do no work, except that a DMA
memcpy really copies (using the fake ``doca_buf`` layout of :mod:`._testlib`).

The ctx and task objects come from a fake libdoca_common (:mod:`._testlib`), so its
``doca_pe_progress`` completes them. Several fake commons live in one test process
(all with the soname ``libdoca_common.so.3``), so the engines are not linked against
one: call :func:`attach` with the engine and the common ``CDLL`` before use, which
hands the engine the common's ``fake_ctx_*``/``fake_task_alloc_init``/``doca_task_*``
functions. Completions reach the engine's own trampoline, which does the work and
calls the registered success callback with the *library* task pointer, as DOCA does.

:func:`build_fake_engines` writes ``libdoca_dma.so``, ``libdoca_erasure_coding.so``
and ``libdoca_compress.so`` into a directory (normally next to a fake common);
``lz4="legacy"`` builds the DOCA 2.6 compress API (``…decompress_lz4…``) instead of
the 3.x one (``…lz4_stream…``/``…lz4_block…``).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from ._testlib import attach_common, compile_library

__all__ = ["ENGINES", "attach", "build_fake_engines", "engine_source"]

ENGINES = ("dma", "erasure_coding", "compress")

# Per-engine constants the tests compare against.
MAX_NUM_TASKS = 128
MAX_BUF_SIZE = 1 << 20
MAX_BUF_LIST_LEN = 4
CRC, ADLER, XXH = 0x11223344, 0x55667788, 0x0BADCAFE

_CORE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int doca_error_t;
union doca_data { void *ptr; uint64_t u64; };
struct doca_ctx;
struct doca_task;
typedef void (*task_cb_t)(void *, union doca_data, union doca_data);
/* The fake libdoca_common's doca_buf layout. */
struct doca_buf { void *head; size_t len; void *data; size_t data_len; uint16_t refcount; };

enum { E_OK = 0, E_NOT_SUPPORTED = 4, E_INVALID = 6, E_NO_MEMORY = 7, E_BAD_STATE = 18 };
#define NTYPES 4

static doca_error_t (*ctx_create)(struct doca_ctx **);
static void (*ctx_destroy)(struct doca_ctx *);
static void (*ctx_set_task_cb)(struct doca_ctx *, task_cb_t);
static doca_error_t (*task_alloc)(struct doca_ctx *, union doca_data, struct doca_task **);

EXPORT void fake_engine_attach(void *create, void *destroy, void *set_cb, void *alloc)
{
	ctx_create = create;
	ctx_destroy = destroy;
	ctx_set_task_cb = set_cb;
	task_alloc = alloc;
}

struct engine {
	struct doca_ctx *ctx;
	task_cb_t ok[NTYPES], err[NTYPES];
	uint32_t num[NTYPES];
};

struct etask {
	struct doca_task *base;
	struct engine *e;
	int type;
	const void *matrix;
	const struct doca_buf *src;
	struct doca_buf *dst;
	uint8_t flag1, flag2;
	struct etask *next;
};

/* Newest first: a freed doca_task's address may be reused by a later task. */
static struct etask *all_tasks;
static int live_engines;

EXPORT int fake_engine_live(void) { return live_engines; }

static void work(struct etask *t);

static void on_done(void *base, union doca_data task_ud, union doca_data ctx_ud)
{
	struct etask *t;
	for (t = all_tasks; t != NULL; t = t->next)
		if ((void *)t->base == base)
			break;
	if (t == NULL)
		return;
	work(t);
	t->e->ok[t->type](t, task_ud, ctx_ud);
}

static doca_error_t engine_create(void *dev, struct engine **out)
{
	struct engine *e;
	if (dev == NULL || out == NULL || ctx_create == NULL)
		return E_INVALID;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return E_NO_MEMORY;
	if (ctx_create(&e->ctx) != E_OK) {
		free(e);
		return E_NO_MEMORY;
	}
	live_engines++;
	*out = e;
	return E_OK;
}

static doca_error_t engine_destroy(struct engine *e)
{
	if (e == NULL)
		return E_INVALID;
	ctx_destroy(e->ctx);
	free(e);
	live_engines--;
	return E_OK;
}

static struct doca_ctx *engine_as_ctx(struct engine *e) { return e ? e->ctx : NULL; }

static doca_error_t engine_set_conf(struct engine *e, int type, task_cb_t ok, task_cb_t err, uint32_t num)
{
	if (e == NULL || ok == NULL || err == NULL || num == 0)
		return E_INVALID;
	e->ok[type] = ok;
	e->err[type] = err;
	e->num[type] = num;
	ctx_set_task_cb(e->ctx, on_done);
	return E_OK;
}

static doca_error_t engine_alloc(struct engine *e, int type, const void *matrix, const struct doca_buf *src,
				 struct doca_buf *dst, union doca_data ud, struct etask **out)
{
	struct etask *t;
	doca_error_t rc;
	if (e == NULL || out == NULL)
		return E_INVALID;
	if (e->ok[type] == NULL)
		return E_BAD_STATE;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return E_NO_MEMORY;
	rc = task_alloc(e->ctx, ud, &t->base);
	if (rc != E_OK) {
		free(t);
		return rc;
	}
	t->e = e;
	t->type = type;
	t->matrix = matrix;
	t->src = src;
	t->dst = dst;
	t->next = all_tasks;
	all_tasks = t;
	*out = t;
	return E_OK;
}

static struct doca_task *task_base(struct etask *t) { return t->base; }
"""

_DMA = r"""
static void work(struct etask *t)
{
	if (t->src != NULL && t->dst != NULL) {
		memcpy((char *)t->dst->data + t->dst->data_len, t->src->data, t->src->data_len);
		t->dst->data_len += t->src->data_len;
	}
}

EXPORT doca_error_t doca_dma_create(void *dev, struct engine **out) { return engine_create(dev, out); }
EXPORT doca_error_t doca_dma_destroy(struct engine *e) { return engine_destroy(e); }
EXPORT struct doca_ctx *doca_dma_as_ctx(struct engine *e) { return engine_as_ctx(e); }
EXPORT doca_error_t doca_dma_cap_task_memcpy_is_supported(const void *devinfo)
{ return devinfo ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_dma_cap_get_max_num_tasks(struct engine *e, uint32_t *n)
{ if (!e || !n) return E_INVALID; *n = @MAX_NUM_TASKS@; return E_OK; }
EXPORT doca_error_t doca_dma_cap_task_memcpy_get_max_buf_list_len(const void *devinfo, uint32_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_LIST_LEN@; return E_OK; }
EXPORT doca_error_t doca_dma_cap_task_memcpy_get_max_buf_size(const void *devinfo, uint64_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_SIZE@; return E_OK; }
EXPORT doca_error_t doca_dma_task_memcpy_set_conf(struct engine *e, task_cb_t ok, task_cb_t err, uint32_t num)
{ return engine_set_conf(e, 0, ok, err, num); }
EXPORT doca_error_t doca_dma_task_memcpy_alloc_init(struct engine *e, const struct doca_buf *src,
						     struct doca_buf *dst, union doca_data ud, struct etask **t)
{ return engine_alloc(e, 0, NULL, src, dst, ud, t); }
EXPORT struct doca_task *doca_dma_task_memcpy_as_task(struct etask *t) { return task_base(t); }
EXPORT void doca_dma_task_memcpy_set_src(struct etask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_dma_task_memcpy_get_src(const struct etask *t) { return t->src; }
EXPORT void doca_dma_task_memcpy_set_dst(struct etask *t, struct doca_buf *b) { t->dst = b; }
EXPORT struct doca_buf *doca_dma_task_memcpy_get_dst(const struct etask *t) { return t->dst; }
"""

_EC_HEAD = r"""
static void work(struct etask *t) { (void)t; }

struct matrix { struct engine *e; int kind; size_t k, m; };
static int live_matrices;
EXPORT int fake_ec_live_matrices(void) { return live_matrices; }

static doca_error_t new_matrix(struct engine *e, int kind, size_t k, size_t m, struct matrix **out)
{
	struct matrix *mx;
	if (e == NULL || out == NULL || k == 0 || m == 0)
		return E_INVALID;
	mx = calloc(1, sizeof(*mx));
	if (mx == NULL)
		return E_NO_MEMORY;
	mx->e = e; mx->kind = kind; mx->k = k; mx->m = m;
	live_matrices++;
	*out = mx;
	return E_OK;
}

EXPORT doca_error_t doca_ec_create(void *dev, struct engine **out) { return engine_create(dev, out); }
EXPORT doca_error_t doca_ec_destroy(struct engine *e) { return engine_destroy(e); }
EXPORT struct doca_ctx *doca_ec_as_ctx(struct engine *e) { return engine_as_ctx(e); }
EXPORT doca_error_t doca_ec_cap_get_max_block_size(const void *devinfo, uint64_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_SIZE@; return E_OK; }
EXPORT doca_error_t doca_ec_cap_get_max_buf_list_len(const void *devinfo, uint32_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_LIST_LEN@; return E_OK; }
EXPORT doca_error_t doca_ec_matrix_create(struct engine *e, int type, size_t k, size_t m, struct matrix **out)
{ if (type != 1 && type != 2) return E_INVALID; return new_matrix(e, type, k, m, out); }
EXPORT doca_error_t doca_ec_matrix_create_from_raw(struct engine *e, uint8_t *data, size_t k, size_t m,
						    struct matrix **out)
{ if (data == NULL) return E_INVALID; return new_matrix(e, 3, k, m, out); }
EXPORT doca_error_t doca_ec_matrix_create_update(struct engine *e, const struct matrix *c, uint32_t *idx, size_t n,
						  struct matrix **out)
{ if (!c || !idx || n == 0 || idx[0] >= c->k) return E_INVALID; return new_matrix(e, 4, 2 * n + c->m, c->m, out); }
EXPORT doca_error_t doca_ec_matrix_create_recover(struct engine *e, const struct matrix *c, uint32_t *idx, size_t n,
						   struct matrix **out)
{ if (!c || !idx || n == 0 || idx[n - 1] >= c->k + c->m) return E_INVALID; return new_matrix(e, 5, c->k, n, out); }
EXPORT doca_error_t doca_ec_matrix_destroy(struct matrix *mx)
{ if (mx == NULL) return E_INVALID; free(mx); live_matrices--; return E_OK; }
"""

_EC_TASK = r"""
EXPORT doca_error_t doca_ec_cap_task_@K@_is_supported(const void *devinfo)
{ return devinfo ? @SUPPORTED@ : E_INVALID; }
EXPORT doca_error_t doca_ec_task_@K@_set_conf(struct engine *e, task_cb_t ok, task_cb_t err, uint32_t num)
{ return engine_set_conf(e, @I@, ok, err, num); }
EXPORT doca_error_t doca_ec_task_@K@_allocate_init(struct engine *e, const void *mx, const struct doca_buf *src,
						 struct doca_buf *dst, union doca_data ud, struct etask **t)
{ if (mx == NULL) return E_INVALID; return engine_alloc(e, @I@, mx, src, dst, ud, t); }
EXPORT struct doca_task *doca_ec_task_@K@_as_task(struct etask *t) { return task_base(t); }
EXPORT void doca_ec_task_@K@_set_@M@(struct etask *t, const void *mx) { t->matrix = mx; }
EXPORT const void *doca_ec_task_@K@_get_@M@(const struct etask *t) { return t->matrix; }
EXPORT void doca_ec_task_@K@_set_@S@(struct etask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_ec_task_@K@_get_@S@(const struct etask *t) { return t->src; }
EXPORT void doca_ec_task_@K@_set_@D@(struct etask *t, struct doca_buf *b) { t->dst = b; }
EXPORT struct doca_buf *doca_ec_task_@K@_get_@DG@(const struct etask *t) { return t->dst; }
"""

_EC_TYPES = (  # kind, matrix, src, dst setter, dst getter; galois_mul reports NOT_SUPPORTED
    ("create", "coding_matrix", "original_data_blocks", "rdnc_blocks", "rdnc_blocks"),
    ("recover", "recover_matrix", "available_blocks", "recovered_data_blocks", "recovered_data"),
    ("update", "update_matrix", "original_updated_and_rdnc_blocks", "updated_rdnc_blocks", "updated_rdnc_blocks"),
    ("galois_mul", "coding_matrix", "src_buf", "dst_buf", "dst_buf"),
)

_COMPRESS_HEAD = r"""
static void work(struct etask *t) { (void)t; }

EXPORT doca_error_t doca_compress_create(void *dev, struct engine **out) { return engine_create(dev, out); }
EXPORT doca_error_t doca_compress_destroy(struct engine *e) { return engine_destroy(e); }
EXPORT struct doca_ctx *doca_compress_as_ctx(struct engine *e) { return engine_as_ctx(e); }
EXPORT doca_error_t doca_compress_cap_get_max_num_tasks(struct engine *e, uint32_t *n)
{ if (!e || !n) return E_INVALID; *n = @MAX_NUM_TASKS@; return E_OK; }
"""

_COMPRESS_TASK = r"""
EXPORT doca_error_t doca_compress_cap_task_@K@_is_supported(const void *devinfo)
{ return devinfo ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_compress_cap_task_@K@_get_max_buf_size(const void *devinfo, uint64_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_SIZE@ + @I@; return E_OK; }
EXPORT doca_error_t doca_compress_cap_task_@K@_get_max_buf_list_len(const void *devinfo, uint32_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = @MAX_BUF_LIST_LEN@; return E_OK; }
EXPORT doca_error_t doca_compress_task_@K@_set_conf(struct engine *e, task_cb_t ok, task_cb_t err, uint32_t num)
{ return engine_set_conf(e, @I@, ok, err, num); }
EXPORT doca_error_t doca_compress_task_@K@_alloc_init(struct engine *e, @FLAGS_PARAMS@const struct doca_buf *src,
						   struct doca_buf *dst, union doca_data ud, struct etask **t)
{
	doca_error_t rc = engine_alloc(e, @I@, NULL, src, dst, ud, t);
	@FLAGS_STORE@
	return rc;
}
EXPORT struct doca_task *doca_compress_task_@K@_as_task(struct etask *t) { return task_base(t); }
EXPORT void doca_compress_task_@K@_set_src(struct etask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_compress_task_@K@_get_src(const struct etask *t) { return t->src; }
EXPORT void doca_compress_task_@K@_set_dst(struct etask *t, struct doca_buf *b) { t->dst = b; }
EXPORT struct doca_buf *doca_compress_task_@K@_get_dst(const struct etask *t) { return t->dst; }
EXPORT uint32_t doca_compress_task_@K@_get_crc_cs(const struct etask *t) { (void)t; return @CRC@u; }
EXPORT uint32_t doca_compress_task_@K@_get_@CS2@_cs(const struct etask *t) { (void)t; return @CS2V@u; }
"""

_LZ4_FLAGS = r"""
EXPORT void doca_compress_task_decompress_lz4_stream_set_has_block_checksum(struct etask *t, uint8_t v)
{ t->flag1 = v; }
EXPORT uint8_t doca_compress_task_decompress_lz4_stream_get_has_block_checksum(const struct etask *t)
{ return t->flag1; }
EXPORT void doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(struct etask *t, uint8_t v)
{ t->flag2 = v; }
EXPORT uint8_t doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(const struct etask *t)
{ return t->flag2; }
"""


def _subst(text: str, values: dict[str, object]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    return text


def engine_source(engine: str, *, lz4: str = "split") -> str:
    """The C source of one fake engine library (*engine* is one of :data:`ENGINES`)."""
    consts = {"MAX_NUM_TASKS": MAX_NUM_TASKS, "MAX_BUF_SIZE": f"{MAX_BUF_SIZE}ULL",
              "MAX_BUF_LIST_LEN": MAX_BUF_LIST_LEN}
    parts = [_CORE]
    if engine == "dma":
        parts.append(_DMA)
    elif engine == "erasure_coding":
        parts.append(_EC_HEAD)
        for i, (kind, mat, src, dst, dst_get) in enumerate(_EC_TYPES):
            parts.append(_subst(_EC_TASK, {"K": kind, "I": i, "M": mat, "S": src, "D": dst, "DG": dst_get,
                                           "SUPPORTED": "E_NOT_SUPPORTED" if kind == "galois_mul" else "E_OK"}))
    elif engine == "compress":
        parts.append(_COMPRESS_HEAD)
        kinds = [("compress_deflate", "adler"), ("decompress_deflate", "adler")]
        if lz4 == "split":
            kinds += [("decompress_lz4_stream", "xxh"), ("decompress_lz4_block", "xxh")]
            parts.append(_LZ4_FLAGS)
        elif lz4 == "legacy":
            kinds += [("decompress_lz4", "adler")]
        else:
            raise ValueError(f"lz4 must be 'split' or 'legacy', not {lz4!r}")
        for i, (kind, cs2) in enumerate(kinds):
            stream = kind == "decompress_lz4_stream"
            parts.append(_subst(_COMPRESS_TASK, {
                "K": kind, "I": i, "CS2": cs2, "CRC": CRC, "CS2V": ADLER if cs2 == "adler" else XXH,
                "FLAGS_PARAMS": "uint8_t has_block_checksum, uint8_t are_blocks_independent, " if stream else "",
                "FLAGS_STORE": ("if (rc == E_OK) { (*t)->flag1 = has_block_checksum; "
                                "(*t)->flag2 = are_blocks_independent; }") if stream else "",
            }))
    else:
        raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
    return _subst("".join(parts), consts)


def build_fake_engines(dest: Path, *, lz4: str = "split", engines: tuple[str, ...] = ENGINES) -> list[Path]:
    """Compile the fake engines into *dest* as ``libdoca_<engine>.so``; returns the files.

    Raises :class:`~doca_py.native._testlib.FakeBuildError` without a compiler or on a
    compile error.
    """
    return [compile_library(engine_source(engine, lz4=lz4), dest, f"libdoca_{engine}.so") for engine in engines]


def attach(engine: ctypes.CDLL, common: ctypes.CDLL) -> None:
    """Give a fake engine the fake libdoca_common it creates ctxs and tasks with."""
    attach_common(engine, "fake_engine_attach", common,
                  ("fake_ctx_create", "fake_ctx_destroy", "fake_ctx_set_task_cb", "fake_task_alloc_init"))
