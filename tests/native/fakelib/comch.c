/* A fake libdoca_comch (or DOCA 2.6's libdoca_cc), built by tests/native/fakelib/comch.py.
 *
 * It exports, with the real ABI, what the native comch object layer's tests call:
 * server and client (create/destroy/as_ctx, max message size and receive queue size,
 * send tasks, the message, connection-status and consumer events, the client's
 * connection), connections (user data, owning ctx, counters), consumers (id,
 * immediate data length, post-recv tasks) and producers (id, send tasks), plus a few
 * capabilities. IMM_API (params.h) selects the 3.x ABI with immediate data; the
 * libdoca_cc build renames every doca_comch_* symbol through a generated header.
 *
 * It is not an emulator. Events are not called from inside the API call that causes
 * them: the fake allocates an internal doca_task on the endpoint's ctx and submits
 * it, so the fake common's doca_pe_progress delivers it here and the registered event
 * callback runs from C inside doca_pe_progress, as DOCA does. fake_comch_incoming_msg
 * hands its callback a heap copy of the message that is overwritten and freed as
 * soon as the callback returns: a binding that does not copy the bytes inside the
 * callback reads garbage. Completed tasks record what they carried
 * (fake_comch_last_msg, fake_comch_last_produced); a post-recv task completes with
 * RECV_DATA appended to its buffer, producer RECV_PRODUCER_ID and (3.x) immediate
 * data RECV_IMM_C; a producer send to BAD_CONSUMER_ID completes through the error
 * callback.
 */

#include "fake.h"


typedef void (*msg_cb_t)(void *, uint8_t *, uint32_t, void *);
typedef void (*status_cb_t)(void *, void *, uint8_t);
typedef void (*consumer_cb_t)(void *, void *, uint32_t);

enum { T_SEND, T_POST_RECV, T_PRODUCER_SEND, T_EVENT };
enum { EV_MSG, EV_CONNECT, EV_DISCONNECT, EV_NEW_CONSUMER, EV_EXPIRED_CONSUMER };
#define MAX_CONNS MAX_CLIENTS
#define MAX_MSG MAX_MSG_SIZE

static doca_error_t (*ctx_create)(struct doca_ctx **);
static void (*ctx_destroy)(struct doca_ctx *);
static void (*ctx_set_task_cb)(struct doca_ctx *, task_cb_t);
static doca_error_t (*task_alloc)(struct doca_ctx *, union doca_data, struct doca_task **);
static doca_error_t (*task_submit)(struct doca_task *);
static void (*task_free)(struct doca_task *);
static doca_error_t (*ctx_get_state)(const struct doca_ctx *, int *);

EXPORT void fake_comch_attach(void *create, void *destroy, void *set_cb, void *alloc, void *submit, void *free_,
			      void *get_state)
{
	ctx_create = create;
	ctx_destroy = destroy;
	ctx_set_task_cb = set_cb;
	task_alloc = alloc;
	task_submit = submit;
	task_free = free_;
	ctx_get_state = get_state;
}

struct ep;
struct conn { struct ep *ep; union doca_data ud; int alive; uint64_t live[5], snap[5]; };
struct ep {
	struct doca_ctx *ctx;
	int server;
	void *dev, *rep;
	uint32_t max_msg, recv_queue;
	task_cb_t ok, err;
	msg_cb_t msg_cb;
	status_cb_t connect_cb, disconnect_cb;
	consumer_cb_t new_cb, expired_cb;
	struct conn *conns[MAX_CONNS];
	int nconns;
};
struct consumer { struct doca_ctx *ctx; struct conn *conn; uint32_t id, imm_len; task_cb_t ok, err; };
struct producer { struct doca_ctx *ctx; struct conn *conn; uint32_t id; task_cb_t ok, err; };

struct ftask {
	struct doca_task *base;
	int type;
	struct ep *ep;
	struct consumer *consumer;
	struct producer *producer;
	struct conn *conn;
	char msg[MAX_MSG];
	uint32_t msg_len;
	struct doca_buf *buf;
	uint8_t imm[MAX_IMM];
	uint32_t imm_len, consumer_id, producer_id;
	int ev;
	uint32_t ev_id;
	char *ev_data;
	struct ftask *next;
};

