"""libdoca's compress and erasure coding: C programs, DOCA 2.6's LZ4 task, and the engine suites through the
native backend over libdoca 2.6 and 3.0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .cbuild import compile_c, run_c
from .env import native_env

ROOT = Path(__file__).resolve().parents[2]

DECLS = r"""
struct doca_dev; struct doca_devinfo; struct doca_ctx; struct doca_pe; struct doca_task; struct doca_mmap;
struct doca_buf_inventory; struct doca_buf; struct doca_ec; struct doca_ec_matrix; struct doca_compress;
typedef void (*task_cb)(struct doca_task *, union doca_data, union doca_data);
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***, uint32_t *);
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **);
doca_error_t doca_dev_open(struct doca_devinfo *, struct doca_dev **);
doca_error_t doca_dev_close(struct doca_dev *);
struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *);
doca_error_t doca_pe_create(struct doca_pe **);
doca_error_t doca_pe_destroy(struct doca_pe *);
uint8_t doca_pe_progress(struct doca_pe *);
doca_error_t doca_pe_connect_ctx(struct doca_pe *, struct doca_ctx *);
doca_error_t doca_ctx_start(struct doca_ctx *);
doca_error_t doca_ctx_stop(struct doca_ctx *);
doca_error_t doca_task_submit(struct doca_task *);
doca_error_t doca_task_get_status(const struct doca_task *);
void doca_task_free(struct doca_task *);
doca_error_t doca_mmap_create(struct doca_mmap **);
doca_error_t doca_mmap_set_memrange(struct doca_mmap *, void *, size_t);
doca_error_t doca_mmap_add_dev(struct doca_mmap *, struct doca_dev *);
doca_error_t doca_mmap_start(struct doca_mmap *);
doca_error_t doca_mmap_stop(struct doca_mmap *);
doca_error_t doca_mmap_destroy(struct doca_mmap *);
doca_error_t doca_buf_inventory_create(size_t, struct doca_buf_inventory **);
doca_error_t doca_buf_inventory_start(struct doca_buf_inventory *);
doca_error_t doca_buf_inventory_destroy(struct doca_buf_inventory *);
doca_error_t doca_buf_inventory_buf_get_by_args(struct doca_buf_inventory *, struct doca_mmap *, void *, size_t,
						void *, size_t, struct doca_buf **);
doca_error_t doca_buf_get_data_len(const struct doca_buf *, size_t *);
doca_error_t doca_buf_dec_refcount(struct doca_buf *, uint16_t *);
doca_error_t doca_ec_create(struct doca_dev *, struct doca_ec **);
doca_error_t doca_ec_destroy(struct doca_ec *);
struct doca_ctx *doca_ec_as_ctx(struct doca_ec *);
doca_error_t doca_ec_cap_get_max_block_size(const struct doca_devinfo *, uint64_t *);
doca_error_t doca_ec_cap_task_galois_mul_is_supported(const struct doca_devinfo *);
doca_error_t doca_ec_matrix_create_from_raw(struct doca_ec *, uint8_t *, size_t, size_t, struct doca_ec_matrix **);
doca_error_t doca_ec_matrix_create(struct doca_ec *, int, size_t, size_t, struct doca_ec_matrix **);
doca_error_t doca_ec_matrix_create_recover(struct doca_ec *, const struct doca_ec_matrix *, uint32_t *, size_t,
					   struct doca_ec_matrix **);
doca_error_t doca_ec_matrix_destroy(struct doca_ec_matrix *);
doca_error_t doca_ec_task_galois_mul_set_conf(struct doca_ec *, task_cb, task_cb, uint32_t);
doca_error_t doca_ec_task_galois_mul_allocate_init(struct doca_ec *, const struct doca_ec_matrix *,
						   struct doca_buf *, struct doca_buf *, union doca_data, void **);
