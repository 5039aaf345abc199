/* The fake libdoca_common's doca_sync_event (doca_sync_event.h), included by common.c.
 *
 * An event holds its value; an event created from an export names its source by id and looks it up on
 * every access, so destroying or stopping the source revokes the import (NOT_PERMITTED), as DOCA's
 * revocation does. The ctx is one of the common's; its task callback is this file's trampoline, which
 * runs the operation when doca_pe_progress completes the task. A wait task whose condition does not hold
 * goes back on the Pe's queue (in flight until a later progress finds it true). The export blob is the
 * fake's own format: magic, version, kind, the source's id and a checksum.
 */

#include <sched.h>

enum { SE_GET, SE_SET, SE_ADD, SE_WAIT_EQ, SE_WAIT_NEQ, SE_NTYPES };
enum { LOC_CPU = 1, LOC_REMOTE_PCI = 2, LOC_REMOTE_NET = 4 };
enum { MODE_NONE, MODE_STANDALONE, MODE_CTX };

struct fake_se {
	struct fake_se *next_live;
	uint64_t id, source; /* source: the id of the exporting event (0: this event holds the value) */
	uint64_t value;
	uint32_t pub, sub;
	int mode, started, exported_pci, exported_net;
	struct doca_ctx *ctx;
	task_cb_t ok[SE_NTYPES], err[SE_NTYPES];
	uint32_t num[SE_NTYPES];
	uint64_t blob[4];
};
struct se_blob { char magic[8]; uint8_t version, kind, pad[6]; uint64_t id, sum; };
_Static_assert(sizeof(struct se_blob) == sizeof(((struct fake_se *)0)->blob), "the blob fits the event");
#define SE_MAGIC "FAKESYNC"
#define SE_VERSION 1

struct se_task {
	struct doca_task *base;
	struct fake_se *se;
	int type;
	uint64_t val, mask, *ret;
	struct se_task *next;
};
struct fake_se_rn { uint64_t id; };

static struct fake_se *live_ses;
static struct se_task *se_tasks;
static uint64_t next_se_id = 1;

static struct fake_se *find_se(const void *p)
{
	struct fake_se *s;
	for (s = live_ses; s != NULL; s = s->next_live)
		if ((const void *)s == p)
			return s;
	return NULL;
}

static struct fake_se *se_by_id(uint64_t id, int kind)
{
	struct fake_se *s;
	for (s = live_ses; s != NULL; s = s->next_live)
		if (s->id == id && s->source == 0 && (kind == 1 ? s->exported_pci : s->exported_net))
			return s;
	return NULL;
}

/* The value an event operates on; NULL when its source revoked the export. */
static uint64_t *se_value(struct fake_se *s)
{
	struct fake_se *src;
	if (s->source == 0)
		return &s->value;
	src = se_by_id(s->source, 1);
	return src ? &src->value : NULL;
}

static int se_running(const struct fake_se *s)
{
	int state = S_IDLE;
	if (s->started)
		return 1;
	doca_ctx_get_state(s->ctx, &state);
	return s->mode == MODE_CTX && state == S_RUNNING;
}

static int se_holds(int type, uint64_t v, uint64_t val, uint64_t mask)
{
	return type == SE_WAIT_EQ ? (v & mask) == val : (v & mask) != val;
}

static struct fake_se *new_se(uint64_t source)
{
	struct fake_se *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	if (fake_ctx_create(&s->ctx) != E_OK) {
		free(s);
		return NULL;
	}
	s->id = next_se_id++;
	s->source = source;
	s->next_live = live_ses;
	live_ses = s;
	return s;
}

EXPORT doca_error_t doca_sync_event_create(struct fake_se **out)
{
	if (out == NULL)
		return E_INVALID;
	*out = new_se(0);
	return *out ? E_OK : E_NO_MEMORY;
}

EXPORT doca_error_t doca_sync_event_destroy(struct fake_se *s)
{
	struct fake_se **link;
	struct se_task **tl = &se_tasks, *t;
	int state = S_IDLE;
	if (find_se(s) == NULL)
		return E_INVALID;
	doca_ctx_get_state(s->ctx, &state);
	if (state != S_IDLE)
		return E_BAD_STATE;
	while ((t = *tl) != NULL)
		if (t->se == s) {
			*tl = t->next;
			free(t);
		} else {
			tl = &t->next;
		}
	for (link = &live_ses; *link != s; link = &(*link)->next_live)
		;
	*link = s->next_live;
	fake_ctx_destroy(s->ctx);
	free(s);
	return E_OK;
}

