"""The ``.sbc`` generator's flags (``doca_storage_gga_offload_sbc_generator``, storage-apps-spec §2.5, §6.5)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator, model_validator

from apps.common.cli.config import CommonConfig, MatrixType, existing_file, flag

__all__ = ["SbcGeneratorConfig"]


class SbcGeneratorConfig(CommonConfig):
    """``doca_storage_gga_offload_sbc_generator`` (§2.5, §6.5)."""

    device: str = flag(short="-d", metavar="DEVICE",
                       help="DOCA device with erasure-coding support: PCI address (03:00.0), IB device name "
                            "(mlx5_0) or network interface name")
    original_input_data: Path = flag(help="plain input file (padded with zeros to a whole number of blocks)",
                                     metavar="FILE")
    block_size: int = flag(4096, kind="int", help="plain block size B in bytes; a multiple of 128 so that each "
                                                  "half is a multiple of 64 bytes as doca_ec requires")
    matrix_type: MatrixType = flag("vandermonde", help="erasure-coding matrix: vandermonde or cauchy",
                                   metavar="TYPE")
    data_1: Path = flag(help="output .sbc file for the first halves of the compressed blocks", metavar="FILE")
    data_2: Path = flag(help="output .sbc file for the second halves", metavar="FILE")
    data_p: Path = flag(help="output .sbc file for the parity halves", metavar="FILE")
    verify: bool = flag(False, kind="bool", help="after writing, read the three files back, recover each half "
                                                 "from the other half and the parity, decompress and compare "
                                                 "with the input")
    verify_only: bool = flag(False, kind="bool", help="do not write anything: verify existing --data-1/--data-2/"
                                                      "--data-p files against --original-input-data")

    @field_validator("original_input_data")
    @classmethod
    def _input_exists(cls, v: Path) -> Path:
        return existing_file(v)

    @field_validator("block_size")
    @classmethod
    def _block_size(cls, v: int) -> int:
        if v <= 0 or v % 64:
            raise ValueError(f"{v} is not a positive multiple of 64")
        if v % 128:
            raise ValueError(f"{v} is a multiple of 64 but not of 128: its halves ({v // 2} bytes) would not be "
                             f"a multiple of 64 bytes, which doca_ec requires")
        if v > 0xFFFFFFFF:
            raise ValueError(f"{v} does not fit in u32")
        return v

    @model_validator(mode="after")
    def _distinct_files(self) -> SbcGeneratorConfig:
        outs = {"--data-1": self.data_1, "--data-2": self.data_2, "--data-p": self.data_p}
        seen: dict[Path, str] = {self.original_input_data.resolve(): "--original-input-data"}
        for name, path in outs.items():
            key = path.resolve()
            if key in seen:
                raise ValueError(f"{name} and {seen[key]} name the same file {str(path)!r}")
            seen[key] = name
        if self.verify_only:
            missing = [f"{n} {str(p)!r}" for n, p in outs.items() if not p.is_file()]
            if missing:
                raise ValueError(f"--verify-only needs existing files: {', '.join(missing)} not found")
        return self
