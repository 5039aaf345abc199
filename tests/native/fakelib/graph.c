/* The fake libdoca_common's doca_graph (doca_graph.h, DOCA 2.6 and 3.x), included by common.c.
 *
 * A graph holds up to G_MAX_NODES ctx, user and sub graph nodes; an instance runs them in dependency
 * order on the graph's Pe: submit starts the roots (a ctx node's task is submitted, a user node is
 * queued for the next doca_pe_progress, a sub graph instance is begun), and each node that completes
 * starts the nodes it released. A graph's task is completed by doca_pe_progress through its ctx's
 * trampoline with user data 0, which no registered callback owns (DOCA does not invoke a graph task's
 * callbacks); its status then completes the node. A failed node fails the run: nothing further starts,
 * and the error callback runs once the nodes in flight completed. The states and errors are
 * doca_graph.h's, as doca_py's emulator has them.
 */

#define G_MAX_NODES 32
enum { G_CTX, G_USER, G_SUB };

typedef void (*graph_cb_t)(struct fake_ginst *, union doca_data, union doca_data);
typedef doca_error_t (*user_node_cb_t)(void *);

struct doca_graph_node {
	struct fake_graph *g;
	int index, kind, nafter, nbefore;
	struct doca_ctx *ctx;
	user_node_cb_t fn;
	struct fake_graph *sub;
	int after[G_MAX_NODES];
};
struct fake_graph {
	struct fake_graph *next_live;
	struct doca_pe *pe;
	struct doca_graph_node *nodes[G_MAX_NODES];
	int nnodes, started;
	graph_cb_t ok, err;
	uint32_t num, ninst;
	union doca_data ud;
};
struct fake_ginst {
	struct fake_ginst *next_live;
	struct fake_graph *g;
	union doca_data ud;
	void *data[G_MAX_NODES];
	int inflight, running, finished, parent_node;
	int waiting[G_MAX_NODES];
	doca_error_t status;
	struct fake_ginst *parent, *used_by;
};
struct fake_gwork {
	struct fake_ginst *inst;
	int node;
	struct fake_gwork *next;
};

static struct fake_graph *live_graphs;
static struct fake_ginst *live_ginsts;

static struct fake_graph *find_graph(const void *p)
{
	struct fake_graph *g;
	for (g = live_graphs; g != NULL; g = g->next_live)
		if ((const void *)g == p)
			return g;
	return NULL;
}

static struct fake_ginst *find_ginst(const void *p)
{
	struct fake_ginst *i;
	for (i = live_ginsts; i != NULL; i = i->next_live)
		if ((const void *)i == p)
			return i;
	return NULL;
}

EXPORT doca_error_t doca_graph_create(struct doca_pe *pe, struct fake_graph **out)
{
	struct fake_graph *g;
	if (pe == NULL || out == NULL)
		return E_INVALID;
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return E_NO_MEMORY;
	g->pe = pe;
	g->next_live = live_graphs;
	live_graphs = g;
	*out = g;
	return E_OK;
}

EXPORT doca_error_t doca_graph_destroy(struct fake_graph *g)
{
	struct fake_graph **link;
	int k;
	if (find_graph(g) == NULL)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	for (link = &live_graphs; *link != g; link = &(*link)->next_live)
		;
	*link = g->next_live;
	for (k = 0; k < g->nnodes; k++)
		free(g->nodes[k]);
	free(g);
	return E_OK;
}

EXPORT doca_error_t doca_graph_set_conf(struct fake_graph *g, graph_cb_t ok, graph_cb_t err, uint32_t num)
{
	if (find_graph(g) == NULL || ok == NULL || err == NULL || num == 0)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	g->ok = ok;
	g->err = err;
	g->num = num;
	return E_OK;
}

EXPORT doca_error_t doca_graph_set_user_data(struct fake_graph *g, union doca_data ud)
{
	if (find_graph(g) == NULL)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	g->ud = ud;
	return E_OK;
}

EXPORT doca_error_t doca_graph_get_user_data(const struct fake_graph *g, union doca_data *ud)
{
	if (find_graph(g) == NULL || ud == NULL)
		return E_INVALID;
	*ud = g->ud;
	return E_OK;
}

