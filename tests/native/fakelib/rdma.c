/* A fake libdoca_rdma, built by tests/native/fakelib/rdma.py.
 *
 * It exports, with the real ABI, what the native object layer's tests call:
 * create/destroy/as_ctx, a few property setters and getters, capabilities, export and
 * connect, the RDMA-CM calls (address objects, listen, accept/reject,
 * connect_to_addr, disconnect), the connection state callbacks, and the receive, send
 * and send-with-immediate tasks. CONN_API=1 (params.h) builds the DOCA 3.x ABI
 * (doca_rdma_export returns a doca_rdma_connection, doca_rdma_connect and the send
 * *_allocate_init take one, the connection functions exist); CONN_API=0 builds the
 * DOCA 2.6 ABI (no connection objects or callbacks, plus a doca_rdma_srq_create). A
 * wrong binding passes misaligned arguments, which the fake notices (it checks
 * pointers and records what it was given).
 *
 * It is not an emulator. Connection events are *not* called from inside the API call
 * that causes them: the fake allocates an internal doca_task on the ctx and submits
 * it, so the fake common's doca_pe_progress delivers it here, and the registered
 * connection callback runs from C inside doca_pe_progress, as DOCA does. A receive
 * task completes with fixed results (RECV_DATA appended to its destination, opcode
 * RECV_SEND_WITH_IMM, immediate RECV_IMM, the first connection); a send records its
 * source bytes (fake_rdma_last_sent).
 */

#include "fake.h"


typedef void (*conn_request_cb_t)(void *, union doca_data);
typedef void (*conn_cb_t)(void *, union doca_data, union doca_data);

enum { T_RECEIVE, T_SEND, T_SEND_IMM, T_SE_GET, T_SE_SET, T_SE_ADD, NTYPES, T_EVENT = 100 };
enum { EV_REQUEST, EV_ESTABLISHED, EV_FAILURE, EV_DISCONNECTION };
enum { C_NEW, C_REQUESTED, C_ESTABLISHED, C_CLOSED };
#define MAX_CONNS 16

static doca_error_t (*ctx_create)(struct doca_ctx **);
static void (*ctx_destroy)(struct doca_ctx *);
static void (*ctx_set_task_cb)(struct doca_ctx *, task_cb_t);
static doca_error_t (*task_alloc)(struct doca_ctx *, union doca_data, struct doca_task **);
static doca_error_t (*task_submit)(struct doca_task *);
static void (*task_free)(struct doca_task *);

EXPORT void fake_rdma_attach(void *create, void *destroy, void *set_cb, void *alloc, void *submit, void *free_)
{
	ctx_create = create;
	ctx_destroy = destroy;
	ctx_set_task_cb = set_cb;
	task_alloc = alloc;
	task_submit = submit;
	task_free = free_;
}

struct rdma;
struct raddr { int type; char text[64]; uint16_t port; };
struct rconn { struct rdma *r; uint32_t id; union doca_data ud; int state; struct raddr *addr; };

struct rdma {
	struct doca_ctx *ctx;
	task_cb_t ok[NTYPES], err[NTYPES];
	uint32_t num[NTYPES];
	uint32_t perms, send_queue, recv_list_len;
	uint8_t grh, rnr;
	int mtu;
	uint16_t max_conns, listen_port;
	conn_request_cb_t req_cb;
	conn_cb_t est_cb, fail_cb, disc_cb;
	struct rconn *conns[MAX_CONNS];
	uint32_t nconns;
	char blob[32];
	char peer[64];
	size_t peer_len;
};

struct rtask {
	struct doca_task *base;
	struct rdma *r;
	int type, ev;
	struct rconn *conn;
	const struct doca_buf *src;
	struct doca_buf *dst;
	uint32_t imm, result_len, result_imm;
	int opcode;
	struct rconn *result_conn;
	const void *se; /* the remote sync event of a T_SE_* task (rdma_sync_event.c) */
	uint64_t add;
	struct rtask *next;
};
static void se_task_done(struct rtask *t, union doca_data task_ud, union doca_data ctx_ud);

/* Newest first: a freed doca_task's address may be reused by a later task. */
static struct rtask *all_tasks;
static int live_rdmas;
static char last_sent[64];
static size_t last_sent_len;

