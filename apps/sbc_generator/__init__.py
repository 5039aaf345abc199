"""``python -m apps.sbc_generator``: build the three gga ``.sbc`` files from a plain file.

The Python counterpart of ``doca_storage_gga_offload_sbc_generator`` (storage-apps-spec
§2.5, §6.5). The input is zero-padded to whole blocks of ``B`` bytes; each block is
LZ4-compressed into the compressed-block format (§6.2); its first half goes to
``--data-1``, its second half to ``--data-2`` and the erasure-code parity of the two
halves, computed by a ``doca_py.Ec`` create task, to ``--data-p``. Each file's header
says ``block_size = B/2``.

``--verify`` (after writing) and ``--verify-only`` read the three files back, recover
each half from the other half and the parity (``Ec`` recover tasks with recover
matrices, so both matrix types are checked), decompress the blocks with
``Compress`` ``decompress_lz4_stream`` tasks and compare them with the padded input;
every bad block is reported with the file that is wrong.

Modules: `cli` (parser, ``main``), `config` (``SbcGeneratorConfig``), `generator`
(generate and verify).
"""

from __future__ import annotations

from .cli import APP_NAME, build_parser, main, parse_args
from .config import SbcGeneratorConfig
from .generator import GenerateResult, VerifyReport, generate, pad_to_blocks, verify

__all__ = ["APP_NAME", "build_parser", "parse_args", "pad_to_blocks", "GenerateResult", "generate", "VerifyReport",
           "verify", "main", "SbcGeneratorConfig"]
