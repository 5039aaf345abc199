/*
 * DMA local copy in C, after the steps of DOCA's samples/doca_dma/dma_local_copy: copies a text from one
 * local buffer to another with a DMA memcpy task and prints the destination once the task's completion
 * callback ran and the context stopped.
 *
 * Built against libdoca (doca_py's emulator behind DOCA's C API) exactly as against DOCA:
 *
 *   python -m doca_py libdoca --out build/libdoca
 *   cc -DDOCA_ALLOW_EXPERIMENTAL_API examples/c/dma_local_copy.c -I build/libdoca/include \
 *      -L build/libdoca/lib -ldoca_dma -ldoca_common -o dma_local_copy
 *   LD_LIBRARY_PATH=build/libdoca/lib ./dma_local_copy -p 03:00.0 -t "This is a sample piece of text"
 *
 * Steps: open the device with the memcpy capability → mmaps, inventory, progress engine → DMA ctx with a
 * state-changed callback and the memcpy task configuration → connect, start → memory ranges → buffers →
 * allocate and submit the task → progress until the ctx is IDLE (the completion callback stops it) →
 * release everything in reverse order.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_dma.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_pe.h>

DOCA_LOG_REGISTER(DMA_LOCAL_COPY);

#define NUM_DMA_TASKS 1
#define MAX_TEXT_SIZE 4096
#define SLEEP_NS (10 * 1000) /* poll the progress engine every 10 microseconds when idle */

struct dma_resources {
	struct doca_dev *dev;
	struct doca_mmap *src_mmap;
	struct doca_mmap *dst_mmap;
	struct doca_buf_inventory *buf_inv;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_ctx *ctx;
	size_t num_remaining_tasks;
	bool run_pe_progress;
};

/* The first device at pci_addr that can run DMA memcpy tasks. */
static doca_error_t open_dma_device(const char *pci_addr, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t count, i;
	uint8_t equal;
	doca_error_t result;

	result = doca_devinfo_create_list(&list, &count);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to list devices: %s", doca_error_get_descr(result));
		return result;
	}
	result = DOCA_ERROR_NOT_FOUND;
	for (i = 0; i < count; i++) {
		equal = 0;
		if (doca_devinfo_is_equal_pci_addr(list[i], pci_addr, &equal) != DOCA_SUCCESS || !equal)
			continue;
		if (doca_dma_cap_task_memcpy_is_supported(list[i]) != DOCA_SUCCESS)
			continue;
		result = doca_dev_open(list[i], dev);
		if (result == DOCA_SUCCESS)
			break;
	}
	doca_devinfo_destroy_list(list);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("No device at %s can run DMA memcpy tasks: %s", pci_addr, doca_error_get_descr(result));
	return result;
}

/* Counts a finished task; the last one stops the ctx, whose IDLE state ends the progress loop. */
static void task_finished(struct doca_dma_task_memcpy *task, doca_error_t status, union doca_data task_user_data,
			  union doca_data ctx_user_data)
{
	struct dma_resources *res = ctx_user_data.ptr;
	doca_error_t *task_result = task_user_data.ptr;

	*task_result = status;
	doca_task_free(doca_dma_task_memcpy_as_task(task));
	if (--res->num_remaining_tasks == 0)
		(void)doca_ctx_stop(res->ctx);
}

static void memcpy_completed(struct doca_dma_task_memcpy *task, union doca_data task_user_data,
			     union doca_data ctx_user_data)
{
	DOCA_LOG_INFO("DMA task was completed successfully");
	task_finished(task, DOCA_SUCCESS, task_user_data, ctx_user_data);
}

static void memcpy_failed(struct doca_dma_task_memcpy *task, union doca_data task_user_data,
			  union doca_data ctx_user_data)
{
	doca_error_t status = doca_task_get_status(doca_dma_task_memcpy_as_task(task));

	DOCA_LOG_ERR("DMA task failed: %s", doca_error_get_name(status));
	task_finished(task, status, task_user_data, ctx_user_data);
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev_state,
			  enum doca_ctx_states next_state)
{
	struct dma_resources *res = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	switch (next_state) {
	case DOCA_CTX_STATE_IDLE:
		DOCA_LOG_INFO("DMA context has been stopped");
		res->run_pe_progress = false;
		break;
	case DOCA_CTX_STATE_STARTING:
		DOCA_LOG_ERR("DMA context entered into starting state. Unexpected transition");
		break;
	case DOCA_CTX_STATE_RUNNING:
		DOCA_LOG_INFO("DMA context is running");
		break;
	case DOCA_CTX_STATE_STOPPING:
		DOCA_LOG_INFO("DMA context entered into stopping state. Any inflight tasks will be flushed");
		break;
	}
}

