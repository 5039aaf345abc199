/*
 * Comch control-path client in C, after the steps of DOCA's samples/doca_comch/comch_ctrl_path_client:
 * connects to the server "comch_ctrl_path_sample_server", sends it a text, prints the server's answer
 * and stops. The server can be any DOCA comch ctrl-path server — here doca_py's Python port:
 *
 *   python -m doca_py libdoca --out build/libdoca
 *   cc -DDOCA_ALLOW_EXPERIMENTAL_API examples/c/comch_ctrl_path_client.c -I build/libdoca/include \
 *      -L build/libdoca/lib -ldoca_comch -ldoca_common -o comch_ctrl_path_client
 *   python examples/comch_ctrl_path_server.py -p 03:00.0 -r 3b:00.0 -t "Message from the server" &
 *   LD_LIBRARY_PATH=build/libdoca/lib ./comch_ctrl_path_client -p 3b:00.0 -t "Message from the client"
 *
 * Steps: open the device → progress engine, client, state-changed callback, send task configuration,
 * message event, properties, start (IN_PROGRESS: the client connects inside progress) → on RUNNING, send
 * the text on the connection → the answer's message event stops the client → progress until IDLE →
 * destroy the client and the progress engine, close the device.
 *
 * One difference from DOCA's sample: the answer can arrive before the completion of the client's own send
 * (they are independent events), and stopping the ctx then would flush that send as a failure. The client
 * stops only once no send of its own is in flight.
 *
 * DOCA 3.x (doca_comch_*); DOCA 2.6 spelled this API doca_cc_* in doca_cc.h.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_comch.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_pe.h>

DOCA_LOG_REGISTER(COMCH_CTRL_PATH_CLIENT);

#define SERVER_NAME "comch_ctrl_path_sample_server"
#define MAX_TEXT_SIZE 4080	 /* the sample's limit on the text */
#define RECV_QUEUE_SIZE 10	 /* messages the client can hold before progress takes them */
#define NUM_SEND_TASKS 1024
#define SLEEP_NS (10 * 1000) /* poll the progress engine every 10 microseconds when idle */

struct client_objects {
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_comch_client *client;
	const char *text;
	uint32_t text_len;
	doca_error_t result;	 /* what the callbacks report */
	uint32_t sends_in_flight; /* submitted sends whose completion has not been delivered yet */
	bool stop_requested;	 /* stop once sends_in_flight is 0 */
	bool finish;		 /* the client is IDLE again: end the progress loop */
};

static void stop_client(struct client_objects *obj)
{
	obj->stop_requested = true;
	if (obj->sends_in_flight == 0)
		(void)doca_ctx_stop(doca_comch_client_as_ctx(obj->client));
}

/* A send's completion was delivered: carry out a stop that waited for it. */
static void send_done(struct client_objects *obj, struct doca_comch_task_send *task)
{
	doca_task_free(doca_comch_task_send_as_task(task));
	obj->sends_in_flight--;
	if (obj->stop_requested && obj->sends_in_flight == 0)
		(void)doca_ctx_stop(doca_comch_client_as_ctx(obj->client));
}

static void send_completed(struct doca_comch_task_send *task, union doca_data task_user_data,
			   union doca_data ctx_user_data)
{
	struct client_objects *obj = ctx_user_data.ptr;

	(void)task_user_data;
	obj->result = DOCA_SUCCESS;
	DOCA_LOG_INFO("Task sent successfully");
	send_done(obj, task);
}

static void send_failed(struct doca_comch_task_send *task, union doca_data task_user_data,
			union doca_data ctx_user_data)
{
	struct client_objects *obj = ctx_user_data.ptr;

	(void)task_user_data;
	obj->result = doca_task_get_status(doca_comch_task_send_as_task(task));
	DOCA_LOG_ERR("Message failed to send with error = %s", doca_error_get_name(obj->result));
	obj->stop_requested = true;
	send_done(obj, task);
}

/* The server's answer: valid only during the call. The client is done once it has it. */
static void message_received(struct doca_comch_event_msg_recv *event, uint8_t *recv_buffer, uint32_t msg_len,
			     struct doca_comch_connection *connection)
{
	struct client_objects *obj = doca_comch_connection_get_user_data(connection).ptr;

