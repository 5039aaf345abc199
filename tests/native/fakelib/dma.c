/* A fake libdoca_dma: a memcpy task really copies (see engine.h). */

#include "engine.h"

/* DOCA's memcpy rules: both buffers reachable by the engine's device and the destination
 * writable (NOT_PERMITTED),
 * and room after the destination's data for the source's (INVALID_VALUE). The copy
 * appends to the destination's data. */
/* LOCAL_READ_WRITE on a local map; PCI_READ_WRITE on one imported from another device. */
static int writable(const struct doca_buf *b)
{
	return b->mmap == NULL || (b->mmap->perms & (b->mmap->from_export ? 32u : 1u)) != 0;
}

/* try_submit: both buffers given, and a source with data to copy. */
static doca_error_t check(const struct etask *t)
{
	return t->src == NULL || t->dst == NULL || t->src->data_len == 0 ? E_INVALID : E_OK;
}

static doca_error_t work(struct etask *t)
{
	size_t room;
	if (t->src == NULL || t->dst == NULL)
		return E_INVALID;
	if (!reachable(t->e, t->src) || !reachable(t->e, t->dst) || !writable(t->dst))
		return E_NOT_PERMITTED;
	room = t->dst->len - ((char *)t->dst->data - (char *)t->dst->head) - t->dst->data_len;
	if (room < t->src->data_len)
		return E_INVALID;
	memcpy((char *)t->dst->data + t->dst->data_len, t->src->data, t->src->data_len);
	t->dst->data_len += t->src->data_len;
	return E_OK;
}

EXPORT doca_error_t doca_dma_create(void *dev, struct engine **out) { return engine_create(dev, out); }
EXPORT doca_error_t doca_dma_destroy(struct engine *e) { return engine_destroy(e); }
EXPORT struct doca_ctx *doca_dma_as_ctx(struct engine *e) { return engine_as_ctx(e); }
EXPORT doca_error_t doca_dma_cap_task_memcpy_is_supported(const void *devinfo)
{ return devinfo ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_dma_cap_get_max_num_tasks(struct engine *e, uint32_t *n)
{ if (!e || !n) return E_INVALID; *n = MAX_NUM_TASKS; return E_OK; }
EXPORT doca_error_t doca_dma_cap_task_memcpy_get_max_buf_list_len(const void *devinfo, uint32_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_LIST_LEN; return E_OK; }
EXPORT doca_error_t doca_dma_cap_task_memcpy_get_max_buf_size(const void *devinfo, uint64_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_SIZE; return E_OK; }
EXPORT doca_error_t doca_dma_task_memcpy_set_conf(struct engine *e, task_cb_t ok, task_cb_t err, uint32_t num)
{ return engine_set_conf(e, 0, ok, err, num); }
EXPORT doca_error_t doca_dma_task_memcpy_alloc_init(struct engine *e, const struct doca_buf *src,
						     struct doca_buf *dst, union doca_data ud, struct etask **t)
{ return engine_alloc(e, 0, NULL, src, dst, ud, t); }
/* DOCA 3.3: a ctx setting, so only while idle. The flag arrives as one byte (uint8_t). */
EXPORT doca_error_t doca_dma_set_ordered_completions(struct engine *e, uint8_t ordered)
{
	if (!e)
		return E_INVALID;
	if (engine_state(e->ctx) != S_IDLE)
		return E_BAD_STATE;
	e->ordered = ordered;
	return E_OK;
}
/* Its getter; the header at hand has none to copy, so the setter's shape: the flag through a uint8_t out-pointer. */
EXPORT doca_error_t doca_dma_get_ordered_completions(const struct engine *e, uint8_t *ordered)
{
	if (!e || !ordered)
		return E_INVALID;
	*ordered = e->ordered;
	return E_OK;
}
EXPORT uint8_t fake_dma_ordered(const struct engine *e) { return e->ordered; }
EXPORT struct doca_task *doca_dma_task_memcpy_as_task(struct etask *t) { return task_base(t); }
EXPORT void doca_dma_task_memcpy_set_src(struct etask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_dma_task_memcpy_get_src(const struct etask *t) { return t->src; }
EXPORT void doca_dma_task_memcpy_set_dst(struct etask *t, struct doca_buf *b) { t->dst = b; }
EXPORT struct doca_buf *doca_dma_task_memcpy_get_dst(const struct etask *t) { return t->dst; }
