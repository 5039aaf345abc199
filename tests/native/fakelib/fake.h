/* What every fake DOCA library shares: the ABI types and the error codes it returns.
 *
 * The build (tests/native/fakelib/__init__.py) force-includes a generated params.h
 * first, with the constants the tests compare against (FAKE_VERSION, RECV_DATA, ...),
 * so the values live in one place: the Python module.
 */
#ifndef FAKE_DOCA_H
#define FAKE_DOCA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int doca_error_t;
union doca_data { void *ptr; uint64_t u64; };
struct doca_ctx;
struct doca_task;
typedef void (*task_cb_t)(void *, union doca_data, union doca_data);

/* The fake libdoca_common's doca_buf; the other fakes read and write bufs through it.
 * The fields after refcount are the common's (inventory and list bookkeeping). */
struct fake_inv;
struct fake_mmap;
struct doca_buf {
	void *head; size_t len; void *data; size_t data_len; uint16_t refcount;
	struct doca_buf *next;  /* the next element of the list this buf heads or is in */
	struct doca_buf *first; /* the head of its list, NULL when it is a head */
	struct fake_inv *inv;   /* NULL: a bare descriptor (an inventory the fake does not know) */
	struct fake_mmap *mmap;
	struct doca_buf *free_next;
};

/* The fake common's doca_mmap (the engines check that a buf's map has their device). */
#define MAX_MMAP_DEVS 8
enum { PERM_RDMA = 2 | 4 | 8, PERM_PCI = 16 | 32 };
struct fake_mmap {
	struct fake_mmap *next_live;
	uint64_t id;
	void *addr;
	size_t len;
	uint32_t perms, nbufs, ndevs, max_devs;
	int has_range, started, thread_safe, exported, from_export;
	struct doca_dev *devs[MAX_MMAP_DEVS];
	uint64_t blob[6]; /* a struct blob, aligned */
};

/* doca_error_t values (doca_error.h); tests/native/test_fakelib.py checks them against doca_py.errors. */
enum {
	E_OK = 0, E_NOT_PERMITTED = 2, E_IN_USE = 3, E_NOT_SUPPORTED = 4, E_AGAIN = 5, E_INVALID = 6, E_NO_MEMORY = 7,
	E_CONNECTION_ABORTED = 12, E_NOT_CONNECTED = 14, E_NOT_FOUND = 16, E_IO_FAILED = 17, E_BAD_STATE = 18,
	E_UNSUPPORTED_VERSION = 19, E_ALREADY_EXIST = 23, E_FULL = 24,
};
enum { S_IDLE = 0, S_RUNNING = 2 };

#endif
