/* The part shared by the fake libdoca_dma, libdoca_erasure_coding and libdoca_compress.

Each engine exports its library's functions with the real ABI: *_create, *_destroy,
*_as_ctx, *_set_conf taking two task callbacks, *_alloc_init with union doca_data by
value and the task through an out-parameter, *_as_task returning a *different* pointer
(the embedded doca_task), buffer/matrix setters and getters, checksum getters and the
capabilities. It is not an emulator: tasks do no work, except that a DMA memcpy really
copies (through the fake common's doca_buf layout).

The ctx and task objects come from a fake libdoca_common (common.c), so its
doca_pe_progress completes them. Several fake commons live in one test process (all
with the soname libdoca_common.so.3), so the engines are not linked against one:
fakelib.engines.attach() hands fake_engine_attach() the common's fake_ctx_* /
fake_task_alloc_init / doca_ctx_get_state functions. Completions reach the engine's own trampoline, which
does the work (work(), defined by each engine) and calls the registered success
callback with the *library* task pointer, as DOCA does.
*/
#ifndef FAKE_ENGINE_H
#define FAKE_ENGINE_H

#include "fake.h"

#define NTYPES 4

static doca_error_t (*ctx_create)(struct doca_ctx **);
static void (*ctx_destroy)(struct doca_ctx *);
static void (*ctx_set_task_cb)(struct doca_ctx *, task_cb_t);
static doca_error_t (*task_alloc)(struct doca_ctx *, union doca_data, struct doca_task **);

static doca_error_t (*ctx_get_state)(const struct doca_ctx *, int *);
static doca_error_t (*task_get_status)(const struct doca_task *);
static void (*task_fail)(struct doca_task *, doca_error_t);
static int (*task_freed)(const struct doca_task *);
static void (*ctx_set_check_cb)(struct doca_ctx *, doca_error_t (*)(struct doca_task *));

EXPORT void fake_engine_attach(void *create, void *destroy, void *set_cb, void *alloc, void *get_state,
			       void *get_status, void *fail, void *freed, void *set_check)
{
	ctx_set_check_cb = set_check;
	ctx_create = create;
	ctx_destroy = destroy;
	ctx_set_task_cb = set_cb;
	task_alloc = alloc;
	ctx_get_state = get_state;
	task_get_status = get_status;
	task_fail = fail;
	task_freed = freed;
}

static int engine_state(const struct doca_ctx *ctx)
{
	int state = S_IDLE;
	ctx_get_state(ctx, &state);
	return state;
}

struct engine {
	void *dev;
	struct doca_ctx *ctx;
	task_cb_t ok[NTYPES], err[NTYPES];
	uint32_t num[NTYPES];
	uint8_t ordered; /* doca_dma_set_ordered_completions (3.3); the fake completes in order anyway */
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

/* Every wrapper made, each around one doca_task of the common for good. */
static struct etask *all_tasks;
static int live_engines;

EXPORT int fake_engine_live(void) { return live_engines; }

/* The engine's work on a task it completes; a status other than E_OK fails the task. */
static doca_error_t work(struct etask *t);
/* What doca_task_try_submit validates before submitting. */
static doca_error_t check(const struct etask *t);

/* A buf an engine may touch: bare, or in a map that has the engine's device. */
static inline int reachable(const struct engine *e, const struct doca_buf *b)
{
	uint32_t i;
	if (b->mmap == NULL)
		return 1;
	for (i = 0; i < b->mmap->ndevs; i++)
		if (b->mmap->devs[i] == e->dev)
			return 1;
	return 0;
}

static void on_done(void *base, union doca_data task_ud, union doca_data ctx_ud)
{
	struct etask *t;
	doca_error_t status;
	for (t = all_tasks; t != NULL; t = t->next)
		if ((void *)t->base == base)
			break;
	if (t == NULL)
		return;
	status = task_get_status(base); /* not E_OK: flushed by a stop */
	if (status == E_OK && (status = work(t)) != E_OK)
		task_fail(base, status);
	(status == E_OK ? t->e->ok : t->e->err)[t->type](t, task_ud, ctx_ud);
}

static doca_error_t on_check(struct doca_task *base)
{
	struct etask *t;
	for (t = all_tasks; t != NULL && t->base != base; t = t->next)
		;
	return t == NULL ? E_INVALID : check(t);
}

static doca_error_t engine_create(void *dev, struct engine **out)
{
	struct engine *e;
	if (dev == NULL || out == NULL || ctx_create == NULL)
		return E_INVALID;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return E_NO_MEMORY;
	e->dev = dev;
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
	struct etask **link = &all_tasks, *t;
	if (e == NULL)
		return E_INVALID;
	/* Its task wrappers go with it: their doca_tasks die with the ctx, and a later
	 * engine may get this address. */
	while ((t = *link) != NULL)
		if (t->e == e) {
			*link = t->next;
			free(t);
		} else {
			link = &t->next;
		}
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
	if (engine_state(e->ctx) != S_IDLE)
		return E_BAD_STATE; /* tasks are configured while idle */
	e->ok[type] = ok;
	e->err[type] = err;
	e->num[type] = num;
	ctx_set_task_cb(e->ctx, on_done);
	ctx_set_check_cb(e->ctx, on_check);
	return E_OK;
}

/* A pool of num tasks per type, set by *_set_conf; a freed task's descriptor is handed
 * out again (the common recycles the doca_task, the engine its wrapper around it). */
static doca_error_t engine_alloc(struct engine *e, int type, const void *matrix, const struct doca_buf *src,
				 struct doca_buf *dst, union doca_data ud, struct etask **out)
{
	struct etask *t;
	struct doca_task *base;
	uint32_t used = 0;
	doca_error_t rc;
	if (e == NULL || out == NULL)
		return E_INVALID;
	if (e->ok[type] == NULL || engine_state(e->ctx) != S_RUNNING)
		return E_BAD_STATE; /* tasks are allocated while running */
	for (t = all_tasks; t != NULL; t = t->next)
		if (t->e == e && t->type == type && !task_freed(t->base))
			used++;
	if (used == e->num[type])
		return E_NO_MEMORY;
	rc = task_alloc(e->ctx, ud, &base);
	if (rc != E_OK)
		return rc;
	for (t = all_tasks; t != NULL && t->base != base; t = t->next)
		;
	if (t == NULL) {
		t = calloc(1, sizeof(*t));
		if (t == NULL)
			return E_NO_MEMORY;
		t->base = base;
		t->next = all_tasks;
		all_tasks = t;
	}
	t->e = e;
	t->type = type;
	t->matrix = matrix;
	t->src = src;
	t->dst = dst;
	t->flag1 = t->flag2 = 0;
	*out = t;
	return E_OK;
}

static struct doca_task *task_base(struct etask *t) { return t->base; }

#endif
