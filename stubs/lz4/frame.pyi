# python-lz4 lz4.frame: the parts doca_py uses.
from typing import Any

from typing_extensions import Buffer

BLOCKSIZE_DEFAULT: int
BLOCKSIZE_MAX64KB: int
BLOCKSIZE_MAX256KB: int
BLOCKSIZE_MAX1MB: int
BLOCKSIZE_MAX4MB: int
COMPRESSIONLEVEL_MIN: int
COMPRESSIONLEVEL_MINHC: int
COMPRESSIONLEVEL_MAX: int

def compress(
    data: Buffer,
    compression_level: int = ...,
    block_size: int = ...,
    content_checksum: bool = ...,
    block_checksum: bool = ...,
    block_linked: bool = ...,
    store_size: bool = ...,
    return_bytearray: bool = ...,
) -> bytes: ...
def decompress(
    data: Buffer,
    return_bytearray: bool = ...,
    return_bytes_read: bool = ...,
) -> bytes: ...
def get_frame_info(frame: Buffer) -> dict[str, Any]: ...