static doca_error_t add_node(struct fake_graph *g, int kind, struct doca_graph_node **out,
			     struct doca_graph_node **made)
{
	struct doca_graph_node *n;
	if (find_graph(g) == NULL || out == NULL)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	if (g->nnodes == G_MAX_NODES || (n = calloc(1, sizeof(*n))) == NULL)
		return E_NO_MEMORY;
	n->g = g;
	n->kind = kind;
	n->index = g->nnodes;
	g->nodes[g->nnodes++] = n;
	*out = *made = n;
	return E_OK;
}

EXPORT doca_error_t doca_graph_node_create_from_ctx(struct fake_graph *g, struct doca_ctx *ctx,
						     struct doca_graph_node **out)
{
	struct doca_graph_node *n;
	doca_error_t rc;
	if (ctx == NULL)
		return E_INVALID;
	if ((rc = add_node(g, G_CTX, out, &n)) == E_OK)
		n->ctx = ctx;
	return rc;
}

EXPORT doca_error_t doca_graph_node_create_from_user(struct fake_graph *g, user_node_cb_t fn,
						      struct doca_graph_node **out)
{
	struct doca_graph_node *n;
	doca_error_t rc;
	if (fn == NULL)
		return E_INVALID;
	if ((rc = add_node(g, G_USER, out, &n)) == E_OK)
		n->fn = fn;
	return rc;
}

static int graph_contains(const struct fake_graph *g, const struct fake_graph *other)
{
	int k;
	for (k = 0; k < g->nnodes; k++)
		if (g->nodes[k]->sub == other || (g->nodes[k]->sub != NULL && graph_contains(g->nodes[k]->sub, other)))
			return 1;
	return 0;
}

EXPORT doca_error_t doca_graph_node_create_from_graph(struct fake_graph *g, struct fake_graph *sub,
						       struct doca_graph_node **out)
{
	struct doca_graph_node *n;
	doca_error_t rc;
	if (find_graph(g) == NULL || find_graph(sub) == NULL)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	if (sub == g || graph_contains(sub, g))
		return E_NOT_PERMITTED;
	if (!sub->started)
		return E_BAD_STATE;
	if ((rc = add_node(g, G_SUB, out, &n)) == E_OK)
		n->sub = sub;
	return rc;
}

static int reaches(const struct fake_graph *g, int from, int goal, int depth)
{
	int k;
	if (from == goal)
		return 1;
	if (depth > G_MAX_NODES)
		return 0;
	for (k = 0; k < g->nodes[from]->nafter; k++)
		if (reaches(g, g->nodes[from]->after[k], goal, depth + 1))
			return 1;
	return 0;
}

EXPORT doca_error_t doca_graph_add_dependency(struct fake_graph *g, struct doca_graph_node *a,
					       struct doca_graph_node *b)
{
	int k;
	if (find_graph(g) == NULL || a == NULL || b == NULL || a->g != g || b->g != g)
		return E_INVALID;
	if (g->started)
		return E_BAD_STATE;
	for (k = 0; k < a->nafter; k++)
		if (a->after[k] == b->index)
			return E_OK;
	if (a == b || reaches(g, b->index, a->index, 0))
		return E_NOT_PERMITTED;
	a->after[a->nafter++] = b->index;
	b->nbefore++;
	return E_OK;
}

EXPORT doca_error_t doca_graph_start(struct fake_graph *g)
{
	int k, ctxs = 0;
	if (find_graph(g) == NULL)
		return E_INVALID;
	if (g->started)
		return E_OK;
	if (g->ok == NULL)
		return E_BAD_STATE;
	for (k = 0; k < g->nnodes; k++) {
		if (g->nodes[k]->kind != G_CTX)
			continue;
		ctxs++;
		if (g->nodes[k]->ctx->state != S_RUNNING)
			return E_BAD_STATE;
	}
	if (ctxs == 0)
		return E_BAD_STATE;
	g->started = 1;
	return E_OK;
}

EXPORT doca_error_t doca_graph_stop(struct fake_graph *g)
{
	if (find_graph(g) == NULL)
		return E_INVALID;
	if (g->ninst)
		return E_IN_USE;
	g->started = 0;
	return E_OK;
}

