/* A fake libdoca_common, built by tests/native/fakelib (build_fake_common).
 *
 * It exports a few DOCA functions with the real ABI (union doca_data by value,
 * out-parameters, lists through T ***, callbacks called from C, error codes) so the
 * declarations of doca_py.native.capi can be exercised without DOCA. Behaviour is
 * only what the tests need; it is not an emulator. The fake_* exports create the
 * objects that real DOCA makes in other libraries: a ctx, tasks, and the task
 * callback that a *_task_*_set_conf call would register.
 *
 * params.h: FAKE_VERSION, ERROR_NAMES/ERROR_DESCRS (doca_py's table), RATE_DOUBLE
 * (DOCA 2.6's double * active rate), REUSE_ARGS/REUSE_DATA (the 3.2 buf re-aim calls), MMAP_ADVISE (2.8+: doca_mmap_advise.h),
 * MA_MAX_BUF_SIZE (mmap_advise.c).
 */

#include "fake.h"

#include <stddef.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct doca_pe;
typedef void (*doca_task_completion_cb_t)(struct doca_task *, union doca_data, union doca_data);
typedef void (*doca_ctx_state_changed_callback_t)(const union doca_data, struct doca_ctx *, int, int);

static const char *const error_names[] = { ERROR_NAMES };
static const char *const error_descrs[] = { ERROR_DESCRS };
#define N_ERRORS ((int)(sizeof(error_names) / sizeof(error_names[0])))

EXPORT const char *doca_version_runtime(void) { return FAKE_VERSION; }

EXPORT const char *doca_error_get_name(doca_error_t e)
{ return (e >= 0 && e < N_ERRORS) ? error_names[e] : "DOCA_ERROR_UNKNOWN"; }

EXPORT const char *doca_error_get_descr(doca_error_t e)
{ return (e >= 0 && e < N_ERRORS) ? error_descrs[e] : "Unrecognized error code"; }

/* ---- devinfo: a list returned through T***; dev ---- */
/* The emulated backend's default machine: the DPU's PF and the host's view of it. */
struct doca_devinfo {
	char pci[13], ibdev[16], iface[16];
	uint8_t mac[6], ipv4[4];
	uint16_t vhca;
};
static struct doca_devinfo devs[2] = {
	{ "0000:03:00.0", "mlx5_2", "p0", { 0xb8, 0xce, 0xf6, 0, 0, 0x10 }, { 127, 0, 0, 1 }, 0 },
	{ "0000:3b:00.0", "mlx5_0", "ens1f0np0", { 0xb8, 0xce, 0xf6, 0, 0, 0x01 }, { 127, 0, 0, 1 }, 2 },
};
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

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* "BB:DD.F" or "DDDD:BB:DD.F"; anything else is INVALID_VALUE, as in DOCA. */
EXPORT doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo *d, const char *pci, uint8_t *res)
{
	static const char shape[] = "hhhh:hh:hh.h";
	char full[13];
	size_t i, n;
	if (d == NULL || pci == NULL || res == NULL)
		return E_INVALID;
	n = strlen(pci);
	if (n != 7 && n != 12)
		return E_INVALID;
	memcpy(full, "0000:", 5);
	memcpy(full + 12 - n, pci, n + 1); /* the short form gets domain 0000 */
	for (i = 0; i < 12; i++)
		if (shape[i] == 'h' ? !is_hex(full[i]) : full[i] != shape[i])
			return E_INVALID;
	*res = strncasecmp(full, d->pci, 12) == 0;
	return E_OK;
}

static doca_error_t copy_str(const char *s, char *out, uint32_t size)
{
	if (out == NULL || size <= strlen(s))
		return E_INVALID;
	strcpy(out, s);
	return E_OK;
}

EXPORT doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo *d, char *out, uint32_t size)
{ return d ? copy_str(d->ibdev, out, size) : E_INVALID; }
EXPORT doca_error_t doca_devinfo_get_iface_name(const struct doca_devinfo *d, char *out, uint32_t size)
{ return d ? copy_str(d->iface, out, size) : E_INVALID; }

static doca_error_t copy_bytes(const void *src, size_t n, uint8_t *out, uint32_t size)
{
	if (out == NULL || size < n)
		return E_INVALID;
	memset(out, 0, size);
	memcpy(out, src, n);
	return E_OK;
}

EXPORT doca_error_t doca_devinfo_get_mac_addr(const struct doca_devinfo *d, uint8_t *out, uint32_t size)
{ return d ? copy_bytes(d->mac, 6, out, size) : E_INVALID; }
EXPORT doca_error_t doca_devinfo_get_ipv4_addr(const struct doca_devinfo *d, uint8_t *out, uint32_t size)
{ return d ? copy_bytes(d->ipv4, 4, out, size) : E_INVALID; }
EXPORT doca_error_t doca_devinfo_get_ipv6_addr(const struct doca_devinfo *d, uint8_t *out, uint32_t size)
{ static const uint8_t any[16]; return d ? copy_bytes(any, 16, out, size) : E_INVALID; }
EXPORT doca_error_t doca_devinfo_get_lid(const struct doca_devinfo *d, uint16_t *lid)
{ if (!d || !lid) return E_INVALID; *lid = 0; return E_OK; }
EXPORT doca_error_t doca_devinfo_get_vhca_id(const struct doca_devinfo *d, uint16_t *v)
{ if (!d || !v) return E_INVALID; *v = d->vhca; return E_OK; }