EXPORT int fake_rdma_live(void) { return live_rdmas; }
EXPORT size_t fake_rdma_last_sent(char *out) { memcpy(out, last_sent, last_sent_len); return last_sent_len; }
EXPORT size_t fake_rdma_peer(const struct rdma *r, char *out) { memcpy(out, r->peer, r->peer_len); return r->peer_len; }

static void on_done(void *base, union doca_data task_ud, union doca_data ctx_ud)
{
	struct rtask *t, **link;
	for (link = &all_tasks; (t = *link) != NULL; link = &t->next)
		if ((void *)t->base == base)
			break;
	if (t == NULL)
		return;
	if (t->type == T_EVENT) {
		struct rdma *r = t->r;
		struct rconn *c = t->conn;
		int ev = t->ev;
		*link = t->next;
		task_free(t->base);
		free(t);
		if (ev == EV_REQUEST && r->req_cb)
			r->req_cb(c, ctx_ud);
		else if (ev == EV_ESTABLISHED && r->est_cb)
			r->est_cb(c, c->ud, ctx_ud);
		else if (ev == EV_FAILURE && r->fail_cb)
			r->fail_cb(c, c->ud, ctx_ud);
		else if (ev == EV_DISCONNECTION && r->disc_cb)
			r->disc_cb(c, c->ud, ctx_ud);
		return;
	}
	if (t->type >= T_SE_GET && t->type <= T_SE_ADD) {
		se_task_done(t, task_ud, ctx_ud);
		return;
	}
	if (t->type == T_RECEIVE) {
		struct doca_buf *d = t->dst;
		if (d != NULL) {
			memcpy((char *)d->data + d->data_len, RECV_DATA, RECV_LEN);
			d->data_len += RECV_LEN;
		}
		t->result_len = RECV_LEN;
		t->opcode = 1; /* RECV_SEND_WITH_IMM */
		t->result_imm = RECV_IMM;
		t->result_conn = t->r->nconns ? t->r->conns[0] : NULL;
	} else if (t->src != NULL) {
		last_sent_len = t->src->data_len < sizeof(last_sent) ? t->src->data_len : sizeof(last_sent);
		memcpy(last_sent, t->src->data, last_sent_len);
	}
	t->r->ok[t->type](t, task_ud, ctx_ud);
}

static __attribute__((unused)) doca_error_t queue_event(struct rdma *r, struct rconn *c, int ev)
{
	struct rtask *t = calloc(1, sizeof(*t));
	union doca_data none = { .u64 = 0 };
	doca_error_t rc;
	if (t == NULL)
		return E_NO_MEMORY;
	rc = task_alloc(r->ctx, none, &t->base);
	if (rc == E_OK)
		rc = task_submit(t->base);
	if (rc != E_OK) {
		if (t->base)
			task_free(t->base);
		free(t);
		return rc;
	}
	t->r = r;
	t->type = T_EVENT;
	t->ev = ev;
	t->conn = c;
	t->next = all_tasks;
	all_tasks = t;
	return E_OK;
}