/* Newest first: a freed doca_task's address may be reused by a later task. */
static struct ftask *all_tasks;
static int live_objects;
static uint32_t next_id = FIRST_ID;
static char last_msg[MAX_MSG];
static uint32_t last_msg_len;
static char last_produced[256];
static uint32_t last_produced_len, last_consumer_id;
static uint8_t last_imm[MAX_IMM];
static uint32_t last_imm_len;

EXPORT int fake_comch_live(void) { return live_objects; }
EXPORT uint32_t fake_comch_last_msg(char *out) { memcpy(out, last_msg, last_msg_len); return last_msg_len; }
EXPORT uint32_t fake_comch_last_produced(char *out, uint8_t *imm, uint32_t *imm_len, uint32_t *consumer_id)
{
	memcpy(out, last_produced, last_produced_len);
	memcpy(imm, last_imm, last_imm_len);
	*imm_len = last_imm_len;
	*consumer_id = last_consumer_id;
	return last_produced_len;
}

static void on_event(struct ftask *t)
{
	struct ep *e = t->ep;
	struct conn *c = t->conn;
	switch (t->ev) {
	case EV_MSG:
		if (e->msg_cb)
			e->msg_cb(t, (uint8_t *)t->ev_data, t->msg_len, c);
		/* The buffer is the library's, valid only during the callback. */
		memset(t->ev_data, 'X', t->msg_len);
		free(t->ev_data);
		t->ev_data = NULL;
		break;
	case EV_CONNECT:
		if (e->connect_cb)
			e->connect_cb(t, c, 1);
		break;
	case EV_DISCONNECT:
		if (e->disconnect_cb)
			e->disconnect_cb(t, c, 1);
		break;
	case EV_NEW_CONSUMER:
		if (e->new_cb)
			e->new_cb(t, c, t->ev_id);
		break;
	case EV_EXPIRED_CONSUMER:
		if (e->expired_cb)
			e->expired_cb(t, c, t->ev_id);
		break;
	}
}

static void on_done(void *base, union doca_data task_ud, union doca_data ctx_ud)
{
	struct ftask *t, **link;
	for (link = &all_tasks; (t = *link) != NULL; link = &t->next)
		if ((void *)t->base == base)
			break;
	if (t == NULL)
		return;
	if (t->type == T_EVENT) {
		*link = t->next;
		task_free(t->base);
		on_event(t);
		free(t);
		return;
	}
	if (t->type == T_SEND) {
		memcpy(last_msg, t->msg, t->msg_len);
		last_msg_len = t->msg_len;
		t->conn->live[1]++;
		t->conn->live[2] += t->msg_len;
		t->ep->ok(t, task_ud, ctx_ud);
	} else if (t->type == T_POST_RECV) {
		struct doca_buf *d = t->buf;
		memcpy((char *)d->data + d->data_len, RECV_DATA, RECV_LEN);
		d->data_len += RECV_LEN;
		t->producer_id = RECV_PRODUCER_ID;
		memcpy(t->imm, RECV_IMM_C, RECV_IMM_LEN);
		t->imm_len = IMM_API ? RECV_IMM_LEN : 0;
		t->consumer->ok(t, task_ud, ctx_ud);
	} else {
		const struct doca_buf *s = t->buf;
		if (t->consumer_id == BAD_CONSUMER_ID) {
			t->producer->err(t, task_ud, ctx_ud);
			return;
		}
		last_produced_len = s->data_len < sizeof(last_produced) ? (uint32_t)s->data_len : sizeof(last_produced);
		memcpy(last_produced, s->data, last_produced_len);
		memcpy(last_imm, t->imm, t->imm_len);
		last_imm_len = t->imm_len;
		last_consumer_id = t->consumer_id;
		t->producer->ok(t, task_ud, ctx_ud);
	}
}

static struct ftask *new_task(struct doca_ctx *ctx, int type)
{
	struct ftask *t = calloc(1, sizeof(*t));
	union doca_data none = { .u64 = 0 };
	if (t == NULL)
		return NULL;
	if (task_alloc(ctx, none, &t->base) != E_OK) {
		free(t);
		return NULL;
	}
	t->type = type;
	t->next = all_tasks;
	all_tasks = t;
	return t;
}

