/* The fake libdoca_common's doca_mmap_advise (doca_mmap_advise.h), included by common.c.
 *
 * The ctx is one of the common's; its task callback is this file's trampoline, which checks the
 * task's buffer when doca_pe_progress completes it: a buffer of a started mmap that has the ctx's
 * device (NOT_PERMITTED otherwise), or INVALID_VALUE (no buffer, a list, a bare descriptor, too big).
 * The capability is the DPU device's only (devs[0]), as DOCA Mmap Advise runs on the BlueField.
 * params.h: MA_MAX_BUF_SIZE.
 */

struct fake_ma {
	struct fake_ma *next_live;
	struct doca_dev *dev;
	struct doca_ctx *ctx;
	task_cb_t ok, err;
	uint32_t num;
};
struct ma_task {
	struct doca_task *base;
	struct fake_ma *ma;
	struct doca_buf *buf;
	struct ma_task *next;
};

static struct fake_ma *live_mas;
static struct ma_task *ma_tasks;

static struct fake_ma *find_ma(const void *p)
{
	struct fake_ma *m;
	for (m = live_mas; m != NULL; m = m->next_live)
		if ((const void *)m == p)
			return m;
	return NULL;
}

EXPORT doca_error_t doca_mmap_advise_create(struct doca_dev *dev, struct fake_ma **out)
{
	struct fake_ma *m;
	if (dev == NULL || out == NULL)
		return E_INVALID;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return E_NO_MEMORY;
	if (fake_ctx_create(&m->ctx) != E_OK) {
		free(m);
		return E_NO_MEMORY;
	}
	m->dev = dev;
	m->next_live = live_mas;
	live_mas = m;
	*out = m;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_advise_destroy(struct fake_ma *m)
{
	struct fake_ma **link;
	struct ma_task **tl = &ma_tasks, *t;
	int state = S_IDLE;
	if (find_ma(m) == NULL)
		return E_INVALID;
	doca_ctx_get_state(m->ctx, &state);
	if (state != S_IDLE)
		return E_BAD_STATE;
	while ((t = *tl) != NULL)
		if (t->ma == m) {
			*tl = t->next;
			free(t);
		} else {
			tl = &t->next;
		}
	for (link = &live_mas; *link != m; link = &(*link)->next_live)
		;
	*link = m->next_live;
	fake_ctx_destroy(m->ctx);
	free(m);
	return E_OK;
}

EXPORT struct doca_ctx *doca_mmap_advise_as_ctx(struct fake_ma *m) { return find_ma(m) ? m->ctx : NULL; }

EXPORT doca_error_t doca_mmap_advise_cap_task_cache_invalidate_is_supported(const struct doca_devinfo *d)
{
	if (d == NULL)
		return E_INVALID;
	return d == &devs[0] ? E_OK : E_NOT_SUPPORTED;
}

EXPORT doca_error_t doca_mmap_advise_task_cache_invalidate_get_max_buf_size(const struct doca_devinfo *d, uint64_t *n)
{
	if (d == NULL || n == NULL)
		return E_INVALID;
	*n = MA_MAX_BUF_SIZE;
	return E_OK;
}

static struct ma_task *ma_task_of(const struct doca_task *base)
{
	struct ma_task *t;
	for (t = ma_tasks; t != NULL && t->base != base; t = t->next)
		;
	return t;
}

static doca_error_t ma_check(const struct ma_task *t)
{
	const struct doca_buf *b = t->buf;
	const struct fake_mmap *m;
	uint32_t i;
	if (b == NULL || b->mmap == NULL || b->next != NULL || b->len > MA_MAX_BUF_SIZE)
		return E_INVALID;
	m = b->mmap;
	if (!m->started && !m->from_export)
		return E_BAD_STATE;
	for (i = 0; i < m->ndevs; i++)
		if (m->devs[i] == t->ma->dev)
			return E_OK;
	return E_NOT_PERMITTED;
}

static void ma_on_done(void *vbase, union doca_data tud, union doca_data cud)
{
	struct doca_task *base = vbase;
	struct ma_task *t = ma_task_of(base);
	doca_error_t rc;
	if (t == NULL)
		return;
	if (base->status == E_OK && (rc = ma_check(t)) != E_OK)
		fake_task_fail(base, rc);
	(base->status == E_OK ? t->ma->ok : t->ma->err)(t, tud, cud);
}

EXPORT doca_error_t doca_mmap_advise_task_invalidate_cache_set_conf(struct fake_ma *m, task_cb_t ok, task_cb_t err,
								   uint32_t num)
{
	int state = S_IDLE;
	if (find_ma(m) == NULL || ok == NULL || err == NULL || num == 0)
		return E_INVALID;
	doca_ctx_get_state(m->ctx, &state);
	if (state != S_IDLE)
		return E_NOT_PERMITTED; /* doca_mmap_advise.h: "context not in idle state" */
	m->ok = ok;
	m->err = err;
	m->num = num;
	m->ctx->task_cb = (doca_task_completion_cb_t)ma_on_done;
	return E_OK;
}

EXPORT doca_error_t doca_mmap_advise_task_invalidate_cache_alloc_init(struct fake_ma *m, struct doca_buf *buf,
								     union doca_data ud, struct ma_task **out)
{
	struct ma_task *t;
	struct doca_task *base;
	uint32_t used = 0;
	int state = S_IDLE;
	doca_error_t rc;
	if (find_ma(m) == NULL || out == NULL)
		return E_INVALID;
	doca_ctx_get_state(m->ctx, &state);
	if (m->ok == NULL || state != S_RUNNING)
		return E_BAD_STATE;
	for (t = ma_tasks; t != NULL; t = t->next)
		if (t->ma == m && !t->base->freed)
			used++;
	if (used == m->num)
		return E_NO_MEMORY;
	if ((rc = fake_task_alloc_init(m->ctx, ud, &base)) != E_OK)
		return rc;
	t = ma_task_of(base);
	if (t == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL)
			return E_NO_MEMORY;
		t->base = base;
		t->next = ma_tasks;
		ma_tasks = t;
	}
	t->ma = m;
	t->buf = buf;
	*out = t;
	return E_OK;
}

EXPORT struct doca_task *doca_mmap_advise_task_invalidate_cache_as_doca_task(struct ma_task *t) { return t->base; }
EXPORT void doca_mmap_advise_task_invalidate_cache_set_buf(struct ma_task *t, struct doca_buf *b) { t->buf = b; }
EXPORT struct doca_buf *doca_mmap_advise_task_invalidate_cache_get_buf(const struct ma_task *t) { return t->buf; }