	(void)event;
	DOCA_LOG_INFO("Message received: '%.*s'", (int)msg_len, (const char *)recv_buffer);
	stop_client(obj);
}

/* Send the text on the client's connection (called once the client is RUNNING, i.e. connected). */
static doca_error_t send_text(struct client_objects *obj)
{
	struct doca_comch_connection *connection;
	struct doca_comch_task_send *task;
	union doca_data user_data = {.ptr = obj};
	doca_error_t result;

	result = doca_comch_client_get_connection(obj->client, &connection);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to get connection from client with error = %s", doca_error_get_name(result));
		return result;
	}
	result = doca_comch_connection_set_user_data(connection, user_data);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to set user_data for connection with error = %s", doca_error_get_name(result));
		return result;
	}
	result = doca_comch_client_task_send_alloc_init(obj->client, connection, obj->text, obj->text_len, &task);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to allocate task in client with error = %s", doca_error_get_name(result));
		return result;
	}
	result = doca_task_submit(doca_comch_task_send_as_task(task));
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed submitting send task with error = %s", doca_error_get_name(result));
		doca_task_free(doca_comch_task_send_as_task(task));
		return result;
	}
	obj->sends_in_flight++;
	return DOCA_SUCCESS;
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev_state,
			  enum doca_ctx_states next_state)
{
	struct client_objects *obj = user_data.ptr;

	(void)ctx;
	(void)prev_state;
	switch (next_state) {
	case DOCA_CTX_STATE_IDLE:
		DOCA_LOG_INFO("CC client context has been stopped");
		obj->finish = true;
		break;
	case DOCA_CTX_STATE_STARTING:
		DOCA_LOG_INFO("CC client context entered into starting state. Waiting for connection establishment");
		break;
	case DOCA_CTX_STATE_RUNNING:
		DOCA_LOG_INFO("CC client context is running. Sending message");
		obj->result = send_text(obj);
		if (obj->result != DOCA_SUCCESS)
			stop_client(obj);
		break;
	case DOCA_CTX_STATE_STOPPING:
		DOCA_LOG_INFO("CC client context entered into stopping state. Waiting for connection termination");
		break;
	}
}

/* The first device at pci_addr that can be a comch client. */
static doca_error_t open_client_device(const char *pci_addr, struct doca_dev **dev)
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
		if (doca_comch_cap_client_is_supported(list[i]) != DOCA_SUCCESS)
			continue;
		result = doca_dev_open(list[i], dev);
		if (result == DOCA_SUCCESS)
			break;
	}
	doca_devinfo_destroy_list(list);
	if (result != DOCA_SUCCESS)
		DOCA_LOG_ERR("No device at %s can be a comch client: %s", pci_addr, doca_error_get_descr(result));
	return result;
}