/* No representors, hotplug or notification moderation: every capability is 0. */
#define NO_CAP(name) \
EXPORT doca_error_t name(const struct doca_devinfo *d, uint8_t *v) { if (!d || !v) return E_INVALID; *v = 0; return E_OK; }
NO_CAP(doca_devinfo_cap_is_hotplug_manager_supported)
NO_CAP(doca_devinfo_cap_is_notification_moderation_supported)
NO_CAP(doca_devinfo_rep_cap_is_filter_all_supported)
NO_CAP(doca_devinfo_rep_cap_is_filter_net_supported)
NO_CAP(doca_devinfo_rep_cap_is_filter_emulated_supported)

/* Both devices can export and import memory through PCI. */
EXPORT doca_error_t doca_mmap_cap_is_export_pci_supported(const struct doca_devinfo *d, uint8_t *v)
{ if (!d || !v) return E_INVALID; *v = 1; return E_OK; }
EXPORT doca_error_t doca_mmap_cap_is_create_from_export_pci_supported(const struct doca_devinfo *d, uint8_t *v)
{ if (!d || !v) return E_INVALID; *v = 1; return E_OK; }

/* pd: the device's ibverbs protection domain (doca_rdma_bridge.h): DOCA's own, made on the first
 * doca_rdma_bridge_get_dev_pd, or the application's one it was opened on. */
struct ibv_pd { uint32_t magic; int from_doca; };
#define PD_MAGIC 0x70645044u
struct doca_dev { const struct doca_devinfo *info; struct ibv_pd *pd; };
static int open_devs;

EXPORT doca_error_t doca_dev_open(struct doca_devinfo *d, struct doca_dev **out)
{
	struct doca_dev *dev;
	if (d == NULL || out == NULL)
		return E_INVALID;
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return E_NO_MEMORY;
	dev->info = d;
	open_devs++;
	*out = dev;
	return E_OK;
}

EXPORT doca_error_t doca_dev_close(struct doca_dev *dev)
{
	if (dev == NULL)
		return E_INVALID;
	if (dev->pd != NULL && dev->pd->from_doca)
		free(dev->pd);
	free(dev);
	open_devs--;
	return E_OK;
}

/* ---- doca_rdma_bridge.h ---- */
EXPORT doca_error_t doca_rdma_bridge_get_dev_pd(const struct doca_dev *cdev, struct ibv_pd **pd)
{
	struct doca_dev *dev = (struct doca_dev *)cdev;
	if (dev == NULL || pd == NULL)
		return E_INVALID;
	if (dev->pd == NULL) {
		if ((dev->pd = calloc(1, sizeof(*dev->pd))) == NULL)
			return E_NO_MEMORY;
		dev->pd->magic = PD_MAGIC;
		dev->pd->from_doca = 1;
	}
	*pd = dev->pd;
	return E_OK;
}

/* DOCA refuses a PD it handed out itself (doca_rdma_bridge.h); the new device has no devinfo. */
EXPORT doca_error_t doca_rdma_bridge_open_dev_from_pd(struct ibv_pd *pd, struct doca_dev **out)
{
	struct doca_dev *dev;
	if (pd == NULL || out == NULL || pd->magic != PD_MAGIC || pd->from_doca)
		return E_INVALID;
	if ((dev = calloc(1, sizeof(*dev))) == NULL)
		return E_NO_MEMORY;
	dev->pd = pd;
	open_devs++;
	*out = dev;
	return E_OK;
}

/* What rdma-core's ibv_alloc_pd/ibv_dealloc_pd would do for the application. */
EXPORT struct ibv_pd *fake_ibv_alloc_pd(void)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	if (pd != NULL)
		pd->magic = PD_MAGIC;
	return pd;
}
EXPORT void fake_ibv_dealloc_pd(struct ibv_pd *pd) { free(pd); }

EXPORT struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *dev)
{ return dev ? (struct doca_devinfo *)dev->info : NULL; }

EXPORT int fake_open_devs(void) { return open_devs; }

/* 2.6 wrote a double, 3.x a uint64_t: a wrong binding reads garbage. */
#if RATE_DOUBLE
EXPORT doca_error_t doca_devinfo_get_active_rate(const struct doca_devinfo *d, double *rate)
{ if (d == NULL || rate == NULL) return E_INVALID; *rate = 200.5; return E_OK; }
#else
EXPORT doca_error_t doca_devinfo_get_active_rate(const struct doca_devinfo *d, uint64_t *rate)
{ if (d == NULL || rate == NULL) return E_INVALID; *rate = 400000000000ULL; return E_OK; }
#endif

/* ---- pe, ctx, task ----
 * The ctx state machine of doca_ctx.h: start on a connected idle ctx (RUNNING at
 * once, like DMA); stop of an idle ctx is a no-op; stop with no task allocated goes
 * IDLE, otherwise STOPPING: queued tasks are flushed (error callback, IO_FAILED) and
 * the ctx turns IDLE on a later doca_pe_progress once every task is freed, never
 * inside doca_task_free. A task the engine fails (fake_task_fail) stops its ctx.
 * State changes are delivered from doca_pe_progress, in order. Freed tasks go back
 * to their ctx and are handed out again, most recent first, as DOCA recycles them. */