EXPORT doca_error_t doca_graph_instance_create(struct fake_graph *g, struct fake_ginst **out)
{
	struct fake_ginst *i;
	if (find_graph(g) == NULL || out == NULL)
		return E_INVALID;
	if (!g->started)
		return E_BAD_STATE;
	if (g->ninst >= g->num || (i = calloc(1, sizeof(*i))) == NULL)
		return E_NO_MEMORY;
	i->g = g;
	g->ninst++;
	i->next_live = live_ginsts;
	live_ginsts = i;
	*out = i;
	return E_OK;
}

EXPORT doca_error_t doca_graph_instance_destroy(struct fake_ginst *i)
{
	struct fake_ginst **link;
	int k;
	if (find_ginst(i) == NULL)
		return E_INVALID;
	if (i->inflight || i->used_by != NULL)
		return E_IN_USE;
	for (k = 0; k < i->g->nnodes; k++)
		if (i->g->nodes[k]->kind == G_SUB && i->data[k] != NULL)
			((struct fake_ginst *)i->data[k])->used_by = NULL;
	for (link = &live_ginsts; *link != i; link = &(*link)->next_live)
		;
	*link = i->next_live;
	i->g->ninst--;
	free(i);
	return E_OK;
}

EXPORT doca_error_t doca_graph_instance_set_user_data(struct fake_ginst *i, union doca_data ud)
{
	if (find_ginst(i) == NULL)
		return E_INVALID;
	if (i->inflight)
		return E_IN_USE;
	i->ud = ud;
	return E_OK;
}

EXPORT doca_error_t doca_graph_instance_get_user_data(const struct fake_ginst *i, union doca_data *ud)
{
	if (find_ginst(i) == NULL || ud == NULL)
		return E_INVALID;
	*ud = i->ud;
	return E_OK;
}

static doca_error_t settable(struct fake_ginst *i, const struct doca_graph_node *n, int kind)
{
	if (find_ginst(i) == NULL || n == NULL)
		return E_INVALID;
	if (n->g != i->g || n->kind != kind)
		return E_NOT_PERMITTED;
	return i->inflight ? E_BAD_STATE : E_OK;
}

EXPORT doca_error_t doca_graph_instance_set_ctx_node_data(struct fake_ginst *i, struct doca_graph_node *n,
							   struct doca_task *task)
{
	doca_error_t rc = settable(i, n, G_CTX);
	if (rc != E_OK)
		return rc;
	if (task == NULL || task->ctx != n->ctx)
		return E_NOT_PERMITTED;
	i->data[n->index] = task;
	return E_OK;
}

EXPORT doca_error_t doca_graph_instance_set_user_node_data(struct fake_ginst *i, struct doca_graph_node *n,
							    void *cookie)
{
	doca_error_t rc = settable(i, n, G_USER);
	if (rc == E_OK)
		i->data[n->index] = cookie;
	return rc;
}

EXPORT doca_error_t doca_graph_instance_set_sub_graph_node_data(struct fake_ginst *i, struct doca_graph_node *n,
								 struct fake_ginst *sub)
{
	doca_error_t rc = settable(i, n, G_SUB);
	if (rc != E_OK)
		return rc;
	if (find_ginst(sub) == NULL || sub->g != n->sub || sub->inflight)
		return E_NOT_PERMITTED;
	if (i->data[n->index] != NULL)
		((struct fake_ginst *)i->data[n->index])->used_by = NULL;
	sub->used_by = i;
	i->data[n->index] = sub;
	return E_OK;
}

static doca_error_t ginst_ready(const struct fake_ginst *i)
{
	int k;
	if (i->inflight)
		return E_IN_USE;
	for (k = 0; k < i->g->nnodes; k++) {
		const struct doca_graph_node *n = i->g->nodes[k];
		doca_error_t rc;
		if (n->kind == G_USER)
			continue;
		if (i->data[k] == NULL)
			return E_INVALID;
		if (n->kind == G_CTX) {
			const struct doca_task *t = i->data[k];
			if (t->freed)
				return E_INVALID;
			if (t->inflight)
				return E_IN_USE;
		} else if ((rc = ginst_ready(i->data[k])) != E_OK) {
			return rc;
		}
	}
	return E_OK;
}

static void ginst_node_done(struct fake_ginst *i, int k, doca_error_t status);

static doca_error_t ginst_begin(struct fake_ginst *i);