static doca_error_t queue_event(struct ep *e, struct conn *c, int ev, uint32_t id, const char *data, uint32_t len)
{
	struct ftask *t = new_task(e->ctx, T_EVENT);
	doca_error_t rc;
	if (t == NULL)
		return E_NO_MEMORY;
	t->ep = e;
	t->conn = c;
	t->ev = ev;
	t->ev_id = id;
	if (data != NULL) {
		t->ev_data = malloc(len ? len : 1);
		memcpy(t->ev_data, data, len);
		t->msg_len = len;
	}
	rc = task_submit(t->base);
	if (rc != E_OK) {
		all_tasks = t->next;
		task_free(t->base);
		free(t->ev_data);
		free(t);
	}
	return rc;
}

/* ---- endpoints ---- */
static struct conn *new_conn(struct ep *e)
{
	struct conn *c;
	if (e->nconns == MAX_CONNS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->ep = e;
	c->alive = 1;
	e->conns[e->nconns++] = c;
	return c;
}

static doca_error_t ep_create(void *dev, void *rep, const char *name, int server, struct ep **out)
{
	struct ep *e;
	if (dev == NULL || name == NULL || out == NULL || (server && rep == NULL))
		return E_INVALID;
	if (name[0] == '\0' || strlen(name) >= MAX_NAME_LEN)
		return E_INVALID;
	e = calloc(1, sizeof(*e));
	if (e == NULL || ctx_create(&e->ctx) != E_OK) {
		free(e);
		return E_NO_MEMORY;
	}
	ctx_set_task_cb(e->ctx, on_done);
	e->server = server;
	e->dev = dev;
	e->rep = rep;
	e->max_msg = MAX_MSG;
	e->recv_queue = 16;
	if (!server && new_conn(e) == NULL) {
		ctx_destroy(e->ctx);
		free(e);
		return E_NO_MEMORY;
	}
	live_objects++;
	*out = e;
	return E_OK;
}

static doca_error_t ep_destroy(struct ep *e)
{
	int i;
	if (e == NULL)
		return E_INVALID;
	for (i = 0; i < e->nconns; i++)
		free(e->conns[i]);
	ctx_destroy(e->ctx);
	free(e);
	live_objects--;
	return E_OK;
}

EXPORT doca_error_t doca_comch_server_create(void *dev, void *rep, const char *name, struct ep **out)
{ return ep_create(dev, rep, name, 1, out); }
EXPORT doca_error_t doca_comch_client_create(void *dev, const char *name, struct ep **out)
{ return ep_create(dev, (void *)1, name, 0, out); }
EXPORT doca_error_t doca_comch_server_destroy(struct ep *e) { return ep_destroy(e); }
EXPORT doca_error_t doca_comch_client_destroy(struct ep *e) { return ep_destroy(e); }
EXPORT struct doca_ctx *doca_comch_server_as_ctx(struct ep *e) { return e ? e->ctx : NULL; }
EXPORT struct doca_ctx *doca_comch_client_as_ctx(struct ep *e) { return e ? e->ctx : NULL; }
EXPORT doca_error_t doca_comch_server_get_device_rep(const struct ep *e, void **rep)
{ if (!e || !rep) return E_INVALID; *rep = e->rep; return E_OK; }

#define GETSET(side)                                                                               \
EXPORT doca_error_t doca_comch_##side##_set_max_msg_size(struct ep *e, uint32_t v)                 \
{ if (!e || v == 0 || v > MAX_MSG) return E_INVALID; e->max_msg = v; return E_OK; }                \
EXPORT doca_error_t doca_comch_##side##_get_max_msg_size(const struct ep *e, uint32_t *v)          \
{ if (!e || !v) return E_INVALID; *v = e->max_msg; return E_OK; }                                  \
EXPORT doca_error_t doca_comch_##side##_set_recv_queue_size(struct ep *e, uint32_t v)              \
{ if (!e || v == 0) return E_INVALID; e->recv_queue = v; return E_OK; }                            \
EXPORT doca_error_t doca_comch_##side##_get_recv_queue_size(const struct ep *e, uint32_t *v)       \
{ if (!e || !v) return E_INVALID; *v = e->recv_queue; return E_OK; }                               \
EXPORT doca_error_t doca_comch_##side##_task_send_set_conf(struct ep *e, task_cb_t ok, task_cb_t err, \
							    uint32_t n)                            \
{ if (!e || !ok || !err || n == 0) return E_INVALID; e->ok = ok; e->err = err; return E_OK; }      \
EXPORT doca_error_t doca_comch_##side##_event_msg_recv_register(struct ep *e, msg_cb_t cb)         \
{ if (!e || !cb) return E_INVALID; e->msg_cb = cb; return E_OK; }                                  \
EXPORT doca_error_t doca_comch_##side##_event_consumer_register(struct ep *e, consumer_cb_t n,      \
								consumer_cb_t x)                   \
{ if (!e || !n || !x) return E_INVALID; e->new_cb = n; e->expired_cb = x; return E_OK; }           \
EXPORT doca_error_t doca_comch_##side##_task_send_alloc_init(struct ep *e, struct conn *c,          \
							      const void *msg, uint32_t len,       \
							      struct ftask **out)                  \
{ return send_alloc(e, c, msg, len, out); }