/* Device, memory maps, inventory, progress engine and the configured DMA ctx. */
static doca_error_t create_resources(const char *pci_addr, struct dma_resources *res)
{
	union doca_data ctx_user_data = {.ptr = res};
	doca_error_t result;

	result = open_dma_device(pci_addr, &res->dev);
	if (result != DOCA_SUCCESS)
		return result;
	if ((result = doca_mmap_create(&res->src_mmap)) != DOCA_SUCCESS ||
	    (result = doca_mmap_add_dev(res->src_mmap, res->dev)) != DOCA_SUCCESS ||
	    (result = doca_mmap_create(&res->dst_mmap)) != DOCA_SUCCESS ||
	    (result = doca_mmap_add_dev(res->dst_mmap, res->dev)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create the memory maps: %s", doca_error_get_descr(result));
		return result;
	}
	if ((result = doca_buf_inventory_create(2, &res->buf_inv)) != DOCA_SUCCESS ||
	    (result = doca_buf_inventory_start(res->buf_inv)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create the buffer inventory: %s", doca_error_get_descr(result));
		return result;
	}
	if ((result = doca_pe_create(&res->pe)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create the progress engine: %s", doca_error_get_descr(result));
		return result;
	}
	if ((result = doca_dma_create(res->dev, &res->dma)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create the DMA context: %s", doca_error_get_descr(result));
		return result;
	}
	res->ctx = doca_dma_as_ctx(res->dma);
	if ((result = doca_ctx_set_state_changed_cb(res->ctx, state_changed)) != DOCA_SUCCESS ||
	    (result = doca_dma_task_memcpy_set_conf(res->dma, memcpy_completed, memcpy_failed, NUM_DMA_TASKS)) !=
		    DOCA_SUCCESS ||
	    (result = doca_ctx_set_user_data(res->ctx, ctx_user_data)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to configure the DMA context: %s", doca_error_get_descr(result));
		return result;
	}
	return DOCA_SUCCESS;
}

/* Release what create_resources made, in reverse order; keeps the first error. */
static doca_error_t destroy_resources(struct dma_resources *res)
{
	doca_error_t result = DOCA_SUCCESS;

	if (res->dma != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_dma_destroy(res->dma));
	if (res->pe != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_pe_destroy(res->pe));
	if (res->buf_inv != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_buf_inventory_destroy(res->buf_inv));
	if (res->dst_mmap != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_mmap_destroy(res->dst_mmap));
	if (res->src_mmap != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_mmap_destroy(res->src_mmap));
	if (res->dev != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_dev_close(res->dev));
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("Failed to release the DMA resources: %s", doca_error_get_descr(result));
	return result;
}

static doca_error_t dma_local_copy(const char *pci_addr, char *dst, char *src, size_t length)
{
	struct dma_resources res;
	struct doca_buf *src_buf = NULL, *dst_buf = NULL;
	struct doca_dma_task_memcpy *task = NULL;
	doca_error_t task_result = DOCA_ERROR_UNEXPECTED;
	union doca_data task_user_data = {.ptr = &task_result};
	struct timespec ts = {.tv_sec = 0, .tv_nsec = SLEEP_NS};
	doca_error_t result;

	memset(&res, 0, sizeof(res));
	result = create_resources(pci_addr, &res);
	if (result != DOCA_SUCCESS)
		goto destroy;
	if ((result = doca_pe_connect_ctx(res.pe, res.ctx)) != DOCA_SUCCESS ||
	    (result = doca_ctx_start(res.ctx)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to start the DMA context: %s", doca_error_get_descr(result));
		goto destroy;
	}
	if ((result = doca_mmap_set_memrange(res.dst_mmap, dst, length)) != DOCA_SUCCESS ||
	    (result = doca_mmap_start(res.dst_mmap)) != DOCA_SUCCESS ||
	    (result = doca_mmap_set_memrange(res.src_mmap, src, length)) != DOCA_SUCCESS ||
	    (result = doca_mmap_start(res.src_mmap)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to register the memory ranges: %s", doca_error_get_descr(result));
		goto stop;
	}
	memset(dst, 0, length);

	/* The source's data is the whole text; the destination is empty room of the same size. */
	if ((result = doca_buf_inventory_buf_get_by_data(res.buf_inv, res.src_mmap, src, length, &src_buf)) !=
		    DOCA_SUCCESS ||
	    (result = doca_buf_inventory_buf_get_by_addr(res.buf_inv, res.dst_mmap, dst, length, &dst_buf)) !=
		    DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to get the DOCA buffers: %s", doca_error_get_descr(result));
		goto release_bufs;
	}
	result = doca_dma_task_memcpy_alloc_init(res.dma, src_buf, dst_buf, task_user_data, &task);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to allocate the DMA memcpy task: %s", doca_error_get_descr(result));
		goto release_bufs;
	}
	res.num_remaining_tasks = 1;
	result = doca_task_submit(doca_dma_task_memcpy_as_task(task));
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to submit the DMA task: %s", doca_error_get_descr(result));
		doca_task_free(doca_dma_task_memcpy_as_task(task));
		goto release_bufs;
	}

	/* The copy is done, and visible, only once its completion was delivered by progress. */
	res.run_pe_progress = true;
	while (res.run_pe_progress) {
		if (doca_pe_progress(res.pe) == 0)
			nanosleep(&ts, NULL);
	}

	result = task_result;
	if (result == DOCA_SUCCESS) {
		DOCA_LOG_INFO("Success, memory copied and verified as correct");
		DOCA_LOG_INFO("Destination buffer holds: \"%s\"", dst);
	} else {
		DOCA_LOG_ERR("DMA memcpy task failed: %s", doca_error_get_descr(result));
	}

release_bufs:
	if (dst_buf != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_buf_dec_refcount(dst_buf, NULL));
	if (src_buf != NULL)
		DOCA_ERROR_PROPAGATE(result, doca_buf_dec_refcount(src_buf, NULL));
stop:
	/* Already IDLE after a completed copy: stopping an idle ctx succeeds. */
	DOCA_ERROR_PROPAGATE(result, doca_ctx_stop(res.ctx));
destroy:
	DOCA_ERROR_PROPAGATE(result, destroy_resources(&res));
	return result;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-p PCI_ADDR] [-t TEXT]\n", prog);
}

int main(int argc, char **argv)
{
	const char *pci_addr = "03:00.0";
	const char *text = "This is a sample piece of text";
	char *src, *dst;
	size_t length;
	doca_error_t result;
	int opt;

	while ((opt = getopt(argc, argv, "p:t:h")) != -1) {
		switch (opt) {
		case 'p':
			pci_addr = optarg;
			break;
		case 't':
			text = optarg;
			break;
		default:
			usage(argv[0]);
			return opt == 'h' ? EXIT_SUCCESS : EXIT_FAILURE;
		}
	}
	length = strlen(text) + 1; /* the text and its NUL, as the C sample copies it */
	if (length > MAX_TEXT_SIZE) {
		fprintf(stderr, "the text exceeds %d bytes\n", MAX_TEXT_SIZE - 1);
		return EXIT_FAILURE;
	}

	result = doca_log_backend_create_standard();
	if (result != DOCA_SUCCESS) {
		fprintf(stderr, "Failed to create the log backend: %s\n", doca_error_get_descr(result));
		return EXIT_FAILURE;
	}

	/* Two distinct buffers: DMA copies between memory ranges that must not overlap. */
	src = malloc(length);
	dst = malloc(length);
	if (src == NULL || dst == NULL) {
		DOCA_LOG_ERR("Failed to allocate the buffers");
		free(src);
		free(dst);
		return EXIT_FAILURE;
	}
	memcpy(src, text, length);

	DOCA_LOG_INFO("Starting the sample");
	result = dma_local_copy(pci_addr, dst, src, length);
	free(src);
	free(dst);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("dma_local_copy() encountered an error: %s", doca_error_get_descr(result));
		DOCA_LOG_INFO("Sample finished with errors");
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("Sample finished successfully");
	return EXIT_SUCCESS;
}