static doca_error_t ginst_start(struct fake_ginst *i, int k)
{
	const struct doca_graph_node *n = i->g->nodes[k];
	struct doca_pe *pe = i->g->pe;
	doca_error_t rc = E_OK;
	i->running++;
	if (n->kind == G_CTX) {
		struct doca_task *t = i->data[k];
		t->grun = i;
		t->gnode = k;
		if ((rc = doca_task_submit(t)) != E_OK)
			t->grun = NULL;
	} else if (n->kind == G_USER) {
		struct fake_gwork *w = malloc(sizeof(*w));
		if (w == NULL) {
			rc = E_NO_MEMORY;
		} else {
			w->inst = i;
			w->node = k;
			w->next = NULL;
			if (pe->gwork_tail != NULL)
				pe->gwork_tail->next = w;
			else
				pe->gwork_head = w;
			pe->gwork_tail = w;
			pe->gwork_count++;
			notify(pe);
		}
	} else {
		struct fake_ginst *sub = i->data[k];
		sub->parent = i;
		sub->parent_node = k;
		if ((rc = ginst_begin(sub)) != E_OK)
			sub->parent = NULL;
	}
	if (rc != E_OK)
		i->running--;
	return rc;
}

static doca_error_t ginst_begin(struct fake_ginst *i)
{
	int k;
	doca_error_t rc;
	for (k = 0; k < i->g->nnodes; k++)
		i->waiting[k] = i->g->nodes[k]->nbefore;
	i->running = i->finished = 0;
	i->status = E_OK;
	i->inflight = 1;
	for (k = 0; k < i->g->nnodes; k++) {
		if (i->g->nodes[k]->nbefore)
			continue;
		if ((rc = ginst_start(i, k)) != E_OK) {
			i->status = rc;
			if (i->running == 0) {
				i->inflight = 0;
				return rc;
			}
			return E_OK; /* the nodes in flight end the run, through the error callback */
		}
	}
	return E_OK;
}

static void ginst_finish(struct fake_ginst *i)
{
	struct fake_ginst *parent = i->parent;
	i->inflight = 0;
	if (parent != NULL) {
		i->parent = NULL;
		ginst_node_done(parent, i->parent_node, i->status);
		return;
	}
	(i->status == E_OK ? i->g->ok : i->g->err)(i, i->ud, i->g->ud);
}

static void ginst_node_done(struct fake_ginst *i, int k, doca_error_t status)
{
	int j;
	i->running--;
	i->finished++;
	if (status != E_OK) {
		if (i->status == E_OK)
			i->status = status;
	} else if (i->status == E_OK) {
		const struct doca_graph_node *n = i->g->nodes[k];
		for (j = 0; j < n->nafter; j++) {
			int next = n->after[j];
			doca_error_t rc;
			if (--i->waiting[next] == 0 && (rc = ginst_start(i, next)) != E_OK && i->status == E_OK)
				i->status = rc;
		}
	}
	if (i->running == 0 && (i->status != E_OK || i->finished == i->g->nnodes))
		ginst_finish(i);
}

EXPORT doca_error_t doca_graph_instance_submit(struct fake_ginst *i)
{
	doca_error_t rc;
	if (find_ginst(i) == NULL)
		return E_INVALID;
	if ((rc = ginst_ready(i)) != E_OK)
		return rc;
	return ginst_begin(i);
}

/* doca_pe_progress: a graph task's completion (its ctx's trampoline ran with user data 0). */
static void graph_task_done(struct doca_task *t)
{
	struct fake_ginst *i = t->grun;
	t->grun = NULL;
	ginst_node_done(i, t->gnode, t->status);
}

/* doca_pe_progress: the user nodes queued before this call. */
static int graph_run_users(struct doca_pe *pe)
{
	unsigned n = pe->gwork_count;
	int any = n > 0;
	for (; n > 0; n--) {
		struct fake_gwork *w = pe->gwork_head;
		struct fake_ginst *i = w->inst;
		int k = w->node;
		pe->gwork_head = w->next;
		if (pe->gwork_head == NULL)
			pe->gwork_tail = NULL;
		pe->gwork_count--;
		free(w);
		ginst_node_done(i, k, i->g->nodes[k]->fn(i->data[k]));
	}
	return any;
}