static doca_error_t send_alloc(struct ep *e, struct conn *c, const void *msg, uint32_t len, struct ftask **out)
{
	struct ftask *t;
	if (!e || !c || c->ep != e || !out || (len && !msg) || len > e->max_msg)
		return E_INVALID;
	if (!c->alive)
		return E_NOT_CONNECTED;
	if (e->ok == NULL)
		return E_BAD_STATE;
	t = new_task(e->ctx, T_SEND);
	if (t == NULL)
		return E_NO_MEMORY;
	t->ep = e;
	t->conn = c;
	if (len)
		memcpy(t->msg, msg, len); /* copied at allocation, like DOCA */
	t->msg_len = len;
	*out = t;
	return E_OK;
}

GETSET(server)
GETSET(client)

EXPORT struct doca_task *doca_comch_task_send_as_task(struct ftask *t) { return t->base; }

EXPORT doca_error_t doca_comch_server_event_connection_status_changed_register(struct ep *e, status_cb_t c,
									      status_cb_t d)
{ if (!e || !e->server || !c || !d) return E_INVALID; e->connect_cb = c; e->disconnect_cb = d; return E_OK; }

EXPORT doca_error_t doca_comch_client_get_connection(const struct ep *e, struct conn **out)
{
	int state = 0;
	if (!e || e->server || !out)
		return E_INVALID;
	ctx_get_state(e->ctx, &state);
	if (state != S_RUNNING)
		return E_BAD_STATE;
	*out = e->conns[0];
	return E_OK;
}

#if IMM_API
EXPORT doca_error_t doca_comch_server_disconnect(struct ep *e, struct conn *c)
{
	if (!e || !c || c->ep != e || !e->server)
		return E_INVALID;
	if (!c->alive)
		return E_NOT_CONNECTED;
	c->alive = 0;
	return queue_event(e, c, EV_DISCONNECT, 0, NULL, 0);
}
#endif

/* ---- connections ---- */
EXPORT doca_error_t doca_comch_connection_set_user_data(struct conn *c, union doca_data ud)
{ if (!c) return E_INVALID; c->ud = ud; return E_OK; }
EXPORT union doca_data doca_comch_connection_get_user_data(const struct conn *c) { return c->ud; }
EXPORT struct ep *doca_comch_server_get_server_ctx(const struct conn *c) { return c->ep->server ? c->ep : NULL; }
EXPORT struct ep *doca_comch_client_get_client_ctx(const struct conn *c) { return c->ep->server ? NULL : c->ep; }
EXPORT doca_error_t doca_comch_connection_update_info(struct conn *c)
{ if (!c) return E_INVALID; memcpy(c->snap, c->live, sizeof(c->snap)); return E_OK; }
EXPORT doca_error_t doca_comch_connection_get_counter(const struct conn *c, int counter, uint64_t *v)
{ if (!c || !v || counter < 1 || counter > 4) return E_INVALID; *v = c->snap[counter]; return E_OK; }

/* A client connects to a server: its connect event fires from the next progress. */
EXPORT doca_error_t fake_comch_server_incoming(struct ep *e, struct conn **out)
{
	struct conn *c;
	if (!e || !e->server)
		return E_INVALID;
	c = new_conn(e);
	if (c == NULL)
		return E_FULL;
	*out = c;
	return queue_event(e, c, EV_CONNECT, 0, NULL, 0);
}

/* The peer sends a message on c. */
EXPORT doca_error_t fake_comch_incoming_msg(struct conn *c, const char *data, uint32_t len)
{
	if (!c || !c->alive)
		return E_INVALID;
	c->live[3]++;
	c->live[4] += len;
	return queue_event(c->ep, c, EV_MSG, 0, data, len);
}