#define QUEUE 256
#define MAX_CTX 8
#define MAX_CHANGES 8
enum { S_STARTING = 1, S_STOPPING = 3 };
struct fake_gwork;
struct fake_ginst;
struct doca_pe {
	struct doca_task *queue[QUEUE];
	unsigned head, count;
	struct fake_gwork *gwork_head, *gwork_tail; /* graph user nodes to run (graph.c) */
	unsigned gwork_count;
	struct doca_ctx *ctxs[MAX_CTX];
	int nctx;
	int event_fd, armed; /* the notification handle: an eventfd, signalled once per arming */
};
struct doca_ctx {
	union doca_data user_data;
	doca_ctx_state_changed_callback_t state_cb;
	doca_task_completion_cb_t task_cb;
	doca_error_t (*check_cb)(struct doca_task *); /* the engine's validation, for try_submit */
	struct doca_pe *pe;
	int state;
	int changes[MAX_CHANGES][2]; /* (prev, next) not delivered yet */
	int nchanges;
	size_t allocated, inflight;
	struct doca_task *free_tasks;
};
struct doca_task {
	union doca_data user_data;
	struct doca_ctx *ctx;
	doca_error_t status;
	int inflight, freed;
	struct doca_task *next_free;
	struct fake_ginst *grun; /* the graph instance running the task (graph.c), or NULL */
	int gnode;
};
static void graph_task_done(struct doca_task *t);
static int graph_run_users(struct doca_pe *pe);

static void set_state(struct doca_ctx *ctx, int state)
{
	if (ctx->nchanges < MAX_CHANGES) {
		ctx->changes[ctx->nchanges][0] = ctx->state;
		ctx->changes[ctx->nchanges][1] = state;
		ctx->nchanges++;
	}
	ctx->state = state;
}

EXPORT doca_error_t doca_pe_create(struct doca_pe **pe)
{
	if (pe == NULL)
		return E_INVALID;
	*pe = calloc(1, sizeof(**pe));
	if (*pe == NULL)
		return E_NO_MEMORY;
	(*pe)->event_fd = -1;
	return E_OK;
}

static void notify(struct doca_pe *pe)
{
	uint64_t one = 1;
	if (pe->armed && pe->event_fd >= 0 && write(pe->event_fd, &one, sizeof(one)) == sizeof(one))
		pe->armed = 0;
}

