# python-lz4 lz4.block: the parts doca_py uses.
from typing_extensions import Buffer

class LZ4BlockError(Exception): ...

def compress(
    source: Buffer,
    mode: str = ...,
    store_size: bool = ...,
    acceleration: int = ...,
    compression: int = ...,
    return_bytearray: bool = ...,
    dict: Buffer | None = ...,
) -> bytes: ...
def decompress(
    source: Buffer,
    uncompressed_size: int = ...,
    return_bytearray: bool = ...,
    dict: Buffer | None = ...,
) -> bytes: ...