static doca_error_t se_config(struct fake_se *s, uint32_t *where, uint32_t loc, const void *dev, int need_dev)
{
	int state = S_IDLE;
	if (find_se(s) == NULL || (need_dev && dev == NULL))
		return E_INVALID;
	if (s->source)
		return E_NOT_PERMITTED; /* an event from an export cannot be configured */
	doca_ctx_get_state(s->ctx, &state);
	if (s->started || state != S_IDLE)
		return E_BAD_STATE;
	*where |= loc;
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_add_publisher_location_cpu(struct fake_se *s, void *dev)
{ return se_config(s, &s->pub, LOC_CPU, dev, 1); }
EXPORT doca_error_t doca_sync_event_add_publisher_location_remote_pci(struct fake_se *s)
{ return se_config(s, &s->pub, LOC_REMOTE_PCI, NULL, 0); }
EXPORT doca_error_t doca_sync_event_add_publisher_location_remote_net(struct fake_se *s)
{ return se_config(s, &s->pub, LOC_REMOTE_NET, NULL, 0); }
EXPORT doca_error_t doca_sync_event_add_subscriber_location_cpu(struct fake_se *s, void *dev)
{ return se_config(s, &s->sub, LOC_CPU, dev, 1); }
EXPORT doca_error_t doca_sync_event_add_subscriber_location_remote_pci(struct fake_se *s)
{ return se_config(s, &s->sub, LOC_REMOTE_PCI, NULL, 0); }

EXPORT doca_error_t doca_sync_event_start(struct fake_se *s)
{
	if (find_se(s) == NULL)
		return E_INVALID;
	if (s->mode == MODE_CTX)
		return E_NOT_PERMITTED;
	if (s->started)
		return E_BAD_STATE;
	s->started = 1;
	s->mode = MODE_STANDALONE;
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_stop(struct fake_se *s)
{
	if (find_se(s) == NULL)
		return E_INVALID;
	if (!s->started)
		return E_BAD_STATE;
	s->started = s->exported_pci = s->exported_net = 0; /* stopping revokes the exports */
	return E_OK;
}

EXPORT struct doca_ctx *doca_sync_event_as_ctx(struct fake_se *s)
{
	if (find_se(s) == NULL || s->mode == MODE_STANDALONE)
		return NULL;
	s->mode = MODE_CTX;
	return s->ctx;
}

/* ---- synchronous operations ---- */
static doca_error_t se_access(struct fake_se *s, uint64_t **v)
{
	if (find_se(s) == NULL)
		return E_INVALID;
	if (!se_running(s))
		return E_BAD_STATE;
	*v = se_value(s);
	return *v ? E_OK : E_NOT_PERMITTED;
}

EXPORT doca_error_t doca_sync_event_get(struct fake_se *s, uint64_t *out)
{
	uint64_t *v;
	doca_error_t rc = out ? se_access(s, &v) : E_INVALID;
	if (rc == E_OK)
		*out = __atomic_load_n(v, __ATOMIC_SEQ_CST);
	return rc;
}

EXPORT doca_error_t doca_sync_event_update_set(struct fake_se *s, uint64_t value)
{
	uint64_t *v;
	doca_error_t rc = se_access(s, &v);
	if (rc == E_OK)
		__atomic_store_n(v, value, __ATOMIC_SEQ_CST);
	return rc;
}

EXPORT doca_error_t doca_sync_event_update_add(struct fake_se *s, uint64_t value, uint64_t *fetched)
{
	uint64_t *v;
	doca_error_t rc = se_access(s, &v);
	if (rc == E_OK) {
		uint64_t old = __atomic_fetch_add(v, value, __ATOMIC_SEQ_CST);
		if (fetched != NULL)
			*fetched = old;
	}
	return rc;
}

enum { W_GT, W_EQ, W_NEQ };
static doca_error_t se_wait(struct fake_se *s, int op, uint64_t value, uint64_t mask, int yield)
{
	uint64_t *v, cur;
	doca_error_t rc;
	for (;;) {
		if ((rc = se_access(s, &v)) != E_OK)
			return rc;
		cur = __atomic_load_n(v, __ATOMIC_SEQ_CST) & mask;
		if (op == W_GT ? cur > value : op == W_EQ ? cur == value : cur != value)
			return E_OK;
		if (yield)
			sched_yield();
	}
}

EXPORT doca_error_t doca_sync_event_wait_gt(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_GT, v, m, 0); }
EXPORT doca_error_t doca_sync_event_wait_gt_yield(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_GT, v, m, 1); }
EXPORT doca_error_t doca_sync_event_wait_eq(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_EQ, v, m, 0); }
EXPORT doca_error_t doca_sync_event_wait_eq_yield(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_EQ, v, m, 1); }
EXPORT doca_error_t doca_sync_event_wait_neq(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_NEQ, v, m, 0); }
EXPORT doca_error_t doca_sync_event_wait_neq_yield(struct fake_se *s, uint64_t v, uint64_t m) { return se_wait(s, W_NEQ, v, m, 1); }

