/* The fake libdoca_rdma's remote sync-event tasks (get, notify_set, notify_add), included by rdma.c.
 *
 * The remote event is a doca_sync_event_remote_net of the fake common, whose value the common hands over
 * (fake_sync_event_remote_value, attached by fakelib/rdma.py): a task really reads, sets or adds to the
 * exporting event's value when doca_pe_progress completes it, and fails with NOT_PERMITTED once the
 * exporter revoked the export, INVALID_VALUE for a source that is not 8 bytes or a destination without
 * room. There is no peer: the responder's permissions are not modelled.
 */

static uint64_t *(*se_remote_value)(const void *);
static void (*se_task_fail)(struct doca_task *, doca_error_t);

EXPORT void fake_rdma_attach_sync_event(void *value_of, void *fail)
{
	se_remote_value = value_of;
	se_task_fail = fail;
}

static size_t se_room(const struct doca_buf *b)
{
	return b->len - (size_t)((const char *)b->data - (const char *)b->head) - b->data_len;
}

static void se_task_done(struct rtask *t, union doca_data task_ud, union doca_data ctx_ud)
{
	uint64_t *v = se_remote_value(t->se), old;
	doca_error_t rc = E_OK;
	if (v == NULL) {
		rc = E_NOT_PERMITTED;
	} else if (t->type == T_SE_SET) {
		if (t->src == NULL || t->src->data_len != 8)
			rc = E_INVALID;
		else
			__atomic_store_n(v, *(const uint64_t *)t->src->data, __ATOMIC_SEQ_CST);
	} else if (t->dst == NULL || se_room(t->dst) < 8) {
		rc = E_INVALID;
	} else {
		old = t->type == T_SE_GET ? __atomic_load_n(v, __ATOMIC_SEQ_CST) : __atomic_fetch_add(v, t->add, __ATOMIC_SEQ_CST);
		memcpy((char *)t->dst->data + t->dst->data_len, &old, 8);
		t->dst->data_len += 8;
		t->result_len = t->type == T_SE_GET ? 8 : 0;
	}
	if (rc != E_OK) {
		se_task_fail(t->base, rc);
		t->r->err[t->type](t, task_ud, ctx_ud);
		return;
	}
	t->r->ok[t->type](t, task_ud, ctx_ud);
}

static doca_error_t se_alloc(struct rdma *r, int type, struct rconn *c, const void *se, const struct doca_buf *src,
			     struct doca_buf *dst, uint64_t add, union doca_data ud, struct rtask **out)
{
	doca_error_t rc;
	if (se == NULL)
		return E_INVALID;
	rc = alloc(r, type, c, src, dst, 0, ud, out);
	if (rc == E_OK) {
		(*out)->se = se;
		(*out)->add = add;
	}
	return rc;
}

EXPORT doca_error_t doca_rdma_cap_task_remote_net_sync_event_get_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_get_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n)
{ return set_conf(r, T_SE_GET, ok, err, n); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n)
{ return set_conf(r, T_SE_SET, ok, err, n); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n)
{ return set_conf(r, T_SE_ADD, ok, err, n); }
#if CONN_API
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_get_allocate_init(struct rdma *r, struct rconn *c, const void *se,
									    struct doca_buf *dst, union doca_data ud, struct rtask **t)
{ return se_alloc(r, T_SE_GET, c, se, NULL, dst, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(struct rdma *r, struct rconn *c, const void *se,
										   const struct doca_buf *src, union doca_data ud,
										   struct rtask **t)
{ return se_alloc(r, T_SE_SET, c, se, src, NULL, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(struct rdma *r, struct rconn *c, const void *se,
										   struct doca_buf *res, uint64_t add, union doca_data ud,
										   struct rtask **t)
{ return se_alloc(r, T_SE_ADD, c, se, NULL, res, add, ud, t); }
EXPORT void doca_rdma_task_remote_net_sync_event_get_set_rdma_connection(struct rtask *t, struct rconn *c) { t->conn = c; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection(struct rtask *t, struct rconn *c) { t->conn = c; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection(struct rtask *t, struct rconn *c) { t->conn = c; }
#else
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_get_allocate_init(struct rdma *r, const void *se, struct doca_buf *dst,
									    union doca_data ud, struct rtask **t)
{ return se_alloc(r, T_SE_GET, NULL, se, NULL, dst, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(struct rdma *r, const void *se,
										   const struct doca_buf *src, union doca_data ud,
										   struct rtask **t)
{ return se_alloc(r, T_SE_SET, NULL, se, src, NULL, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(struct rdma *r, const void *se,
										   struct doca_buf *res, uint64_t add, union doca_data ud,
										   struct rtask **t)
{ return se_alloc(r, T_SE_ADD, NULL, se, NULL, res, add, ud, t); }
#endif
EXPORT struct doca_task *doca_rdma_task_remote_net_sync_event_get_as_task(struct rtask *t) { return t->base; }
EXPORT struct doca_task *doca_rdma_task_remote_net_sync_event_notify_set_as_task(struct rtask *t) { return t->base; }
EXPORT struct doca_task *doca_rdma_task_remote_net_sync_event_notify_add_as_task(struct rtask *t) { return t->base; }
EXPORT void doca_rdma_task_remote_net_sync_event_get_set_sync_event(struct rtask *t, const void *se) { t->se = se; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event(struct rtask *t, const void *se) { t->se = se; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event(struct rtask *t, const void *se) { t->se = se; }
EXPORT void doca_rdma_task_remote_net_sync_event_get_set_dst_buf(struct rtask *t, struct doca_buf *b) { t->dst = b; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf(struct rtask *t, const struct doca_buf *b) { t->src = b; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf(struct rtask *t, struct doca_buf *b) { t->dst = b; }
EXPORT uint32_t doca_rdma_task_remote_net_sync_event_get_get_result_len(const struct rtask *t) { return t->result_len; }
EXPORT void doca_rdma_task_remote_net_sync_event_notify_add_set_add_data(struct rtask *t, uint64_t add) { t->add = add; }
EXPORT uint64_t doca_rdma_task_remote_net_sync_event_notify_add_get_add_data(const struct rtask *t) { return t->add; }
