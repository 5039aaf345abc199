/* A fake libdoca_compress: tasks do no work and report fixed checksums (see engine.h).
 *
 * FAKE_LZ4_SPLIT (params.h) picks the LZ4 API: 1 builds DOCA 3.x's
 * decompress_lz4_stream / decompress_lz4_block tasks, 0 DOCA 2.6's single decompress_lz4.
 */

#include "engine.h"

static doca_error_t work(struct etask *t) { (void)t; return E_OK; }
static doca_error_t check(const struct etask *t) { (void)t; return E_OK; }

EXPORT doca_error_t doca_compress_create(void *dev, struct engine **out) { return engine_create(dev, out); }
EXPORT doca_error_t doca_compress_destroy(struct engine *e) { return engine_destroy(e); }
EXPORT struct doca_ctx *doca_compress_as_ctx(struct engine *e) { return engine_as_ctx(e); }
EXPORT doca_error_t doca_compress_cap_get_max_num_tasks(struct engine *e, uint32_t *n)
{ if (!e || !n) return E_INVALID; *n = MAX_NUM_TASKS; return E_OK; }

/* Everything of one task kind but its alloc_init (whose parameters differ per kind).
 * CS2 names the second checksum getter (adler or xxh), CS2V its value; the max buf
 * size differs per kind (+ IDX) so a binding that mixes kinds up is caught. */
#define COMPRESS_TASK(K, IDX, CS2, CS2V)                                                                  \
EXPORT doca_error_t doca_compress_cap_task_##K##_is_supported(const void *devinfo)                         \
{ return devinfo ? E_OK : E_INVALID; }                                                                     \
EXPORT doca_error_t doca_compress_cap_task_##K##_get_max_buf_size(const void *devinfo, uint64_t *n)        \
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_SIZE + IDX; return E_OK; }                            \
EXPORT doca_error_t doca_compress_cap_task_##K##_get_max_buf_list_len(const void *devinfo, uint32_t *n)    \
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_LIST_LEN; return E_OK; }                              \
EXPORT doca_error_t doca_compress_task_##K##_set_conf(struct engine *e, task_cb_t ok, task_cb_t err,       \
						      uint32_t num)                                        \
{ return engine_set_conf(e, IDX, ok, err, num); }                                                          \
EXPORT struct doca_task *doca_compress_task_##K##_as_task(struct etask *t) { return task_base(t); }        \
EXPORT void doca_compress_task_##K##_set_src(struct etask *t, const struct doca_buf *b) { t->src = b; }    \
EXPORT const struct doca_buf *doca_compress_task_##K##_get_src(const struct etask *t) { return t->src; }   \
EXPORT void doca_compress_task_##K##_set_dst(struct etask *t, struct doca_buf *b) { t->dst = b; }          \
EXPORT struct doca_buf *doca_compress_task_##K##_get_dst(const struct etask *t) { return t->dst; }         \
EXPORT uint32_t doca_compress_task_##K##_get_crc_cs(const struct etask *t) { (void)t; return CRC; }        \
EXPORT uint32_t doca_compress_task_##K##_get_##CS2##_cs(const struct etask *t) { (void)t; return CS2V; }

/* The plain alloc_init: source, destination, user data, task. */
#define COMPRESS_ALLOC(K, IDX)                                                                            \
EXPORT doca_error_t doca_compress_task_##K##_alloc_init(struct engine *e, const struct doca_buf *src,      \
							struct doca_buf *dst, union doca_data ud,          \
							struct etask **t)                                  \
{ return engine_alloc(e, IDX, NULL, src, dst, ud, t); }

COMPRESS_TASK(compress_deflate, 0, adler, ADLER)
COMPRESS_ALLOC(compress_deflate, 0)
COMPRESS_TASK(decompress_deflate, 1, adler, ADLER)
COMPRESS_ALLOC(decompress_deflate, 1)

#if FAKE_LZ4_SPLIT
COMPRESS_TASK(decompress_lz4_stream, 2, xxh, XXH)
COMPRESS_TASK(decompress_lz4_block, 3, xxh, XXH)
COMPRESS_ALLOC(decompress_lz4_block, 3)

/* The stream task takes its two frame flags before the buffers. */
EXPORT doca_error_t doca_compress_task_decompress_lz4_stream_alloc_init(struct engine *e, uint8_t has_block_checksum,
									 uint8_t are_blocks_independent,
									 const struct doca_buf *src,
									 struct doca_buf *dst, union doca_data ud,
									 struct etask **t)
{
	doca_error_t rc = engine_alloc(e, 2, NULL, src, dst, ud, t);
	if (rc == E_OK) {
		(*t)->flag1 = has_block_checksum;
		(*t)->flag2 = are_blocks_independent;
	}
	return rc;
}

EXPORT void doca_compress_task_decompress_lz4_stream_set_has_block_checksum(struct etask *t, uint8_t v)
{ t->flag1 = v; }
EXPORT uint8_t doca_compress_task_decompress_lz4_stream_get_has_block_checksum(const struct etask *t)
{ return t->flag1; }
EXPORT void doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(struct etask *t, uint8_t v)
{ t->flag2 = v; }
EXPORT uint8_t doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(const struct etask *t)
{ return t->flag2; }
#else
COMPRESS_TASK(decompress_lz4, 2, adler, ADLER)
COMPRESS_ALLOC(decompress_lz4, 2)
#endif