static doca_error_t ensure_fd(struct doca_pe *pe)
{
	if (pe->event_fd < 0 && (pe->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return E_NO_MEMORY;
	return E_OK;
}

EXPORT doca_error_t doca_pe_get_notification_handle(struct doca_pe *pe, int *fd)
{
	if (pe == NULL || fd == NULL)
		return E_INVALID;
	if (ensure_fd(pe) != E_OK)
		return E_NO_MEMORY;
	*fd = pe->event_fd;
	return E_OK;
}

/* Arm: the handle becomes readable at the next completion, or now if work is pending. */
EXPORT doca_error_t doca_pe_request_notification(struct doca_pe *pe)
{
	if (pe == NULL)
		return E_INVALID;
	if (ensure_fd(pe) != E_OK)
		return E_NO_MEMORY;
	pe->armed = 1;
	if (pe->count > 0)
		notify(pe);
	return E_OK;
}

EXPORT doca_error_t doca_pe_clear_notification(struct doca_pe *pe, int fd)
{
	uint64_t n;
	(void)fd; /* DOCA on Linux ignores the handle (NVIDIA's pe_event sample passes 0) */
	if (pe == NULL)
		return E_INVALID;
	while (pe->event_fd >= 0 && read(pe->event_fd, &n, sizeof(n)) == sizeof(n))
		;
	return E_OK;
}

EXPORT doca_error_t doca_pe_destroy(struct doca_pe *pe)
{
	if (pe == NULL)
		return E_INVALID;
	if (pe->nctx > 0)
		return E_IN_USE;
	if (pe->event_fd >= 0)
		close(pe->event_fd);
	free(pe);
	return E_OK;
}

EXPORT doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	if (pe == NULL || ctx == NULL)
		return E_INVALID;
	if (ctx->pe != NULL)
		return E_NOT_PERMITTED; /* doca_pe.h: a ctx connects once */
	if (pe->nctx == MAX_CTX)
		return E_NO_MEMORY;
	pe->ctxs[pe->nctx++] = ctx;
	ctx->pe = pe;
	return E_OK;
}

EXPORT doca_error_t doca_pe_get_num_inflight_tasks(const struct doca_pe *pe, size_t *n)
{
	if (pe == NULL || n == NULL)
		return E_INVALID;
	*n = pe->count;
	return E_OK;
}

static int deliver_changes(struct doca_pe *pe)
{
	int i, j, any = 0;
	for (i = 0; i < pe->nctx; i++) {
		struct doca_ctx *c = pe->ctxs[i];
		for (j = 0; j < c->nchanges; j++)
			if (c->state_cb) { /* without a callback there is no event to handle */
				any = 1;
				c->state_cb(c->user_data, c, c->changes[j][0], c->changes[j][1]);
			}
		c->nchanges = 0;
	}
	return any;
}

EXPORT uint8_t doca_pe_progress(struct doca_pe *pe)
{
	uint8_t any = 0;
	unsigned n;
	int i;
	/* A ctx that finished stopping before this call turns idle now. */
	for (i = 0; i < pe->nctx; i++) {
		struct doca_ctx *c = pe->ctxs[i];
		if (c->state == S_STOPPING && c->allocated == 0 && c->inflight == 0) {
			set_state(c, S_IDLE);
			any = 1;
		}
	}
	any |= deliver_changes(pe);
	/* Only what was queued before this call: callbacks may resubmit. */
	for (n = pe->count; n > 0; n--) {
		struct doca_task *t = pe->queue[pe->head];
		pe->head = (pe->head + 1) % QUEUE;
		pe->count--;
		any = 1;
		t->inflight = 0;
		t->ctx->inflight--;
		if (t->ctx->state == S_STOPPING && t->status == E_OK)
			t->status = E_IO_FAILED; /* flushed */
		if (t->grun != NULL) {
			union doca_data none = {0};
			t->ctx->task_cb(t, none, t->ctx->user_data);
			graph_task_done(t);
		} else {
			t->ctx->task_cb(t, t->user_data, t->ctx->user_data);
		}
	}
	if (pe->gwork_count)
		any |= graph_run_users(pe);
	any |= deliver_changes(pe); /* a failed task stopped its ctx */
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
	struct doca_task *t;
	int i;
	if (pe != NULL)
		for (i = 0; i < pe->nctx; i++)
			if (pe->ctxs[i] == ctx) {
				pe->ctxs[i] = pe->ctxs[--pe->nctx];
				break;
			}
	while ((t = ctx->free_tasks) != NULL) {
		ctx->free_tasks = t->next_free;
		free(t);
	}
	free(ctx);
}

EXPORT void fake_ctx_set_task_cb(struct doca_ctx *ctx, doca_task_completion_cb_t cb) { ctx->task_cb = cb; }

EXPORT doca_error_t doca_ctx_start(struct doca_ctx *ctx)
{
	if (ctx == NULL)
		return E_INVALID;
	if (ctx->pe == NULL)
		return E_NOT_CONNECTED;
	if (ctx->state != S_IDLE)
		return E_BAD_STATE;
	set_state(ctx, S_RUNNING);
	return E_OK;
}

EXPORT doca_error_t doca_ctx_stop(struct doca_ctx *ctx)
{
	if (ctx == NULL)
		return E_INVALID;
	if (ctx->state == S_IDLE || ctx->state == S_STOPPING)
		return E_OK;
	set_state(ctx, ctx->allocated || ctx->inflight ? S_STOPPING : S_IDLE);
	return E_OK;
}

EXPORT doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, int *state)
{ if (!ctx || !state) return E_INVALID; *state = ctx->state; return E_OK; }

EXPORT doca_error_t doca_ctx_get_num_inflight_tasks(const struct doca_ctx *ctx, size_t *n)
{ if (!ctx || !n) return E_INVALID; *n = ctx->inflight; return E_OK; }

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
	t = ctx->free_tasks;
	if (t != NULL)
		ctx->free_tasks = t->next_free;
	else if ((t = malloc(sizeof(*t))) == NULL)
		return E_NO_MEMORY;
	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->user_data = ud;
	ctx->allocated++;
	*task = t;
	return E_OK;
}

/* Whether the task went back to its ctx (the engines count their pools with it). */
EXPORT int fake_task_freed(const struct doca_task *task) { return task->freed; }

/* The engine failed the task: record the status and stop the ctx, as hardware does. */
EXPORT void fake_task_fail(struct doca_task *task, doca_error_t status)
{
	task->status = status;
	if (task->ctx->state == S_RUNNING)
		set_state(task->ctx, S_STOPPING);
}

EXPORT void doca_task_free(struct doca_task *task)
{
	struct doca_ctx *ctx = task->ctx;
	ctx->allocated--;
	task->freed = 1;
	task->next_free = ctx->free_tasks;
	ctx->free_tasks = task;
}

EXPORT void doca_task_set_user_data(struct doca_task *task, union doca_data ud) { task->user_data = ud; }
EXPORT union doca_data doca_task_get_user_data(const struct doca_task *task) { return task->user_data; }
EXPORT struct doca_ctx *doca_task_get_ctx(const struct doca_task *task) { return task->ctx; }
EXPORT doca_error_t doca_task_get_status(const struct doca_task *task) { return task->status; }

EXPORT doca_error_t doca_task_submit(struct doca_task *task)
{
	struct doca_pe *pe = task->ctx->pe;
	if (pe == NULL)
		return E_NOT_CONNECTED;
	if (task->ctx->state != S_RUNNING || task->ctx->task_cb == NULL || task->inflight)
		return E_BAD_STATE;
	if (pe->count == QUEUE)
		return E_AGAIN;
	task->status = E_OK;
	task->inflight = 1;
	task->ctx->inflight++;
	pe->queue[(pe->head + pe->count) % QUEUE] = task;
	pe->count++;
	notify(pe);
	return E_OK;
}