/* ---- exports ---- */
static uint64_t se_blob_sum(const struct se_blob *b)
{
	const uint8_t *p = (const uint8_t *)b;
	uint64_t h = 1469598103934665603ULL;
	size_t i;
	for (i = 0; i < offsetof(struct se_blob, sum); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static doca_error_t se_export(struct fake_se *s, int kind, const void **data, size_t *sz)
{
	struct se_blob *b = (struct se_blob *)s->blob;
	if (find_se(s) == NULL || data == NULL || sz == NULL)
		return E_INVALID;
	if (s->source)
		return E_NOT_PERMITTED;
	if (!se_running(s))
		return E_BAD_STATE;
	if (kind == 1 ? !((s->pub | s->sub) & LOC_REMOTE_PCI) : !(s->pub & LOC_REMOTE_NET))
		return E_NOT_PERMITTED;
	memset(b, 0, sizeof(*b));
	memcpy(b->magic, SE_MAGIC, 8);
	b->version = SE_VERSION;
	b->kind = (uint8_t)kind;
	b->id = s->id;
	b->sum = se_blob_sum(b);
	if (kind == 1)
		s->exported_pci = 1;
	else
		s->exported_net = 1;
	*data = b;
	*sz = sizeof(*b);
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_export_to_remote_pci(struct fake_se *s, void *dev, const void **data, size_t *sz)
{ return dev == NULL ? E_INVALID : se_export(s, 1, data, sz); }
EXPORT doca_error_t doca_sync_event_export_to_remote_net(struct fake_se *s, const void **data, size_t *sz)
{ return se_export(s, 2, data, sz); }

static doca_error_t se_import(const void *dev, const void *data, size_t sz, int kind, uint64_t *id)
{
	struct se_blob b;
	if (dev == NULL || data == NULL || sz != sizeof(b))
		return E_INVALID;
	memcpy(&b, data, sizeof(b));
	if (memcmp(b.magic, SE_MAGIC, 8) != 0 || b.sum != se_blob_sum(&b) || b.kind != kind)
		return E_INVALID;
	if (b.version != SE_VERSION)
		return E_UNSUPPORTED_VERSION;
	if (se_by_id(b.id, kind) == NULL)
		return E_NOT_PERMITTED; /* revoked, or never exported */
	*id = b.id;
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_create_from_export(void *dev, const void *data, size_t sz, struct fake_se **out)
{
	uint64_t id;
	doca_error_t rc = out ? se_import(dev, data, sz, 1, &id) : E_INVALID;
	if (rc != E_OK)
		return rc;
	*out = new_se(id);
	return *out ? E_OK : E_NO_MEMORY;
}

EXPORT doca_error_t doca_sync_event_remote_net_create_from_export(void *dev, const void *data, size_t sz,
								  struct fake_se_rn **out)
{
	uint64_t id;
	doca_error_t rc = out ? se_import(dev, data, sz, 2, &id) : E_INVALID;
	if (rc != E_OK)
		return rc;
	*out = calloc(1, sizeof(**out));
	if (*out == NULL)
		return E_NO_MEMORY;
	(*out)->id = id;
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_remote_net_destroy(struct fake_se_rn *rn)
{ if (rn == NULL) return E_INVALID; free(rn); return E_OK; }

static doca_error_t se_cap(const void *devinfo) { return devinfo ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_sync_event_cap_is_create_from_export_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_remote_net_is_create_from_export_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_is_export_to_remote_pci_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_is_export_to_remote_net_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_is_export_to_dpa_supported(const void *d) { return d ? E_NOT_SUPPORTED : E_INVALID; }
EXPORT doca_error_t doca_sync_event_cap_is_export_to_gpu_supported(const void *d) { return d ? E_NOT_SUPPORTED : E_INVALID; }
EXPORT doca_error_t doca_sync_event_cap_task_get_is_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_task_notify_set_is_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_task_notify_add_is_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_task_wait_eq_is_supported(const void *d) { return se_cap(d); }
EXPORT doca_error_t doca_sync_event_cap_task_wait_neq_is_supported(const void *d) { return se_cap(d); }

/* ---- tasks ---- */
static struct se_task *se_task_of(const struct doca_task *base)
{
	struct se_task *t;
	for (t = se_tasks; t != NULL && t->base != base; t = t->next)
		;
	return t;
}

static void se_on_done(void *vbase, union doca_data tud, union doca_data cud)
{
	struct doca_task *base = vbase;
	struct se_task *t = se_task_of(base);
	struct doca_pe *pe;
	uint64_t *v;
	if (t == NULL)
		return;
	if (base->status == E_OK) {
		v = se_value(t->se);
		if (v == NULL) {
			fake_task_fail(base, E_NOT_PERMITTED);
		} else if (t->type == SE_GET) {
			*t->ret = __atomic_load_n(v, __ATOMIC_SEQ_CST);
		} else if (t->type == SE_SET) {
			__atomic_store_n(v, t->val, __ATOMIC_SEQ_CST);
		} else if (t->type == SE_ADD) {
			*t->ret = __atomic_fetch_add(v, t->val, __ATOMIC_SEQ_CST);
		} else if (!se_holds(t->type, __atomic_load_n(v, __ATOMIC_SEQ_CST), t->val, t->mask)) {
			pe = base->ctx->pe; /* not yet: in flight again until a later progress */
			base->inflight = 1;
			base->ctx->inflight++;
			pe->queue[(pe->head + pe->count) % QUEUE] = base;
			pe->count++;
			return;
		}
	}
	(base->status == E_OK ? t->se->ok : t->se->err)[t->type](t, tud, cud);
}

static doca_error_t se_set_conf(struct fake_se *s, int type, task_cb_t ok, task_cb_t err, uint32_t num)
{
	int state = S_IDLE;
	if (find_se(s) == NULL || ok == NULL || err == NULL || num == 0)
		return E_INVALID;
	doca_ctx_get_state(s->ctx, &state);
	if (state != S_IDLE)
		return E_NOT_PERMITTED; /* doca_sync_event.h: "context not in idle state" */
	s->ok[type] = ok;
	s->err[type] = err;
	s->num[type] = num;
	s->ctx->task_cb = (doca_task_completion_cb_t)se_on_done;
	return E_OK;
}

static doca_error_t se_alloc(struct fake_se *s, int type, uint64_t val, uint64_t mask, uint64_t *ret,
			     union doca_data ud, struct se_task **out)
{
	struct se_task *t;
	struct doca_task *base;
	uint32_t used = 0;
	doca_error_t rc;
	if (find_se(s) == NULL || out == NULL)
		return E_INVALID;
	if (s->ok[type] == NULL || !se_running(s) || s->mode != MODE_CTX)
		return E_BAD_STATE;
	for (t = se_tasks; t != NULL; t = t->next)
		if (t->se == s && t->type == type && !t->base->freed)
			used++;
	if (used == s->num[type])
		return E_NO_MEMORY;
	if ((rc = fake_task_alloc_init(s->ctx, ud, &base)) != E_OK)
		return rc;
	t = se_task_of(base);
	if (t == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL)
			return E_NO_MEMORY;
		t->base = base;
		t->next = se_tasks;
		se_tasks = t;
	}
	t->se = s;
	t->type = type;
	t->val = val;
	t->mask = mask;
	t->ret = ret;
	*out = t;
	return E_OK;
}

EXPORT doca_error_t doca_sync_event_task_get_set_conf(struct fake_se *s, task_cb_t ok, task_cb_t err, uint32_t n)
{ return se_set_conf(s, SE_GET, ok, err, n); }
EXPORT doca_error_t doca_sync_event_task_get_alloc_init(struct fake_se *s, uint64_t *ret, union doca_data ud,
							 struct se_task **t)
{ return ret == NULL ? E_INVALID : se_alloc(s, SE_GET, 0, 0, ret, ud, t); }
EXPORT struct doca_task *doca_sync_event_task_get_as_doca_task(struct se_task *t) { return t->base; }
EXPORT void doca_sync_event_task_get_set_ret_val_ptr(struct se_task *t, uint64_t *ret) { t->ret = ret; }
EXPORT uint64_t *doca_sync_event_task_get_get_ret_val_ptr(const struct se_task *t) { return t->ret; }

EXPORT doca_error_t doca_sync_event_task_notify_set_set_conf(struct fake_se *s, task_cb_t ok, task_cb_t err, uint32_t n)
{ return se_set_conf(s, SE_SET, ok, err, n); }
EXPORT doca_error_t doca_sync_event_task_notify_set_alloc_init(struct fake_se *s, uint64_t val, union doca_data ud,
								struct se_task **t)
{ return se_alloc(s, SE_SET, val, 0, NULL, ud, t); }
EXPORT struct doca_task *doca_sync_event_task_notify_set_as_doca_task(struct se_task *t) { return t->base; }
EXPORT void doca_sync_event_task_notify_set_set_set_val(struct se_task *t, uint64_t v) { t->val = v; }
EXPORT uint64_t doca_sync_event_task_notify_set_get_set_val(const struct se_task *t) { return t->val; }

EXPORT doca_error_t doca_sync_event_task_notify_add_set_conf(struct fake_se *s, task_cb_t ok, task_cb_t err, uint32_t n)
{ return se_set_conf(s, SE_ADD, ok, err, n); }
EXPORT doca_error_t doca_sync_event_task_notify_add_alloc_init(struct fake_se *s, uint64_t val, uint64_t *fetched,
								union doca_data ud, struct se_task **t)
{ return fetched == NULL ? E_INVALID : se_alloc(s, SE_ADD, val, 0, fetched, ud, t); }
EXPORT struct doca_task *doca_sync_event_task_notify_add_as_doca_task(struct se_task *t) { return t->base; }
EXPORT void doca_sync_event_task_notify_add_set_inc_val(struct se_task *t, uint64_t v) { t->val = v; }
EXPORT uint64_t doca_sync_event_task_notify_add_get_inc_val(const struct se_task *t) { return t->val; }
EXPORT void doca_sync_event_task_notify_add_set_fetched_val_ptr(struct se_task *t, uint64_t *p) { t->ret = p; }
EXPORT uint64_t *doca_sync_event_task_notify_add_get_fetched_val_ptr(const struct se_task *t) { return t->ret; }

EXPORT doca_error_t doca_sync_event_task_wait_eq_set_conf(struct fake_se *s, task_cb_t ok, task_cb_t err, uint32_t n)
{ return se_set_conf(s, SE_WAIT_EQ, ok, err, n); }
EXPORT doca_error_t doca_sync_event_task_wait_eq_alloc_init(struct fake_se *s, uint64_t val, uint64_t mask,
							     union doca_data ud, struct se_task **t)
{ return se_alloc(s, SE_WAIT_EQ, val, mask, NULL, ud, t); }
EXPORT struct doca_task *doca_sync_event_task_wait_eq_as_doca_task(struct se_task *t) { return t->base; }
EXPORT void doca_sync_event_task_wait_eq_set_wait_val(struct se_task *t, uint64_t v) { t->val = v; }
EXPORT uint64_t doca_sync_event_task_wait_eq_get_wait_val(const struct se_task *t) { return t->val; }
EXPORT void doca_sync_event_task_wait_eq_set_mask(struct se_task *t, uint64_t m) { t->mask = m; }
EXPORT uint64_t doca_sync_event_task_wait_eq_get_mask(const struct se_task *t) { return t->mask; }

EXPORT doca_error_t doca_sync_event_task_wait_neq_set_conf(struct fake_se *s, task_cb_t ok, task_cb_t err, uint32_t n)
{ return se_set_conf(s, SE_WAIT_NEQ, ok, err, n); }
EXPORT doca_error_t doca_sync_event_task_wait_neq_alloc_init(struct fake_se *s, uint64_t val, uint64_t mask,
							      union doca_data ud, struct se_task **t)
{ return se_alloc(s, SE_WAIT_NEQ, val, mask, NULL, ud, t); }
EXPORT struct doca_task *doca_sync_event_task_wait_neq_as_doca_task(struct se_task *t) { return t->base; }
EXPORT void doca_sync_event_task_wait_neq_set_wait_val(struct se_task *t, uint64_t v) { t->val = v; }
EXPORT uint64_t doca_sync_event_task_wait_neq_get_wait_val(const struct se_task *t) { return t->val; }
EXPORT void doca_sync_event_task_wait_neq_set_mask(struct se_task *t, uint64_t m) { t->mask = m; }
EXPORT uint64_t doca_sync_event_task_wait_neq_get_mask(const struct se_task *t) { return t->mask; }

/* For the fake libdoca_rdma's remote sync-event tasks (attached by fakelib/rdma.py): the value a remote
 * net handle reaches, NULL once its exporter revoked the export. */
EXPORT uint64_t *fake_sync_event_remote_value(const struct fake_se_rn *rn)
{
	struct fake_se *src = rn ? se_by_id(rn->id, 2) : NULL;
	return src ? &src->value : NULL;
}
