/* A fake libdoca_erasure_coding: matrices are counted, tasks do no work (see engine.h). */

#include "engine.h"

static doca_error_t work(struct etask *t) { (void)t; return E_OK; }
static doca_error_t check(const struct etask *t) { (void)t; return E_OK; }

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
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_SIZE; return E_OK; }
EXPORT doca_error_t doca_ec_cap_get_max_buf_list_len(const void *devinfo, uint32_t *n)
{ if (!devinfo || !n) return E_INVALID; *n = MAX_BUF_LIST_LEN; return E_OK; }
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

/* One task kind: the names of its matrix, source and destination differ per kind. */
#define EC_TASK(K, IDX, M, S, D, DG, SUPPORTED)                                                                    \
EXPORT doca_error_t doca_ec_cap_task_##K##_is_supported(const void *devinfo)                                       \
{ return devinfo ? SUPPORTED : E_INVALID; }                                                                        \
EXPORT doca_error_t doca_ec_task_##K##_set_conf(struct engine *e, task_cb_t ok, task_cb_t err, uint32_t num)       \
{ return engine_set_conf(e, IDX, ok, err, num); }                                                                  \
EXPORT doca_error_t doca_ec_task_##K##_allocate_init(struct engine *e, const void *mx, const struct doca_buf *src, \
                         struct doca_buf *dst, union doca_data ud, struct etask **t)                                                 \
{ if (mx == NULL) return E_INVALID; return engine_alloc(e, IDX, mx, src, dst, ud, t); }                            \
EXPORT struct doca_task *doca_ec_task_##K##_as_task(struct etask *t) { return task_base(t); }                      \
EXPORT void doca_ec_task_##K##_set_##M(struct etask *t, const void *mx) { t->matrix = mx; }                        \
EXPORT const void *doca_ec_task_##K##_get_##M(const struct etask *t) { return t->matrix; }                         \
EXPORT void doca_ec_task_##K##_set_##S(struct etask *t, const struct doca_buf *b) { t->src = b; }                  \
EXPORT const struct doca_buf *doca_ec_task_##K##_get_##S(const struct etask *t) { return t->src; }                 \
EXPORT void doca_ec_task_##K##_set_##D(struct etask *t, struct doca_buf *b) { t->dst = b; }                        \
EXPORT struct doca_buf *doca_ec_task_##K##_get_##DG(const struct etask *t) { return t->dst; }

/* kind, index, matrix, src, dst setter, dst getter; galois_mul reports NOT_SUPPORTED */
EC_TASK(create, 0, coding_matrix, original_data_blocks, rdnc_blocks, rdnc_blocks, E_OK)
EC_TASK(recover, 1, recover_matrix, available_blocks, recovered_data_blocks, recovered_data, E_OK)
EC_TASK(update, 2, update_matrix, original_updated_and_rdnc_blocks, updated_rdnc_blocks, updated_rdnc_blocks, E_OK)
EC_TASK(galois_mul, 3, coding_matrix, src_buf, dst_buf, dst_buf, E_NOT_SUPPORTED)
