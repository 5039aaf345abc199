/* doca_graph through libdoca, from C: a DMA node and a user node that depends on it, two instances.
 * The user node of instance 0 finds the copy and succeeds; instance 1's is told to fail and returns
 * DOCA_ERROR_BAD_STATE, which fails its run through the graph's error callback. The DMA task callbacks
 * must never run (tasks in a graph report to the graph). Prints one line per event; exits 0 when the
 * runs ended as expected. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dma.h>
#include <doca_error.h>
#include <doca_graph.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#define SIZE 512
#define NUM 2

struct run {
	int index, fail;
	uint8_t *src, *dst;
	struct doca_buf *src_buf, *dst_buf;
	struct doca_dma_task_memcpy *task;
	struct doca_graph_instance *inst;
};

static int ended_ok, ended_err, task_cbs;

#define CHECK(expr)                                                                          \
	do {                                                                                 \
		doca_error_t rc_ = (expr);                                                   \
		if (rc_ != DOCA_SUCCESS) {                                                   \
			printf("%s: %s\n", #expr, doca_error_get_name(rc_));                 \
			return 1;                                                            \
		}                                                                            \
	} while (0)

static void task_cb(struct doca_dma_task_memcpy *task, union doca_data task_ud, union doca_data ctx_ud)
{
	(void)task;
	(void)task_ud;
	(void)ctx_ud;
	task_cbs++;
}

static doca_error_t check_copy(void *cookie)
{
	struct run *r = cookie;
	size_t len = 0;
	doca_error_t rc = doca_buf_get_data_len(r->dst_buf, &len);
	if (rc != DOCA_SUCCESS)
		return rc;
	printf("user node %d: %zu bytes of 0x%02x\n", r->index, len, r->dst[0]);
	if (len != SIZE || memcmp(r->src, r->dst, SIZE) != 0 || r->fail)
		return DOCA_ERROR_BAD_STATE;
	return DOCA_SUCCESS;
}

static void done(struct doca_graph_instance *inst, union doca_data inst_ud, union doca_data graph_ud)
{
	struct run *r = inst_ud.ptr;
	printf("instance %d completed (%s)\n", r->index, (char *)graph_ud.ptr);
	(void)inst;
	ended_ok++;
}

static void failed(struct doca_graph_instance *inst, union doca_data inst_ud, union doca_data graph_ud)
{
	struct run *r = inst_ud.ptr;
	printf("instance %d failed (%s)\n", r->index, (char *)graph_ud.ptr);
	(void)inst;
	ended_err++;
}

int main(void)
{
	struct doca_devinfo **list;
	uint32_t n, i;
	struct doca_dev *dev = NULL;
	struct doca_mmap *mmap;
	struct doca_buf_inventory *inv;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_graph *graph;
	struct doca_graph_node *copy, *check;
	struct run runs[NUM];
	union doca_data ud;
	uint8_t *mem = calloc(NUM * 2, SIZE);
	static char graph_name[] = "graph user data";

	CHECK(doca_devinfo_create_list(&list, &n));
	for (i = 0; i < n && dev == NULL; i++)
		if (doca_dma_cap_task_memcpy_is_supported(list[i]) == DOCA_SUCCESS)
			CHECK(doca_dev_open(list[i], &dev));
	CHECK(doca_devinfo_destroy_list(list));
	if (dev == NULL || mem == NULL)
		return 1;
	CHECK(doca_mmap_create(&mmap));
	CHECK(doca_mmap_set_memrange(mmap, mem, NUM * 2 * SIZE));
	CHECK(doca_mmap_add_dev(mmap, dev));
	CHECK(doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE));
	CHECK(doca_mmap_start(mmap));
	CHECK(doca_buf_inventory_create(NUM * 2, &inv));
	CHECK(doca_buf_inventory_start(inv));
	CHECK(doca_pe_create(&pe));
	CHECK(doca_dma_create(dev, &dma));
	CHECK(doca_pe_connect_ctx(pe, doca_dma_as_ctx(dma)));
	CHECK(doca_dma_task_memcpy_set_conf(dma, task_cb, task_cb, NUM));
	CHECK(doca_ctx_start(doca_dma_as_ctx(dma)));

	CHECK(doca_graph_create(pe, &graph));
	CHECK(doca_graph_node_create_from_ctx(graph, doca_dma_as_ctx(dma), &copy));
	CHECK(doca_graph_node_create_from_user(graph, check_copy, &check));
	CHECK(doca_graph_add_dependency(graph, copy, check));
	CHECK(doca_graph_set_conf(graph, done, failed, NUM));
	ud.ptr = graph_name;
	CHECK(doca_graph_set_user_data(graph, ud));
	CHECK(doca_graph_start(graph));
	printf("add after start: %s\n", doca_error_get_name(doca_graph_add_dependency(graph, copy, check)));

	for (i = 0; i < NUM; i++) {
		struct run *r = &runs[i];
		r->index = (int)i;
		r->fail = i == 1;
		r->src = mem + 2 * i * SIZE;
		r->dst = r->src + SIZE;
		memset(r->src, 0x30 + (int)i, SIZE);
		CHECK(doca_buf_inventory_buf_get_by_data(inv, mmap, r->src, SIZE, &r->src_buf));
		CHECK(doca_buf_inventory_buf_get_by_addr(inv, mmap, r->dst, SIZE, &r->dst_buf));
		ud.u64 = 0;
		CHECK(doca_dma_task_memcpy_alloc_init(dma, r->src_buf, r->dst_buf, ud, &r->task));
		CHECK(doca_graph_instance_create(graph, &r->inst));
		CHECK(doca_graph_instance_set_ctx_node_data(r->inst, copy, doca_dma_task_memcpy_as_task(r->task)));
		CHECK(doca_graph_instance_set_user_node_data(r->inst, check, r));
		ud.ptr = r;
		CHECK(doca_graph_instance_set_user_data(r->inst, ud));
	}
	for (i = 0; i < NUM; i++)
		CHECK(doca_graph_instance_submit(runs[i].inst));
	printf("submit in flight: %s\n", doca_error_get_name(doca_graph_instance_submit(runs[0].inst)));
	while (ended_ok + ended_err < NUM)
		(void)doca_pe_progress(pe);
	printf("task callbacks: %d\n", task_cbs);
	printf("stop with instances: %s\n", doca_error_get_name(doca_graph_stop(graph)));

	for (i = 0; i < NUM; i++) {
		CHECK(doca_graph_instance_destroy(runs[i].inst));
		doca_task_free(doca_dma_task_memcpy_as_task(runs[i].task));
		CHECK(doca_buf_dec_refcount(runs[i].src_buf, NULL));
		CHECK(doca_buf_dec_refcount(runs[i].dst_buf, NULL));
	}
	CHECK(doca_graph_stop(graph));
	CHECK(doca_graph_destroy(graph));
	CHECK(doca_ctx_stop(doca_dma_as_ctx(dma)));
	CHECK(doca_dma_destroy(dma));
	CHECK(doca_pe_destroy(pe));
	CHECK(doca_buf_inventory_stop(inv));
	CHECK(doca_buf_inventory_destroy(inv));
	CHECK(doca_mmap_stop(mmap));
	CHECK(doca_mmap_destroy(mmap));
	CHECK(doca_dev_close(dev));
	free(mem);
	return ended_ok == 1 && ended_err == 1 && task_cbs == 0 ? 0 : 1;
}