/* Progress engine and client, configured and started (connecting). */
static doca_error_t init_client(struct client_objects *obj)
{
	union doca_data user_data = {.ptr = obj};
	struct doca_ctx *ctx;
	uint32_t max_msg_size;
	doca_error_t result;

	if ((result = doca_pe_create(&obj->pe)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed creating pe with error = %s", doca_error_get_name(result));
		return result;
	}
	if ((result = doca_comch_client_create(obj->dev, SERVER_NAME, &obj->client)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to create client with error = %s", doca_error_get_name(result));
		return result;
	}
	ctx = doca_comch_client_as_ctx(obj->client);
	if ((result = doca_pe_connect_ctx(obj->pe, ctx)) != DOCA_SUCCESS ||
	    (result = doca_ctx_set_state_changed_cb(ctx, state_changed)) != DOCA_SUCCESS ||
	    (result = doca_comch_client_task_send_set_conf(obj->client, send_completed, send_failed,
							   NUM_SEND_TASKS)) != DOCA_SUCCESS ||
	    (result = doca_comch_client_event_msg_recv_register(obj->client, message_received)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to configure the client with error = %s", doca_error_get_name(result));
		return result;
	}
	if ((result = doca_comch_cap_get_max_msg_size(doca_dev_as_devinfo(obj->dev), &max_msg_size)) != DOCA_SUCCESS ||
	    (result = doca_comch_client_set_max_msg_size(obj->client, max_msg_size)) != DOCA_SUCCESS ||
	    (result = doca_comch_client_set_recv_queue_size(obj->client, RECV_QUEUE_SIZE)) != DOCA_SUCCESS ||
	    (result = doca_ctx_set_user_data(ctx, user_data)) != DOCA_SUCCESS) {
		DOCA_LOG_ERR("Failed to set the client's properties with error = %s", doca_error_get_name(result));
		return result;
	}
	if (obj->text_len > max_msg_size) {
		DOCA_LOG_ERR("The text (%u bytes) is larger than a message (%u bytes)", obj->text_len, max_msg_size);
		return DOCA_ERROR_INVALID_VALUE;
	}
	/* A client starts connecting: it is RUNNING only once progress established the connection. */
	result = doca_ctx_start(ctx);
	if (result != DOCA_ERROR_IN_PROGRESS) {
		DOCA_LOG_ERR("Failed to start client context with error = %s", doca_error_get_name(result));
		return result == DOCA_SUCCESS ? DOCA_ERROR_UNEXPECTED : result;
	}
	return DOCA_SUCCESS;
}

static void clean_client(struct client_objects *obj)
{
	doca_error_t result;

	if (obj->client != NULL && (result = doca_comch_client_destroy(obj->client)) != DOCA_SUCCESS)
		DOCA_LOG_ERR("Failed to destroy client properly with error = %s", doca_error_get_name(result));
	if (obj->pe != NULL && (result = doca_pe_destroy(obj->pe)) != DOCA_SUCCESS)
		DOCA_LOG_ERR("Failed to destroy pe properly with error = %s", doca_error_get_name(result));
	if (obj->dev != NULL && (result = doca_dev_close(obj->dev)) != DOCA_SUCCESS)
		DOCA_LOG_ERR("Failed to close hw device properly with error = %s", doca_error_get_name(result));
}

static doca_error_t run_client(const char *pci_addr, const char *text)
{
	struct client_objects obj;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = SLEEP_NS};
	doca_error_t result;

	memset(&obj, 0, sizeof(obj));
	obj.text = text;
	obj.text_len = (uint32_t)strlen(text);
	result = open_client_device(pci_addr, &obj.dev);
	if (result == DOCA_SUCCESS)
		result = init_client(&obj);
	if (result == DOCA_SUCCESS) {
		while (!obj.finish) {
			if (doca_pe_progress(obj.pe) == 0)
				nanosleep(&ts, NULL);
		}
		result = obj.result;
	}
	clean_client(&obj);
	return result;
}

int main(int argc, char **argv)
{
	const char *pci_addr = "3b:00.0"; /* the host PF of the emulated registry (DOCA's sample: b1:00.0) */
	const char *text = "Message from the client";
	struct doca_log_backend *sdk_log;
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
			fprintf(stderr, "usage: %s [-p PCI_ADDR] [-t TEXT]\n", argv[0]);
			return opt == 'h' ? EXIT_SUCCESS : EXIT_FAILURE;
		}
	}
	if (strlen(text) > MAX_TEXT_SIZE) {
		fprintf(stderr, "the text exceeds %d bytes\n", MAX_TEXT_SIZE);
		return EXIT_FAILURE;
	}

	/* Application messages to stdout/stderr; the SDK's own (the emulator's) warnings to stderr. */
	if ((result = doca_log_backend_create_standard()) != DOCA_SUCCESS ||
	    (result = doca_log_backend_create_with_file_sdk(stderr, &sdk_log)) != DOCA_SUCCESS ||
	    (result = doca_log_backend_set_sdk_level(sdk_log, DOCA_LOG_LEVEL_WARNING)) != DOCA_SUCCESS) {
		fprintf(stderr, "Failed to set up logging: %s\n", doca_error_get_descr(result));
		return EXIT_FAILURE;
	}

	DOCA_LOG_INFO("Starting the sample");
	result = run_client(pci_addr, text);
	if (result != DOCA_SUCCESS) {
		DOCA_LOG_ERR("comch_ctrl_path_client() encountered an error: %s", doca_error_get_descr(result));
		DOCA_LOG_INFO("Sample finished with errors");
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("Sample finished successfully");
	return EXIT_SUCCESS;
}