/* The peer created (is_new) or destroyed a consumer on c. */
EXPORT doca_error_t fake_comch_remote_consumer(struct conn *c, uint32_t id, uint8_t is_new)
{
	if (!c)
		return E_INVALID;
	return queue_event(c->ep, c, is_new ? EV_NEW_CONSUMER : EV_EXPIRED_CONSUMER, id, NULL, 0);
}

/* ---- capabilities ---- */
#define CAP(name, value) \
EXPORT doca_error_t doca_comch_##name(const void *d, uint32_t *v) { if (!d || !v) return E_INVALID; *v = value; return E_OK; }
CAP(cap_get_max_name_len, MAX_NAME_LEN)
CAP(cap_get_max_msg_size, MAX_MSG)
CAP(cap_get_max_clients, MAX_CONNS)
CAP(consumer_cap_get_max_buf_size, 1u << 20)
CAP(producer_cap_get_max_num_tasks, 1024)
#if IMM_API
CAP(consumer_cap_get_max_imm_data_len, MAX_IMM)
#endif
EXPORT doca_error_t doca_comch_cap_server_is_supported(const void *d) { return d ? E_OK : E_INVALID; }
EXPORT doca_error_t doca_comch_cap_client_is_supported(const void *d) { return d ? E_NOT_SUPPORTED : E_INVALID; }

/* ---- consumer ---- */
EXPORT doca_error_t doca_comch_consumer_create(struct conn *c, void *mmap, struct consumer **out)
{
	struct consumer *k;
	if (!c || !mmap || !out)
		return E_INVALID;
	if (!c->alive)
		return E_BAD_STATE; /* "comch_connection is not established" */
	k = calloc(1, sizeof(*k));
	if (k == NULL || ctx_create(&k->ctx) != E_OK) {
		free(k);
		return E_NO_MEMORY;
	}
	ctx_set_task_cb(k->ctx, on_done);
	k->conn = c;
	k->id = next_id++;
	k->imm_len = IMM_API ? MAX_IMM : 0;
	live_objects++;
	*out = k;
	return E_OK;
}

EXPORT doca_error_t doca_comch_consumer_destroy(struct consumer *k)
{ if (!k) return E_INVALID; ctx_destroy(k->ctx); free(k); live_objects--; return E_OK; }
EXPORT struct doca_ctx *doca_comch_consumer_as_ctx(struct consumer *k) { return k ? k->ctx : NULL; }
EXPORT doca_error_t doca_comch_consumer_get_id(const struct consumer *k, uint32_t *id)
{ if (!k || !id) return E_INVALID; *id = k->id; return E_OK; }
#if IMM_API
EXPORT doca_error_t doca_comch_consumer_set_imm_data_len(struct consumer *k, uint32_t n)
{ if (!k || n > MAX_IMM) return E_INVALID; k->imm_len = n; return E_OK; }
EXPORT doca_error_t doca_comch_consumer_get_imm_data_len(const struct consumer *k, uint32_t *n)
{ if (!k || !n) return E_INVALID; *n = k->imm_len; return E_OK; }
#endif
EXPORT doca_error_t doca_comch_consumer_task_post_recv_set_conf(struct consumer *k, task_cb_t ok, task_cb_t err,
								uint32_t n)
{ if (!k || !ok || !err || n == 0) return E_INVALID; k->ok = ok; k->err = err; return E_OK; }

EXPORT doca_error_t doca_comch_consumer_task_post_recv_alloc_init(struct consumer *k, struct doca_buf *b,
								   struct ftask **out)
{
	struct ftask *t;
	if (!k || !b || !out)
		return E_INVALID;
	if (k->ok == NULL)
		return E_BAD_STATE;
	t = new_task(k->ctx, T_POST_RECV);
	if (t == NULL)
		return E_NO_MEMORY;
	t->consumer = k;
	t->buf = b;
	*out = t;
	return E_OK;
}

EXPORT struct doca_task *doca_comch_consumer_task_post_recv_as_task(struct ftask *t) { return t->base; }
EXPORT struct doca_buf *doca_comch_consumer_task_post_recv_get_buf(const struct ftask *t) { return t->buf; }
EXPORT void doca_comch_consumer_task_post_recv_set_buf(struct ftask *t, struct doca_buf *b) { t->buf = b; }
EXPORT uint32_t doca_comch_consumer_task_post_recv_get_producer_id(const struct ftask *t) { return t->producer_id; }
#if IMM_API
EXPORT const uint8_t *doca_comch_consumer_task_post_recv_get_imm_data(const struct ftask *t)
{ return t->imm_len ? t->imm : NULL; }
EXPORT uint32_t doca_comch_consumer_task_post_recv_get_imm_data_len(const struct ftask *t) { return t->imm_len; }
#endif