/* Validate first (the engine's check), and leave the task with the caller on failure. */
EXPORT doca_error_t doca_task_try_submit(struct doca_task *task)
{
	doca_error_t rc;
	if (task == NULL)
		return E_INVALID;
	if (task->ctx->check_cb != NULL && (rc = task->ctx->check_cb(task)) != E_OK)
		return rc;
	return doca_task_submit(task);
}

EXPORT void fake_ctx_set_check_cb(struct doca_ctx *ctx, doca_error_t (*cb)(struct doca_task *)) { ctx->check_cb = cb; }

/* ---- mmap ----
 * The DOCA 3.0 doca_mmap.h rules the conformance tests check: configuration only
 * before start (memrange and permissions BAD_STATE, devices and thread safety
 * NOT_PERMITTED), one memrange, a bounded device list, export only when started, with
 * the permission and for a device of the map; stop refused while bufs point into it
 * and revoking the exports. The export blob is the fake's own format. */
static struct fake_mmap *live_mmaps;
static uint64_t next_mmap_id = 1;

static struct fake_mmap *find_mmap(const void *p)
{
	struct fake_mmap *m;
	for (m = live_mmaps; m != NULL; m = m->next_live)
		if ((const void *)m == p)
			return m;
	return NULL;
}

static struct fake_mmap *new_mmap(void)
{
	struct fake_mmap *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->id = next_mmap_id++;
	m->max_devs = MAX_MMAP_DEVS;
	m->next_live = live_mmaps;
	live_mmaps = m;
	return m;
}

EXPORT doca_error_t doca_mmap_create(struct fake_mmap **out)
{
	if (out == NULL)
		return E_INVALID;
	*out = new_mmap();
	return *out ? E_OK : E_NO_MEMORY;
}

EXPORT doca_error_t doca_mmap_destroy(struct fake_mmap *m)
{
	struct fake_mmap **link;
	if (find_mmap(m) == NULL)
		return E_INVALID;
	if (m->nbufs)
		return E_IN_USE;
	for (link = &live_mmaps; *link != m; link = &(*link)->next_live)
		;
	*link = m->next_live;
	free(m);
	return E_OK;
}