struct doca_task *doca_ec_task_galois_mul_as_task(void *);
const struct doca_ec_matrix *doca_ec_task_galois_mul_get_coding_matrix(const void *);
const struct doca_buf *doca_ec_task_galois_mul_get_src_buf(const void *);
struct doca_buf *doca_ec_task_galois_mul_get_dst_buf(const void *);
const struct doca_buf *doca_ec_task_recover_get_available_blocks(const void *);
doca_error_t doca_compress_create(struct doca_dev *, struct doca_compress **);
doca_error_t doca_compress_destroy(struct doca_compress *);
struct doca_ctx *doca_compress_as_ctx(struct doca_compress *);
doca_error_t doca_compress_task_compress_deflate_set_conf(struct doca_compress *, task_cb, task_cb, uint32_t);
doca_error_t doca_compress_task_compress_deflate_alloc_init(struct doca_compress *, const struct doca_buf *,
							     struct doca_buf *, union doca_data, void **);
struct doca_task *doca_compress_task_compress_deflate_as_task(void *);
uint32_t doca_compress_task_compress_deflate_get_crc_cs(const void *);
uint32_t doca_compress_task_compress_deflate_get_adler_cs(const void *);
const struct doca_buf *doca_compress_task_decompress_deflate_get_src(const void *);