/* ---- producer ---- */
EXPORT doca_error_t doca_comch_producer_create(struct conn *c, struct producer **out)
{
	struct producer *p;
	if (!c || !out)
		return E_INVALID;
	if (!c->alive)
		return E_BAD_STATE; /* "comch_connection is not established" */
	p = calloc(1, sizeof(*p));
	if (p == NULL || ctx_create(&p->ctx) != E_OK) {
		free(p);
		return E_NO_MEMORY;
	}
	ctx_set_task_cb(p->ctx, on_done);
	p->conn = c;
	p->id = next_id++;
	live_objects++;
	*out = p;
	return E_OK;
}

EXPORT doca_error_t doca_comch_producer_destroy(struct producer *p)
{ if (!p) return E_INVALID; ctx_destroy(p->ctx); free(p); live_objects--; return E_OK; }
EXPORT struct doca_ctx *doca_comch_producer_as_ctx(struct producer *p) { return p ? p->ctx : NULL; }
EXPORT doca_error_t doca_comch_producer_get_id(const struct producer *p, uint32_t *id)
{ if (!p || !id) return E_INVALID; *id = p->id; return E_OK; }
EXPORT doca_error_t doca_comch_producer_task_send_set_conf(struct producer *p, task_cb_t ok, task_cb_t err,
							   uint32_t n)
{ if (!p || !ok || !err || n == 0) return E_INVALID; p->ok = ok; p->err = err; return E_OK; }

static doca_error_t produce_alloc(struct producer *p, struct doca_buf *b, const uint8_t *imm, uint32_t imm_len,
				  uint32_t consumer_id, struct ftask **out)
{
	struct ftask *t;
	if (!p || !b || !out || imm_len > MAX_IMM || (imm_len && !imm) || consumer_id == 0)
		return E_INVALID;
	if (p->ok == NULL)
		return E_BAD_STATE;
	t = new_task(p->ctx, T_PRODUCER_SEND);
	if (t == NULL)
		return E_NO_MEMORY;
	t->producer = p;
	t->buf = b;
	if (imm_len)
		memcpy(t->imm, imm, imm_len);
	t->imm_len = imm_len;
	t->consumer_id = consumer_id;
	*out = t;
	return E_OK;
}

#if IMM_API
EXPORT doca_error_t doca_comch_producer_task_send_alloc_init(struct producer *p, struct doca_buf *b, uint8_t *imm,
							     uint32_t imm_len, uint32_t consumer_id,
							     struct ftask **out)
{ return produce_alloc(p, b, imm, imm_len, consumer_id, out); }
EXPORT uint8_t *doca_comch_producer_task_send_get_imm_data(const struct ftask *t)
{ return t->imm_len ? (uint8_t *)t->imm : NULL; }
EXPORT uint32_t doca_comch_producer_task_send_get_imm_data_len(const struct ftask *t) { return t->imm_len; }
EXPORT void doca_comch_producer_task_send_set_imm_data(struct ftask *t, uint8_t *imm, uint32_t len)
{ if (len > MAX_IMM) len = MAX_IMM; memcpy(t->imm, imm, len); t->imm_len = len; }
#else
EXPORT doca_error_t doca_comch_producer_task_send_alloc_init(struct producer *p, struct doca_buf *b,
							     uint32_t consumer_id, struct ftask **out)
{ return produce_alloc(p, b, NULL, 0, consumer_id, out); }
#endif
EXPORT struct doca_task *doca_comch_producer_task_send_as_task(struct ftask *t) { return t->base; }
EXPORT const struct doca_buf *doca_comch_producer_task_send_get_buf(const struct ftask *t) { return t->buf; }
EXPORT void doca_comch_producer_task_send_set_buf(struct ftask *t, struct doca_buf *b) { t->buf = b; }
EXPORT uint32_t doca_comch_producer_task_send_get_consumer_id(const struct ftask *t) { return t->consumer_id; }
EXPORT void doca_comch_producer_task_send_set_consumer_id(struct ftask *t, const uint32_t id) { t->consumer_id = id; }