EXPORT doca_error_t doca_mmap_set_memrange(struct fake_mmap *m, void *addr, size_t len)
{
	if (m == NULL || addr == NULL || len == 0)
		return E_INVALID;
	if (m->from_export || m->has_range)
		return E_NOT_PERMITTED;
	if (m->started)
		return E_BAD_STATE;
	m->addr = addr;
	m->len = len;
	m->has_range = 1;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_get_memrange(const struct fake_mmap *m, void **addr, size_t *len)
{
	if (m == NULL || addr == NULL || len == NULL)
		return E_INVALID;
	if (!m->has_range)
		return E_BAD_STATE;
	*addr = m->addr;
	*len = m->len;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_set_permissions(struct fake_mmap *m, uint32_t perms)
{
	if (m == NULL)
		return E_INVALID;
	if (m->from_export)
		return E_NOT_PERMITTED;
	if (m->started)
		return E_BAD_STATE;
	m->perms = perms;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_add_dev(struct fake_mmap *m, struct doca_dev *dev)
{
	uint32_t i;
	if (m == NULL || dev == NULL)
		return E_INVALID;
	if (m->started || m->from_export)
		return E_NOT_PERMITTED;
	for (i = 0; i < m->ndevs; i++)
		if (m->devs[i] == dev)
			return E_ALREADY_EXIST;
	if (m->ndevs == m->max_devs)
		return E_NO_MEMORY;
	m->devs[m->ndevs++] = dev;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_rm_dev(struct fake_mmap *m, struct doca_dev *dev)
{
	uint32_t i;
	if (m == NULL || dev == NULL)
		return E_INVALID;
	if (m->started || m->from_export)
		return E_NOT_PERMITTED;
	for (i = 0; i < m->ndevs; i++)
		if (m->devs[i] == dev) {
			m->devs[i] = m->devs[--m->ndevs];
			return E_OK;
		}
	return E_NOT_FOUND;
}

EXPORT doca_error_t doca_mmap_set_max_num_devices(struct fake_mmap *m, uint32_t n)
{
	if (m == NULL || n == 0 || n > MAX_MMAP_DEVS || n < m->ndevs)
		return E_INVALID;
	if (m->started)
		return E_NOT_PERMITTED;
	m->max_devs = n;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_get_max_num_devices(const struct fake_mmap *m, uint32_t *n)
{ if (!m || !n) return E_INVALID; *n = m->max_devs; return E_OK; }

EXPORT doca_error_t doca_mmap_enable_thread_safety(struct fake_mmap *m)
{
	if (m == NULL)
		return E_INVALID;
	if (m->started)
		return E_NOT_PERMITTED;
	m->thread_safe = 1;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_start(struct fake_mmap *m)
{
	if (m == NULL)
		return E_INVALID;
	if (m->started || !m->has_range)
		return E_BAD_STATE;
	m->started = 1;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_stop(struct fake_mmap *m)
{
	if (m == NULL)
		return E_INVALID;
	if (m->from_export || !m->started)
		return E_BAD_STATE;
	if (m->nbufs)
		return E_NOT_PERMITTED;
	m->started = 0;
	m->exported = 0; /* stopping revokes every export */
	m->id = next_mmap_id++;
	return E_OK;
}

/* The export blob: magic, version, then the exporting map's id, range and a checksum,
 * so a truncated, corrupted or foreign blob is INVALID_VALUE and another version
 * UNSUPPORTED_VERSION, as DOCA answers. */
#define BLOB_MAGIC "FAKEMMAP"
#define BLOB_VERSION 1
struct blob { char magic[8]; uint8_t version, pad[7]; uint64_t id, addr, len, sum; };
_Static_assert(sizeof(struct blob) == sizeof(((struct fake_mmap *)0)->blob), "the blob fits the map");

static uint64_t blob_sum(const struct blob *b)
{
	const uint8_t *p = (const uint8_t *)b;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a over everything before the sum */
	size_t i;
	for (i = 0; i < offsetof(struct blob, sum); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static doca_error_t export(struct fake_mmap *m, struct doca_dev *dev, uint32_t need, const void **blob, size_t *len)
{
	struct blob *b = (struct blob *)m->blob;
	uint32_t i;
	if (m == NULL || dev == NULL || blob == NULL || len == NULL)
		return E_INVALID;
	if (!m->started || m->from_export || !(m->perms & need))
		return E_NOT_PERMITTED;
	for (i = 0; i < m->ndevs && m->devs[i] != dev; i++)
		;
	if (i == m->ndevs)
		return E_NOT_FOUND;
	memset(b, 0, sizeof(*b));
	memcpy(b->magic, BLOB_MAGIC, 8);
	b->version = BLOB_VERSION;
	b->id = m->id;
	b->addr = (uintptr_t)m->addr;
	b->len = m->len;
	b->sum = blob_sum(b);
	m->exported = 1;
	*blob = b;
	*len = sizeof(*b);
	return E_OK;
}

EXPORT doca_error_t doca_mmap_export_pci(struct fake_mmap *m, struct doca_dev *dev, const void **blob, size_t *len)
{ return export(m, dev, PERM_PCI, blob, len); }
EXPORT doca_error_t doca_mmap_export_rdma(struct fake_mmap *m, struct doca_dev *dev, const void **blob, size_t *len)
{ return export(m, dev, PERM_RDMA, blob, len); }

EXPORT doca_error_t doca_mmap_create_from_export(const union doca_data *ud, const void *data, size_t len,
						 struct doca_dev *dev, struct fake_mmap **out)
{
	struct blob b;
	struct fake_mmap *src, *m;
	(void)ud;
	if (data == NULL || len != sizeof(b) || dev == NULL || out == NULL)
		return E_INVALID;
	memcpy(&b, data, sizeof(b));
	if (memcmp(b.magic, BLOB_MAGIC, 8) != 0)
		return E_INVALID;
	if (b.version != BLOB_VERSION)
		return E_UNSUPPORTED_VERSION;
	if (b.sum != blob_sum(&b))
		return E_INVALID;
	for (src = live_mmaps; src != NULL; src = src->next_live)
		if (src->id == b.id && src->exported && !src->from_export)
			break;
	if (src == NULL)
		return E_NOT_PERMITTED; /* revoked by stop (or never exported) */
	m = new_mmap();
	if (m == NULL)
		return E_NO_MEMORY;
	m->addr = src->addr;
	m->len = src->len;
	m->perms = src->perms;
	m->has_range = m->started = m->from_export = 1;
	m->devs[m->ndevs++] = dev;
	*out = m;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_get_num_bufs(const struct fake_mmap *m, uint32_t *n)
{ if (!m || !n) return E_INVALID; *n = m->nbufs; return E_OK; }
EXPORT doca_error_t doca_mmap_get_exported(const struct fake_mmap *m, uint8_t *v)
{ if (!m || !v) return E_INVALID; *v = (uint8_t)m->exported; return E_OK; }
EXPORT doca_error_t doca_mmap_get_from_export(const struct fake_mmap *m, uint8_t *v)
{ if (!m || !v) return E_INVALID; *v = (uint8_t)m->from_export; return E_OK; }

/* ---- buf inventory and bufs ----
 * An inventory the fake does not know (the transport and engine tests pass a dummy
 * pointer and no mmap) hands out bare descriptors, freed at refcount 0. */
struct fake_pool;
struct fake_inv {
	struct fake_inv *next_live;
	uint32_t num, nfree;
	int started;
	struct fake_pool *pool; /* the buf pool this inventory counts for (buf_pool.c), or NULL */
};
static void pool_release(struct fake_pool *p, const struct doca_buf *b);
static struct fake_inv *live_invs;
static int last_reuse; /* 1 reuse_by_addr, 2 reuse_by_data, 3 reuse_by_args */

static struct fake_inv *find_inv(const void *p)
{
	struct fake_inv *v;
	for (v = live_invs; v != NULL; v = v->next_live)
		if ((const void *)v == p)
			return v;
	return NULL;
}

EXPORT doca_error_t doca_buf_inventory_create(size_t num, struct fake_inv **out)
{
	struct fake_inv *v;
	if (num == 0 || num > UINT32_MAX || out == NULL)
		return E_INVALID;
	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return E_NO_MEMORY;
	v->num = v->nfree = (uint32_t)num;
	v->next_live = live_invs;
	live_invs = v;
	*out = v;
	return E_OK;
}

EXPORT doca_error_t doca_buf_inventory_destroy(struct fake_inv *v)
{
	struct fake_inv **link;
	if (find_inv(v) == NULL)
		return E_INVALID;
	if (v->nfree != v->num)
		return E_IN_USE;
	for (link = &live_invs; *link != v; link = &(*link)->next_live)
		;
	*link = v->next_live;
	free(v);
	return E_OK;
}

EXPORT doca_error_t doca_buf_inventory_start(struct fake_inv *v)
{ if (!find_inv(v)) return E_INVALID; if (v->started) return E_BAD_STATE; v->started = 1; return E_OK; }
EXPORT doca_error_t doca_buf_inventory_stop(struct fake_inv *v)
{
	if (!find_inv(v))
		return E_INVALID;
	if (!v->started)
		return E_BAD_STATE;
	if (v->nfree != v->num)
		return E_IN_USE;
	v->started = 0;
	return E_OK;
}
EXPORT doca_error_t doca_buf_inventory_expand(struct fake_inv *v, uint32_t n)
{
	if (!find_inv(v) || n == 0)
		return E_INVALID;
	if (!v->started)
		return E_BAD_STATE;
	v->num += n;
	v->nfree += n;
	return E_OK;
}
EXPORT doca_error_t doca_buf_inventory_get_num_elements(const struct fake_inv *v, uint32_t *n)
{ if (!find_inv(v) || !n) return E_INVALID; *n = v->num; return E_OK; }
EXPORT doca_error_t doca_buf_inventory_get_num_free_elements(const struct fake_inv *v, uint32_t *n)
{ if (!find_inv(v) || !n) return E_INVALID; *n = v->nfree; return E_OK; }

static struct doca_buf *new_buf(struct fake_inv *v, struct fake_mmap *m, void *addr, size_t len, void *data,
				size_t data_len)
{
	struct doca_buf *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->head = addr; b->len = len; b->data = data; b->data_len = data_len; b->refcount = 1;
	b->inv = v;
	b->mmap = m;
	if (v != NULL) {
		v->nfree--;
		m->nbufs++;
	}
	return b;
}

static void release_buf(struct doca_buf *b)
{
	if (b->inv != NULL && b->inv->pool != NULL)
		pool_release(b->inv->pool, b);
	if (b->inv != NULL) {
		b->inv->nfree++;
		b->mmap->nbufs--;
	}
	free(b);
}

EXPORT doca_error_t doca_buf_inventory_buf_get_by_args(void *inv, void *mmap, void *addr, size_t len,
							void *data, size_t data_len, struct doca_buf **buf)
{
	struct fake_inv *v = find_inv(inv);
	struct fake_mmap *m = find_mmap(mmap);
	char *lo = addr, *d = data;
	if (inv == NULL || buf == NULL)
		return E_INVALID;
	if (v != NULL) {
		if (m == NULL)
			return E_INVALID;
		if (!v->started || !m->started)
			return E_BAD_STATE;
		if (lo < (char *)m->addr || lo + len > (char *)m->addr + m->len || d < lo || d + data_len > lo + len)
			return E_INVALID;
		if (v->nfree == 0)
			return E_NO_MEMORY;
	}
	*buf = new_buf(v, m, addr, len, data, data_len);
	return *buf ? E_OK : E_NO_MEMORY;
}

EXPORT doca_error_t doca_buf_inventory_buf_dup(struct fake_inv *v, const struct doca_buf *src, struct doca_buf **out)
{
	const struct doca_buf *s;
	struct doca_buf *head = NULL, *tail = NULL, *b;
	uint32_t n = 0;
	if (!find_inv(v) || src == NULL || out == NULL)
		return E_INVALID;
	if (!v->started)
		return E_BAD_STATE;
	for (s = src; s != NULL; s = s->next)
		n++;
	if (v->nfree < n)
		return E_NO_MEMORY;
	for (s = src; s != NULL; s = s->next) {
		b = new_buf(v, s->mmap, s->head, s->len, s->data, s->data_len);
		if (b == NULL)
			return E_NO_MEMORY;
		if (head == NULL) {
			head = b;
		} else {
			tail->next = b;
			b->first = head;
		}
		tail = b;
	}
	*out = head;
	return E_OK;
}

/* The reference count, the list length and list surgery belong to a list's head. */
EXPORT doca_error_t doca_buf_inc_refcount(struct doca_buf *b, uint16_t *before)
{
	if (b == NULL)
		return E_INVALID;
	if (b->first != NULL)
		return E_NOT_PERMITTED;
	if (before != NULL)
		*before = b->refcount;
	b->refcount++;
	return E_OK;
}

EXPORT doca_error_t doca_buf_dec_refcount(struct doca_buf *b, uint16_t *before)
{
	struct doca_buf *next;
	if (b == NULL)
		return E_INVALID;
	if (b->first != NULL)
		return E_NOT_PERMITTED;
	if (before != NULL)
		*before = b->refcount;
	if (--b->refcount == 0)
		for (; b != NULL; b = next) {
			next = b->next;
			release_buf(b);
		}
	return E_OK;
}

EXPORT doca_error_t doca_buf_get_refcount(const struct doca_buf *b, uint16_t *n)
{ if (!b || !n) return E_INVALID; *n = b->first ? b->first->refcount : b->refcount; return E_OK; }

EXPORT doca_error_t doca_buf_get_head(const struct doca_buf *b, void **p) { *p = b->head; return E_OK; }
EXPORT doca_error_t doca_buf_get_len(const struct doca_buf *b, size_t *n) { *n = b->len; return E_OK; }
EXPORT doca_error_t doca_buf_get_data(const struct doca_buf *b, void **p) { *p = b->data; return E_OK; }
EXPORT doca_error_t doca_buf_get_data_len(const struct doca_buf *b, size_t *n) { *n = b->data_len; return E_OK; }

EXPORT doca_error_t doca_buf_set_data(struct doca_buf *b, void *data, size_t len)
{
	char *d = data, *lo;
	if (b == NULL)
		return E_INVALID;
	lo = b->head;
	if (d < lo || d + len > lo + b->len)
		return E_INVALID;
	b->data = data;
	b->data_len = len;
	return E_OK;
}

EXPORT doca_error_t doca_buf_reset_data_len(struct doca_buf *b)
{ if (!b) return E_INVALID; b->data_len = 0; return E_OK; }

EXPORT doca_error_t doca_buf_get_next_in_list(const struct doca_buf *b, struct doca_buf **next)
{ if (!b || !next) return E_INVALID; *next = b->next; return E_OK; }

EXPORT doca_error_t doca_buf_get_last_in_list(const struct doca_buf *b, struct doca_buf **last)
{
	if (!b || !last)
		return E_INVALID;
	while (b->next != NULL)
		b = b->next;
	*last = (struct doca_buf *)b;
	return E_OK;
}

EXPORT doca_error_t doca_buf_is_first_in_list(const struct doca_buf *b, uint8_t *v)
{ if (!b || !v) return E_INVALID; *v = b->first == NULL; return E_OK; }
EXPORT doca_error_t doca_buf_is_last_in_list(const struct doca_buf *b, uint8_t *v)
{ if (!b || !v) return E_INVALID; *v = b->next == NULL; return E_OK; }
EXPORT doca_error_t doca_buf_is_in_list(const struct doca_buf *b, uint8_t *v)
{ if (!b || !v) return E_INVALID; *v = b->first != NULL || b->next != NULL; return E_OK; }

EXPORT doca_error_t doca_buf_get_list_len(const struct doca_buf *b, uint32_t *n)
{
	uint32_t len = 0;
	if (b == NULL || n == NULL)
		return E_INVALID;
	if (b->first != NULL)
		return E_NOT_PERMITTED;
	for (; b != NULL; b = b->next)
		len++;
	*n = len;
	return E_OK;
}

EXPORT doca_error_t doca_buf_chain_list(struct doca_buf *list1, struct doca_buf *list2)
{
	struct doca_buf *t;
	if (list1 == NULL || list2 == NULL || list1 == list2)
		return E_INVALID;
	if (list1->first != NULL || list2->first != NULL)
		return E_NOT_PERMITTED;
	for (t = list1; t->next != NULL; t = t->next)
		;
	t->next = list2;
	for (t = list2; t != NULL; t = t->next)
		t->first = list1;
	return E_OK;
}

EXPORT doca_error_t doca_buf_unchain_list(struct doca_buf *list1, struct doca_buf *list2)
{
	struct doca_buf *t;
	if (list1 == NULL || list2 == NULL || list1->first != NULL || list2->first != list1)
		return E_INVALID;
	for (t = list1; t->next != list2; t = t->next)
		;
	t->next = NULL;
	list2->first = NULL;
	for (t = list2->next; t != NULL; t = t->next)
		t->first = list2;
	return E_OK;
}

EXPORT int fake_last_reuse(void) { return last_reuse; }

/* A re-aimed buf stays inside its mmap (bare descriptors are not checked). */
static inline int outside_mmap(const struct doca_buf *b, const void *addr, size_t len)
{
	const char *lo = addr;
	return b->mmap != NULL && (lo < (char *)b->mmap->addr || lo + len > (char *)b->mmap->addr + b->mmap->len);
}

#if REUSE_ARGS
EXPORT doca_error_t doca_buf_inventory_buf_reuse_by_args(struct doca_buf *b, void *addr, size_t len,
							  void *data, size_t data_len)
{
	if (b == NULL || outside_mmap(b, addr, len) || (char *)data < (char *)addr ||
	    (char *)data + data_len > (char *)addr + len)
		return E_INVALID;
	b->head = addr; b->len = len; b->data = data; b->data_len = data_len;
	last_reuse = 3;
	return E_OK;
}
#endif
#if REUSE_DATA
EXPORT doca_error_t doca_buf_inventory_buf_reuse_by_data(struct doca_buf *b, void *data, size_t len)
{
	if (b == NULL || outside_mmap(b, data, len))
		return E_INVALID;
	b->head = data; b->len = len; b->data = data; b->data_len = len;
	last_reuse = 2;
	return E_OK;
}
#endif

#include "buf_pool.c"
#include "sync_event.c"
#if MMAP_ADVISE
#include "mmap_advise.c"
#endif
#include "graph.c" /* doca_graph.h: the same in 2.6 and 3.x */