static int done, failed;
static void ok(struct doca_task *t, union doca_data ud, union doca_data cud) { done++; }
static void err(struct doca_task *t, union doca_data ud, union doca_data cud) { done++; failed++; }
"""


def test_ec_galois_mul_from_c_with_a_raw_matrix_and_the_task_getters(tmp_path: Path) -> None:
    """A 2x1 raw matrix {2, 3}: the output block is 2*a ^ 3*b over GF(2^8); the task's getters give back the
    handles it was made with, and another task type's getter refuses it (NULL)."""
    src = DECLS + r"""
int main(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_ec *ec;
	struct doca_ec_matrix *m, *rec;
	struct doca_mmap *mm;
	struct doca_buf_inventory *inv;
	struct doca_buf *in, *out;
	static uint8_t mem[4 * 64] __attribute__((aligned(64)));
	uint8_t raw[2] = {2, 3};
	uint32_t missing[1] = {0};
	uint64_t max_block;
	uint32_t n;
	size_t len;
	void *t;
	CHECK(doca_devinfo_create_list(&list, &n));
	CHECK(doca_dev_open(list[0], &dev));
	CHECK(doca_devinfo_destroy_list(list));
	CHECK(doca_ec_cap_task_galois_mul_is_supported(doca_dev_as_devinfo(dev)));
	CHECK(doca_ec_cap_get_max_block_size(doca_dev_as_devinfo(dev), &max_block));
	memset(mem, 0x01, 64);       /* a */
	memset(mem + 64, 0x02, 64);  /* b */
	CHECK(doca_mmap_create(&mm));
	CHECK(doca_mmap_set_memrange(mm, mem, sizeof(mem)));
	CHECK(doca_mmap_add_dev(mm, dev));
	CHECK(doca_mmap_start(mm));
	CHECK(doca_buf_inventory_create(2, &inv));
	CHECK(doca_buf_inventory_start(inv));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem, 128, mem, 128, &in));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem + 128, 128, mem + 128, 0, &out));
	CHECK(doca_pe_create(&pe));
	CHECK(doca_ec_create(dev, &ec));
	CHECK(doca_pe_connect_ctx(pe, doca_ec_as_ctx(ec)));
	CHECK(doca_ec_task_galois_mul_set_conf(ec, ok, err, 2));
	CHECK(doca_ctx_start(doca_ec_as_ctx(ec)));
	CHECK(doca_ec_matrix_create_from_raw(ec, raw, 2, 1, &m));
	CHECK(doca_ec_matrix_create(ec, 1, 2, 1, &rec)); /* Cauchy */
	CHECK(doca_ec_matrix_destroy(rec));
	CHECK(doca_ec_matrix_create_recover(ec, m, missing, 1, &rec));
	CHECK(doca_ec_task_galois_mul_allocate_init(ec, m, in, out, (union doca_data){.u64 = 5}, &t));
	printf("getters %d %d %d %d\n", doca_ec_task_galois_mul_get_coding_matrix(t) == m,
	       doca_ec_task_galois_mul_get_src_buf(t) == in, doca_ec_task_galois_mul_get_dst_buf(t) == out,
	       doca_ec_task_recover_get_available_blocks(t) == NULL);
	CHECK(doca_task_submit(doca_ec_task_galois_mul_as_task(t)));
	while (!done)
		doca_pe_progress(pe);
	CHECK(doca_buf_get_data_len(out, &len));
	printf("failed %d len %zu out %#x %#x\n", failed, len, mem[128], mem[128 + 63]);
	doca_task_free(doca_ec_task_galois_mul_as_task(t));
	CHECK(doca_ec_matrix_destroy(rec));
	CHECK(doca_ec_matrix_destroy(m));
	printf("destroyed twice: %d\n", doca_ec_matrix_destroy(m));
	CHECK(doca_ctx_stop(doca_ec_as_ctx(ec)));
	CHECK(doca_ec_destroy(ec));
	CHECK(doca_pe_destroy(pe));
	CHECK(doca_buf_dec_refcount(in, NULL));
	CHECK(doca_buf_dec_refcount(out, NULL));
	CHECK(doca_buf_inventory_destroy(inv));
	CHECK(doca_mmap_stop(mm));
	CHECK(doca_mmap_destroy(mm));
	CHECK(doca_dev_close(dev));
	return 0;
}
"""
    proc = run_c(compile_c(tmp_path, src, libs=("common", "erasure_coding")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 2*1 ^ 3*2 = 2 ^ 6 = 4 (GF(2^8) products of small values without reduction)
    assert proc.stdout == "getters 1 1 1 1\nfailed 0 len 64 out 0x4 0x4\ndestroyed twice: 6\n", proc.stderr


def test_compress_deflate_from_c_reports_both_checksums(tmp_path: Path) -> None:
    src = DECLS + r"""
int main(void)
{
	struct doca_devinfo **list;
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_compress *c;
	struct doca_mmap *mm;
	struct doca_buf_inventory *inv;
	struct doca_buf *in, *out;
	static uint8_t mem[8192];
	uint32_t n;
	size_t len;
	void *t;
	memcpy(mem, "hello hello hello hello", 23);
	CHECK(doca_devinfo_create_list(&list, &n));
	CHECK(doca_dev_open(list[0], &dev));
	CHECK(doca_devinfo_destroy_list(list));
	CHECK(doca_mmap_create(&mm));
	CHECK(doca_mmap_set_memrange(mm, mem, sizeof(mem)));
	CHECK(doca_mmap_add_dev(mm, dev));
	CHECK(doca_mmap_start(mm));
	CHECK(doca_buf_inventory_create(2, &inv));
	CHECK(doca_buf_inventory_start(inv));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem, 23, mem, 23, &in));
	CHECK(doca_buf_inventory_buf_get_by_args(inv, mm, mem + 4096, 4096, mem + 4096, 0, &out));
	CHECK(doca_pe_create(&pe));
	CHECK(doca_compress_create(dev, &c));
	CHECK(doca_pe_connect_ctx(pe, doca_compress_as_ctx(c)));
	CHECK(doca_compress_task_compress_deflate_set_conf(c, ok, err, 1));
	CHECK(doca_ctx_start(doca_compress_as_ctx(c)));
	CHECK(doca_compress_task_compress_deflate_alloc_init(c, in, out, (union doca_data){.u64 = 0}, &t));
	printf("other type's getter: %d\n", doca_compress_task_decompress_deflate_get_src(t) == NULL);
	CHECK(doca_task_submit(doca_compress_task_compress_deflate_as_task(t)));
	while (!done)
		doca_pe_progress(pe);
	CHECK(doca_buf_get_data_len(out, &len));
	printf("failed %d deflated %d crc %#x adler %#x\n", failed, len > 0 && len < 23,
	       doca_compress_task_compress_deflate_get_crc_cs(t), doca_compress_task_compress_deflate_get_adler_cs(t));
	doca_task_free(doca_compress_task_compress_deflate_as_task(t));
	CHECK(doca_ctx_stop(doca_compress_as_ctx(c)));
	CHECK(doca_compress_destroy(c));
	CHECK(doca_pe_destroy(pe));
	CHECK(doca_buf_dec_refcount(in, NULL));
	CHECK(doca_buf_dec_refcount(out, NULL));
	CHECK(doca_buf_inventory_destroy(inv));
	CHECK(doca_mmap_stop(mm));
	CHECK(doca_mmap_destroy(mm));
	CHECK(doca_dev_close(dev));
	return 0;
}
"""
    import zlib

    proc = run_c(compile_c(tmp_path, src, libs=("common", "compress")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = b"hello hello hello hello"
    assert proc.stdout == (f"other type's getter: 1\nfailed 0 deflated 1 crc {zlib.crc32(data):#x} "
                           f"adler {zlib.adler32(data):#x}\n"), proc.stderr


def test_doca_26_lz4_task_decodes_independent_blocks_with_crc_and_adler() -> None:
    """DOCA 2.6 has one LZ4 task (no flags; CRC and Adler-32): the native backend's LZ4-stream task goes through
    it for independent blocks without block checksums, and refuses the LZ4 block task 2.6 lacks."""
    code = r"""
import zlib
import doca_py as d
from doca_py.engines import lz4_stream
from doca_py.native.capi.compress import load_compress
plain = b"doca over libdoca 2.6 " * 500
stream = lz4_stream.compress_stream(plain, block_checksum=False, block_linked=False)
with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe, d.BufInventory(2) as inv:
    info = dev.as_devinfo()
    print("block task:", d.Compress.cap_task_is_supported(info, "decompress_lz4_block"))
    mm = d.Mmap()
    mm.allocate(1 << 16)
    mm.add_dev(dev)
    mm.start()
    base = mm.get_memrange()[0]
    mm.buffer[:len(stream)] = stream
    src = inv.buf_get_by_data(mm, base, len(stream))
    dst = inv.buf_get_by_addr(mm, base + 32768, 32768)
    c = d.Compress(dev)
    pe.connect_ctx(c)
    done = []
    c.task_decompress_lz4_stream_set_conf(lambda t, u, x: done.append("ok"), lambda t, u, x: done.append("err"), 1)
    c.start()
    t = c.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    t.submit()
    while not done:
        pe.progress()
    adler = load_compress().doca_compress_task_decompress_lz4_get_adler_cs(t.handle)  # 2.6's second checksum
    try:
        t.get_xxh_cs()
    except d.errors.DocaNotSupported as exc:
        print("xxh:", "adler_cs" in str(exc))
    print(done[0], bytes(dst.data_view()) == plain, t.get_crc_cs() == zlib.crc32(plain),
          adler == zlib.adler32(plain))
    t.free()
    c.stop()
    while pe.progress():
        pass
    c.close()
    src.dec_refcount()
    dst.dec_refcount()
    mm.close()
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=native_env("2.6"), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "block task: False\nxxh: True\nok True True True\n", proc.stdout + proc.stderr


#: Per DOCA version, what runs through the native backend over its libdoca: DOCA 2.6 has no LZ4 block task and
#: only the flagless LZ4 task, which the compress suites and LZ4 samples need beyond DEFLATE.
_EXAMPLES = "tests/examples/test_examples.py::test_"
_BOTH = ("dma_local_copy", "erasure_coding_encode_then_decode", "erasure_coding_recover_both",
         "compress_deflate_then_decompress", "compress_deflate_with_zlib_frame")
SUITES = {
    "2.6": ["tests/offload/test_ec_ctx.py", "tests/conformance/test_handles.py", *(_EXAMPLES + n for n in _BOTH)],
    "3.0": ["tests/offload", "tests/conformance/test_handles.py",
            *(_EXAMPLES + n for n in (*_BOTH, "decompress_lz4_frame", "decompress_lz4_stream_without_frame",
                                      "decompress_lz4_frame_with_content_checksum", "cache_invalidate"))],
}


@pytest.mark.parametrize("version", sorted(SUITES))
def test_engine_suites_through_libdoca(version: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", *SUITES[version], "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "--doca-version", version], cwd=ROOT, env=native_env(version),
                          capture_output=True, text=True, timeout=900, check=False)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail, tail