static __attribute__((unused)) struct rconn *new_conn(struct rdma *r, int state)
{
	struct rconn *c;
	if (r->nconns >= r->max_conns || r->nconns == MAX_CONNS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->r = r;
	c->id = r->nconns;
	c->state = state;
	r->conns[r->nconns++] = c;
	return c;
}

EXPORT doca_error_t doca_rdma_create(void *dev, struct rdma **out)
{
	struct rdma *r;
	if (dev == NULL || out == NULL || ctx_create == NULL)
		return E_INVALID;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return E_NO_MEMORY;
	if (ctx_create(&r->ctx) != E_OK) {
		free(r);
		return E_NO_MEMORY;
	}
	ctx_set_task_cb(r->ctx, on_done);
	r->perms = 1;
	r->send_queue = 1024;
	r->recv_list_len = 1;
	r->grh = 1;
	r->mtu = 3;
	r->max_conns = 1;
	r->rnr = 7;
	live_rdmas++;
	*out = r;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_destroy(struct rdma *r)
{
	uint32_t i;
	if (r == NULL)
		return E_INVALID;
	for (i = 0; i < r->nconns; i++)
		free(r->conns[i]);
	ctx_destroy(r->ctx);
	free(r);
	live_rdmas--;
	return E_OK;
}

EXPORT struct doca_ctx *doca_rdma_as_ctx(struct rdma *r) { return r ? r->ctx : NULL; }

/* ---- properties ---- */
EXPORT doca_error_t doca_rdma_set_permissions(struct rdma *r, uint32_t v) { if (!r) return E_INVALID; r->perms = v; return E_OK; }
EXPORT doca_error_t doca_rdma_get_permissions(struct rdma *r, uint32_t *v) { if (!r || !v) return E_INVALID; *v = r->perms; return E_OK; }
EXPORT doca_error_t doca_rdma_set_send_queue_size(struct rdma *r, uint32_t v)
{
	uint32_t p = 1;
	if (!r || v == 0 || v > MAX_QUEUE)
		return E_INVALID;
	while (p < v)
		p <<= 1;
	r->send_queue = p;
	return E_OK;
}
EXPORT doca_error_t doca_rdma_get_send_queue_size(const struct rdma *r, uint32_t *v) { if (!r || !v) return E_INVALID; *v = r->send_queue; return E_OK; }
EXPORT doca_error_t doca_rdma_set_grh_enabled(struct rdma *r, uint8_t v) { if (!r) return E_INVALID; r->grh = v; return E_OK; }
EXPORT doca_error_t doca_rdma_get_grh_enabled(const struct rdma *r, uint8_t *v) { if (!r || !v) return E_INVALID; *v = r->grh; return E_OK; }
EXPORT doca_error_t doca_rdma_set_mtu(struct rdma *r, int v) { if (!r || v < 0 || v > 4) return E_INVALID; r->mtu = v; return E_OK; }
EXPORT doca_error_t doca_rdma_get_mtu(const struct rdma *r, int *v) { if (!r || !v) return E_INVALID; *v = r->mtu; return E_OK; }
EXPORT doca_error_t doca_rdma_task_receive_set_dst_buf_list_len(struct rdma *r, uint32_t v)
{ if (!r || v == 0 || v > MAX_BUF_LIST_LEN) return E_INVALID; r->recv_list_len = v; return E_OK; }
EXPORT doca_error_t doca_rdma_task_receive_get_dst_buf_list_len(const struct rdma *r, uint32_t *v)
{ if (!r || !v) return E_INVALID; *v = r->recv_list_len; return E_OK; }

/* ---- capabilities ---- */
struct gid { uint8_t raw[16]; };
EXPORT doca_error_t doca_rdma_cap_get_max_recv_queue_size(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = MAX_QUEUE; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_get_max_send_queue_size(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = MAX_QUEUE / 2; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_get_max_send_buf_list_len(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = MAX_BUF_LIST_LEN; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_get_max_message_size(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = MAX_MESSAGE_SIZE; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_get_gid_table_size(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = GID_TABLE_SIZE; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_get_gid(const void *d, uint32_t start, uint32_t n, struct gid *out)
{
	uint32_t i;
	if (!d || !out || start + n > GID_TABLE_SIZE)
		return E_INVALID;
	for (i = 0; i < n; i++) {
		memset(out[i].raw, 0, 16);
		out[i].raw[0] = 0xfe;
		out[i].raw[15] = (uint8_t)(start + i);
	}
	return E_OK;
}
EXPORT doca_error_t doca_rdma_cap_transport_type_is_supported(const void *d, int t)
{ if (!d) return E_INVALID; return t == 0 ? E_OK : E_NOT_SUPPORTED; }
EXPORT doca_error_t doca_rdma_cap_task_receive_get_max_dst_buf_list_len(const void *d, int t, uint32_t *v)
{ if (!d || !v || t != 0) return E_INVALID; *v = MAX_BUF_LIST_LEN; return E_OK; }
EXPORT doca_error_t doca_rdma_cap_task_receive_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_cap_task_send_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_cap_task_send_imm_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_rdma_cap_task_read_is_supported(const void *d) { return d ? E_NOT_SUPPORTED : E_INVALID; }

/* ---- tasks ---- */
static doca_error_t set_conf(struct rdma *r, int type, task_cb_t ok, task_cb_t err, uint32_t num)
{
	if (r == NULL || ok == NULL || err == NULL || num == 0)
		return E_INVALID;
	r->ok[type] = ok;
	r->err[type] = err;
	r->num[type] = num;
	return E_OK;
}

static doca_error_t alloc(struct rdma *r, int type, struct rconn *c, const struct doca_buf *src,
			  struct doca_buf *dst, uint32_t imm, union doca_data ud, struct rtask **out)
{
	struct rtask *t;
	doca_error_t rc;
	if (r == NULL || out == NULL)
		return E_INVALID;
	if (CONN_API && type != T_RECEIVE && (c == NULL || c->r != r))
		return E_INVALID;
	if (r->ok[type] == NULL)
		return E_BAD_STATE;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return E_NO_MEMORY;
	rc = task_alloc(r->ctx, ud, &t->base);
	if (rc != E_OK) {
		free(t);
		return rc;
	}
	t->r = r;
	t->type = type;
	t->conn = c;
	t->src = src;
	t->dst = dst;
	t->imm = imm;
	t->next = all_tasks;
	all_tasks = t;
	*out = t;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_task_receive_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n) { return set_conf(r, T_RECEIVE, ok, err, n); }
EXPORT doca_error_t doca_rdma_task_send_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n) { return set_conf(r, T_SEND, ok, err, n); }
EXPORT doca_error_t doca_rdma_task_send_imm_set_conf(struct rdma *r, task_cb_t ok, task_cb_t err, uint32_t n) { return set_conf(r, T_SEND_IMM, ok, err, n); }

EXPORT doca_error_t doca_rdma_task_receive_allocate_init(struct rdma *r, struct doca_buf *dst, union doca_data ud, struct rtask **t)
{ return alloc(r, T_RECEIVE, NULL, NULL, dst, 0, ud, t); }
#if CONN_API
EXPORT doca_error_t doca_rdma_task_send_allocate_init(struct rdma *r, struct rconn *c, const struct doca_buf *src, union doca_data ud, struct rtask **t)
{ return alloc(r, T_SEND, c, src, NULL, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_send_imm_allocate_init(struct rdma *r, struct rconn *c, const struct doca_buf *src, uint32_t imm, union doca_data ud, struct rtask **t)
{ return alloc(r, T_SEND_IMM, c, src, NULL, imm, ud, t); }
#else
EXPORT doca_error_t doca_rdma_task_send_allocate_init(struct rdma *r, const struct doca_buf *src, union doca_data ud, struct rtask **t)
{ return alloc(r, T_SEND, NULL, src, NULL, 0, ud, t); }
EXPORT doca_error_t doca_rdma_task_send_imm_allocate_init(struct rdma *r, const struct doca_buf *src, uint32_t imm, union doca_data ud, struct rtask **t)
{ return alloc(r, T_SEND_IMM, NULL, src, NULL, imm, ud, t); }
#endif

EXPORT struct doca_task *doca_rdma_task_receive_as_task(struct rtask *t) { return t->base; }
EXPORT struct doca_task *doca_rdma_task_send_as_task(struct rtask *t) { return t->base; }
EXPORT struct doca_task *doca_rdma_task_send_imm_as_task(struct rtask *t) { return t->base; }
EXPORT void doca_rdma_task_receive_set_dst_buf(struct rtask *t, struct doca_buf *b) { t->dst = b; }
EXPORT struct doca_buf *doca_rdma_task_receive_get_dst_buf(const struct rtask *t) { return t->dst; }
EXPORT int doca_rdma_task_receive_get_result_opcode(const struct rtask *t) { return t->opcode; }
EXPORT uint32_t doca_rdma_task_receive_get_result_len(const struct rtask *t) { return t->result_len; }
EXPORT uint32_t doca_rdma_task_receive_get_result_immediate_data(const struct rtask *t) { return t->result_imm; }
EXPORT void doca_rdma_task_send_set_src_buf(struct rtask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_rdma_task_send_get_src_buf(const struct rtask *t) { return t->src; }
EXPORT void doca_rdma_task_send_imm_set_src_buf(struct rtask *t, const struct doca_buf *b) { t->src = b; }
EXPORT const struct doca_buf *doca_rdma_task_send_imm_get_src_buf(const struct rtask *t) { return t->src; }
EXPORT void doca_rdma_task_send_imm_set_immediate_data(struct rtask *t, uint32_t v) { t->imm = v; }
EXPORT uint32_t doca_rdma_task_send_imm_get_immediate_data(const struct rtask *t) { return t->imm; }

#if CONN_API
EXPORT const struct rconn *doca_rdma_task_receive_get_result_rdma_connection(const struct rtask *t) { return t->result_conn; }
EXPORT void doca_rdma_task_send_set_rdma_connection(struct rtask *t, struct rconn *c) { t->conn = c; }
EXPORT const struct rconn *doca_rdma_task_send_get_rdma_connection(const struct rtask *t) { return t->conn; }
EXPORT void doca_rdma_task_send_imm_set_rdma_connection(struct rtask *t, struct rconn *c) { t->conn = c; }
EXPORT const struct rconn *doca_rdma_task_send_imm_get_rdma_connection(const struct rtask *t) { return t->conn; }

/* ---- 3.x: connections, export/connect, RDMA-CM ---- */
EXPORT doca_error_t doca_rdma_set_max_num_connections(struct rdma *r, uint16_t v)
{ if (!r || v == 0 || v > MAX_CONNS) return E_INVALID; r->max_conns = v; return E_OK; }
EXPORT doca_error_t doca_rdma_get_max_num_connections(struct rdma *r, uint16_t *v) { if (!r || !v) return E_INVALID; *v = r->max_conns; return E_OK; }
EXPORT doca_error_t doca_rdma_set_rnr_retry_count(struct rdma *r, uint8_t v) { if (!r || v > 7) return E_INVALID; r->rnr = v; return E_OK; }
EXPORT doca_error_t doca_rdma_get_rnr_retry_count(const struct rdma *r, uint8_t *v) { if (!r || !v) return E_INVALID; *v = r->rnr; return E_OK; }

EXPORT doca_error_t doca_rdma_set_connection_state_callbacks(struct rdma *r, conn_request_cb_t req, conn_cb_t est,
							      conn_cb_t fail, conn_cb_t disc)
{
	if (!r || !req || !est || !fail || !disc)
		return E_INVALID;
	r->req_cb = req;
	r->est_cb = est;
	r->fail_cb = fail;
	r->disc_cb = disc;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_export(struct rdma *r, const void **blob, size_t *len, struct rconn **conn)
{
	struct rconn *c;
	if (!r || !blob || !len || !conn)
		return E_INVALID;
	c = new_conn(r, C_NEW);
	if (c == NULL)
		return E_FULL;
	/* One buffer per ctx, overwritten by the next export: callers must copy. */
	snprintf(r->blob, sizeof(r->blob), "FAKE-RDMA-CONN-%u", c->id);
	*blob = r->blob;
	*len = strlen(r->blob);
	*conn = c;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_connect(struct rdma *r, const void *peer, size_t len, struct rconn *c)
{
	if (!r || !peer || !len || !c || c->r != r || len > sizeof(r->peer))
		return E_INVALID;
	if (c->state != C_NEW)
		return E_BAD_STATE;
	if (len < 5 || memcmp(peer, "FAKE-", 5) != 0)
		return E_CONNECTION_ABORTED;
	memcpy(r->peer, peer, len);
	r->peer_len = len;
	c->state = C_ESTABLISHED;
	return queue_event(r, c, EV_ESTABLISHED);
}

EXPORT doca_error_t doca_rdma_connection_get_id(const struct rconn *c, uint32_t *id) { if (!c || !id) return E_INVALID; *id = c->id; return E_OK; }
EXPORT doca_error_t doca_rdma_connection_set_user_data(struct rconn *c, union doca_data ud) { if (!c) return E_INVALID; c->ud = ud; return E_OK; }
EXPORT doca_error_t doca_rdma_connection_get_user_data(const struct rconn *c, union doca_data *ud) { if (!c || !ud) return E_INVALID; *ud = c->ud; return E_OK; }

EXPORT doca_error_t fake_rdma_incoming_request(struct rdma *r)
{
	struct rconn *c = new_conn(r, C_REQUESTED);
	if (c == NULL)
		return E_FULL;
	return queue_event(r, c, EV_REQUEST);
}

EXPORT doca_error_t doca_rdma_start_listen_to_port(struct rdma *r, uint16_t port) { if (!r || !port) return E_INVALID; r->listen_port = port; return E_OK; }
EXPORT doca_error_t doca_rdma_stop_listen_to_port(struct rdma *r, uint16_t port)
{ if (!r || port != r->listen_port) return E_NOT_FOUND; r->listen_port = 0; return E_OK; }
EXPORT uint16_t fake_rdma_listen_port(const struct rdma *r) { return r->listen_port; }

EXPORT doca_error_t doca_rdma_connection_accept(struct rconn *c, void *priv, uint8_t len)
{
	if (!c || (len && !priv))
		return E_INVALID;
	if (c->state != C_REQUESTED)
		return E_BAD_STATE;
	c->state = C_ESTABLISHED;
	return queue_event(c->r, c, EV_ESTABLISHED);
}

EXPORT doca_error_t doca_rdma_connection_reject(struct rconn *c)
{
	if (!c)
		return E_INVALID;
	if (c->state != C_REQUESTED)
		return E_BAD_STATE;
	c->state = C_CLOSED;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_connection_disconnect(struct rconn *c)
{
	if (!c)
		return E_INVALID;
	if (c->state != C_ESTABLISHED)
		return E_BAD_STATE;
	c->state = C_CLOSED;
	return queue_event(c->r, c, EV_DISCONNECTION);
}

static int live_addrs;
EXPORT int fake_rdma_live_addrs(void) { return live_addrs; }

EXPORT doca_error_t doca_rdma_addr_create(int type, const char *text, uint16_t port, struct raddr **out)
{
	struct raddr *a;
	if (type < 0 || type > 2 || !text || !out || strlen(text) >= sizeof(a->text))
		return E_INVALID;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return E_NO_MEMORY;
	a->type = type;
	strcpy(a->text, text);
	a->port = port;
	live_addrs++;
	*out = a;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_addr_destroy(struct raddr *a) { if (!a) return E_INVALID; free(a); live_addrs--; return E_OK; }
EXPORT doca_error_t doca_rdma_addr_get_params(struct raddr *a, int *type, const char **text, uint16_t *port)
{
	if (!a || !type || !text || !port)
		return E_INVALID;
	*type = a->type;
	*text = a->text;
	*port = a->port;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_connect_to_addr(struct rdma *r, struct raddr *a, union doca_data ud)
{
	struct rconn *c;
	if (!r || !a)
		return E_INVALID;
	c = new_conn(r, C_NEW);
	if (c == NULL)
		return E_FULL;
	c->ud = ud;
	c->addr = a;
	if (a->port == FAIL_PORT) {
		c->state = C_CLOSED;
		return queue_event(r, c, EV_FAILURE);
	}
	c->state = C_ESTABLISHED;
	return queue_event(r, c, EV_ESTABLISHED);
}

EXPORT doca_error_t doca_rdma_connection_get_addr(const struct rconn *c, struct raddr **a)
{
	if (!c || !a)
		return E_INVALID;
	if (c->addr == NULL)
		return E_NOT_FOUND;
	*a = c->addr;
	return E_OK;
}
#else
/* ---- 2.6: one implicit connection, no callbacks ---- */
EXPORT doca_error_t doca_rdma_export(const struct rdma *r, const void **blob, size_t *len)
{
	if (!r || !blob || !len)
		return E_INVALID;
	*blob = "FAKE-RDMA-26";
	*len = 12;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_connect(struct rdma *r, const void *peer, size_t len)
{
	if (!r || !peer || !len || len > sizeof(r->peer))
		return E_INVALID;
	if (r->peer_len)
		return E_BAD_STATE;
	if (len < 5 || memcmp(peer, "FAKE-", 5) != 0)
		return E_CONNECTION_ABORTED;
	memcpy(r->peer, peer, len);
	r->peer_len = len;
	return E_OK;
}

EXPORT doca_error_t doca_rdma_srq_create(void *dev, void **srq) { (void)dev; (void)srq; return E_NOT_SUPPORTED; }
#endif

#include "rdma_sync_event.c"
