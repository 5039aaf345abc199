/* The fake libdoca_common's doca_buf_pool (doca_buf_pool.h), included by common.c.
 *
 * Elements are fixed at start: element i lies at align_up(mmap addr) + i * align_up(size). A pool counts
 * its buffers through an embedded fake_inv (new_buf/release_buf), which calls pool_release when a buffer
 * returns so the element is free again. Errors follow the header: EMPTY, BAD_STATE, IN_USE, INITIALIZATION.
 */

enum { E_INITIALIZATION = 8, E_EMPTY = 25 };

struct fake_pool {
	struct fake_pool *next_live;
	struct fake_inv inv;   /* counts the buffers out (not on live_invs: no inventory call accepts it) */
	struct fake_mmap *mmap;
	size_t size, align;
	uintptr_t first;       /* the first element, fixed at start */
	uint64_t user_data;
	uint8_t *used;         /* one byte per element */
};
static struct fake_pool *live_pools;

static struct fake_pool *find_pool(const void *p)
{
	struct fake_pool *q;
	for (q = live_pools; q != NULL; q = q->next_live)
		if ((const void *)q == p)
			return q;
	return NULL;
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

static void pool_release(struct fake_pool *p, const struct doca_buf *b)
{
	p->used[((uintptr_t)b->head - p->first) / align_up(p->size, p->align)] = 0;
}

EXPORT doca_error_t doca_buf_pool_create(size_t num, size_t size, const void *mmap, struct fake_pool **out)
{
	struct fake_mmap *m = find_mmap(mmap);
	struct fake_pool *p;
	if (num == 0 || num > UINT32_MAX || size == 0 || m == NULL || !m->has_range || out == NULL)
		return E_INVALID;
	p = calloc(1, sizeof(*p));
	if (p == NULL || (p->used = calloc(num, 1)) == NULL) {
		free(p);
		return E_NO_MEMORY;
	}
	p->inv.num = p->inv.nfree = (uint32_t)num;
	p->inv.pool = p;
	p->mmap = m;
	p->size = size;
	p->align = 1;
	p->next_live = live_pools;
	live_pools = p;
	*out = p;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_destroy(struct fake_pool *p)
{
	struct fake_pool **link;
	if (find_pool(p) == NULL)
		return E_INVALID;
	if (p->inv.nfree != p->inv.num)
		return E_IN_USE;
	for (link = &live_pools; *link != p; link = &(*link)->next_live)
		;
	*link = p->next_live;
	free(p->used);
	free(p);
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_start(struct fake_pool *p)
{
	size_t need;
	if (find_pool(p) == NULL)
		return E_INVALID;
	if (p->inv.started || find_mmap(p->mmap) == NULL || !p->mmap->started)
		return E_BAD_STATE;
	p->first = align_up((uintptr_t)p->mmap->addr, p->align);
	need = p->first - (uintptr_t)p->mmap->addr + (p->inv.num - 1) * align_up(p->size, p->align) + p->size;
	if (need > p->mmap->len)
		return E_INITIALIZATION;
	p->inv.started = 1;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_stop(struct fake_pool *p)
{
	if (find_pool(p) == NULL)
		return E_INVALID;
	if (!p->inv.started)
		return E_BAD_STATE;
	if (p->inv.nfree != p->inv.num)
		return E_IN_USE;
	p->inv.started = 0;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_buf_alloc(struct fake_pool *p, struct doca_buf **out)
{
	uint32_t i;
	void *head;
	if (find_pool(p) == NULL || out == NULL)
		return E_INVALID;
	if (!p->inv.started)
		return E_BAD_STATE;
	if (p->inv.nfree == 0)
		return E_EMPTY;
	for (i = 0; p->used[i]; i++)
		;
	head = (void *)(p->first + i * align_up(p->size, p->align));
	*out = new_buf(&p->inv, p->mmap, head, p->size, head, 0);
	if (*out == NULL)
		return E_NO_MEMORY;
	p->used[i] = 1;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_set_user_data(struct fake_pool *p, union doca_data ud)
{
	if (find_pool(p) == NULL)
		return E_INVALID;
	if (p->inv.started)
		return E_BAD_STATE;
	p->user_data = ud.u64;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_set_element_alignment(struct fake_pool *p, size_t align)
{
	if (find_pool(p) == NULL || align == 0 || (align & (align - 1)))
		return E_INVALID;
	if (p->inv.started)
		return E_BAD_STATE;
	p->align = align;
	return E_OK;
}

EXPORT doca_error_t doca_buf_pool_get_num_elements(const struct fake_pool *p, uint32_t *n)
{ if (!find_pool(p) || !n) return E_INVALID; *n = p->inv.num; return E_OK; }
EXPORT doca_error_t doca_buf_pool_get_num_free_elements(const struct fake_pool *p, uint32_t *n)
{ if (!find_pool(p) || !n) return E_INVALID; *n = p->inv.nfree; return E_OK; }
EXPORT doca_error_t doca_buf_pool_get_user_data(const struct fake_pool *p, union doca_data *ud)
{ if (!find_pool(p) || !ud) return E_INVALID; ud->u64 = p->user_data; return E_OK; }
EXPORT doca_error_t doca_buf_pool_get_element_alignment(const struct fake_pool *p, size_t *align)
{ if (!find_pool(p) || !align) return E_INVALID; *align = p->align; return E_OK; }
