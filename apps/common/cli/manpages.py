"""Man pages for the console scripts, rendered by argparse-manpage from each ``build_parser()``.

```pycon
>>> from apps.sbc_generator import build_parser
>>> page = build_manpage(build_parser())          # roff text, section 1
>>> page.splitlines()[0].split()[:2]                # the title fits an 80-column header (TITLE_WIDTH)
['.TH', 'GGA_OFFLOAD_SBC_GENERATOR']

```

`PROGRAMS` maps each installed program (``[project.scripts]`` in pyproject.toml,
named like the DOCA binaries) to the module whose ``build_parser()`` describes it;
`write_manpages` writes one ``<program>.1`` each (the wheel build installs them
under ``share/man/man1``; the documentation build puts them in ``man/`` of the site).

Besides what argparse-manpage renders from the parser (NAME, SYNOPSIS, the flags, COMMENTS from the
epilog), every page has EXIT STATUS, ENVIRONMENT, EXAMPLES and SEE ALSO (`extra_sections`). Text lines
that would start with a roff control character (``.`` or ``'``, as a wrapped help line can) are
escaped with ``\\&`` (`escape_control_lines`): roff would otherwise take them for a request and drop
them.

argparse-manpage is a development and build dependency; it is imported only when a
page is built. (Its own command line names a page after the parser's ``prog``,
``python -m apps.…``, which is not a valid ``.TH`` title: use `write_manpages`.)
"""

from __future__ import annotations

import argparse
import copy
import importlib
import re
from pathlib import Path
from typing import Any

import doca_py

__all__ = ["APPS", "PROGRAMS", "MANUAL", "TITLE_WIDTH", "man_title", "build_manpage", "write_manpages",
           "escape_control_lines", "extra_sections", "EXAMPLES"]

APPS = ("apps.sbc_generator", "apps.storage_target", "apps.gga_offload", "apps.zero_copy", "apps.initiator",
        "apps.topology")
"""The storage apps' modules with a ``build_parser()`` (``python -m <module>``)."""

PROGRAMS: dict[str, str] = {
    "doca_storage_gga_offload_sbc_generator": "apps.sbc_generator",
    "doca_storage_target_rdma": "apps.storage_target",
    "doca_storage_comch_to_rdma_gga_offload": "apps.gga_offload",
    "doca_storage_comch_to_rdma_zero_copy": "apps.zero_copy",
    "doca_storage_initiator_comch": "apps.initiator",
    "doca_py_storage_topology": "apps.topology",
    "doca_file_compression": "apps.file_compression",
    "doca_secure_channel": "apps.secure_channel",
    "doca_dma_copy": "apps.dma_copy",
    "doca_py": "doca_py.tool",
}
"""Installed program name → module with ``build_parser()`` and ``main()`` (its console script)."""

MANUAL = "doca_py"
"""The manual every page belongs to (the centre of the header): short, so that the header fits."""

TITLE_WIDTH = 30
"""The longest ``.TH`` title. ``man`` prints ``TITLE(1)`` at both ends of the header, around the manual,
and at the right of the footer, after the date centred at column 40: at 80 columns a longer title
overlaps them (groff 1.22 does not abbreviate it)."""


EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "doca_storage_gga_offload_sbc_generator": [
        ("Split plain.bin into the three .sbc files of the GGA offload bridge (two data halves and the parity):",
         "doca_storage_gga_offload_sbc_generator -d 03:00.0 --original-input-data plain.bin "
         "--data-1 d1.sbc --data-2 d2.sbc --data-p dp.sbc --block-size 4096"),
    ],
    "doca_storage_target_rdma": [
        ("Serve d1.sbc on port 12345 with two workers:",
         "doca_storage_target_rdma -d 03:00.0 --cpu 0 --cpu 1 --listen-port 12345 --binary-content d1.sbc"),
    ],
    "doca_storage_comch_to_rdma_gga_offload": [
        ("Bridge the host's initiator to three targets (data 1, data 2, parity):",
         "doca_storage_comch_to_rdma_gga_offload -d 03:00.0 -r 3b:00.0 --cpu 0 --data-1-storage 10.0.0.1:12345 "
         "--data-2-storage 10.0.0.2:12345 --data-p-storage 10.0.0.3:12345"),
    ],
    "doca_storage_comch_to_rdma_zero_copy": [
        ("Bridge the host's initiator to one target:",
         "doca_storage_comch_to_rdma_zero_copy -d 03:00.0 -r 3b:00.0 --cpu 0 --storage-server 10.0.0.1:12345"),
    ],
    "doca_storage_initiator_comch": [
        ("Read every block once and compare it with the original file:",
         "doca_storage_initiator_comch -d 3b:00.0 --cpu 0 --execution-strategy read_only_data_validity_test "
         "--storage-plain-content plain.bin"),
    ],
    "doca_py_storage_topology": [
        ("Run the whole GGA offload topology on this machine (emulated backend):", "doca_py_storage_topology"),
        ("The same with the zero-copy bridge:", "doca_py_storage_topology --bridge zero-copy"),
    ],
    "doca_file_compression": [
        ("On the DPU, the server, writing what it receives to /tmp/received.txt:",
         "doca_file_compression -p 03:00.0 -r 3b:00.0 -f /tmp/received.txt"),
        ("On the host, the client, sending a file (it waits silently for the server until Ctrl-C):",
         "doca_file_compression -p 3b:00.0 -f /tmp/data_to_send.txt"),
        ("The server's flags from a DOCA JSON file (comments and trailing commas are accepted):",
         "doca_file_compression -j file_compression_params.json"),
    ],
    "doca_secure_channel": [
        ("On the DPU, the server, sending 10 messages of 128 bytes:",
         "doca_secure_channel -p 03:00.0 -r 3b:00.0 -s 128 -n 10"),
        ("On the host, the client (it waits silently for the server until Ctrl-C):",
         "doca_secure_channel -p 3b:00.0 -s 128 -n 10"),
    ],
    "doca_dma_copy": [
        ("On the DPU, the server: it creates /tmp/dma_copy_test.txt from the host's copy (or sends it, if it is "
         "there):", "doca_dma_copy -p 03:00.0 -r 3b:00.0 -f /tmp/dma_copy_test.txt"),
        ("On the host, the client, with the file to copy to the DPU (it waits silently for the server until "
         "Ctrl-C):", "doca_dma_copy -p 3b:00.0 -f /tmp/dma_copy_test.txt"),
        ("The flags from a DOCA JSON file (comments and trailing commas are accepted):",
         "doca_dma_copy -j dma_copy_params.json"),
    ],
    "doca_py": [
        ("List the devices and what each DOCA library can do on them:", "doca_py"),
        ("The same as one JSON document, on the emulated backend:", "DOCA_PY_IMPL=emulated doca_py devices --json"),
        ("Which declared DOCA functions the installed libraries export:", "doca_py probe"),
    ],
}
"""Per program: (what it does, the command) for the EXAMPLES section."""

_COMCH_APPS = ("doca_file_compression", "doca_secure_channel", "doca_dma_copy")
_ENVIRONMENT = [
    ("DOCA_PY_IMPL", "The backend: native (the DOCA libraries), emulated (doca_py's emulator) or auto (the "
                     "default: native when libdoca_common loads, else emulated). A value that cannot be honoured "
                     "is one error line and exit status 2."),
    ("DOCA_PY_LIBDIR", "Where the native backend looks for the DOCA libraries first."),
    ("DOCA_PY_EMU_DEVICES", "The emulated backend's devices, as a JSON list (see the doca_py documentation)."),
]
_COMCH_ENVIRONMENT = [
    ("DOCA_PY_COMCH_DIR", "The emulated comch's rendezvous directory: a server and its clients must use the same "
                          "(default: $XDG_RUNTIME_DIR/doca_py/comch)."),
    ("DOCA_PY_COMCH_RETRY_WINDOW", "Seconds (default 4) the emulated comch waits for a peer that stopped answering "
                                   "before it fails the connection."),
]
_RDMA_ENVIRONMENT = [
    ("DOCA_PY_RDMA_RETRY_WINDOW", "Seconds (default 4) the emulated RDMA waits for a peer that stopped answering "
                                  "before it fails the connection."),
]


def _exit_status(prog: str) -> list[tuple[str, str]]:
    if prog == "doca_py":
        return [("0", "The report was printed."),
                ("1", "The devices could not be listed, or no device matches the one asked for."),
                ("2", "A usage error: a bad command, flag or DOCA_PY_IMPL.")]
    if prog == "doca_py_storage_topology":
        return [("0", "Every process of the topology succeeded."),
                ("1", "A process failed, or Ctrl-C."),
                ("2", "A usage error: a bad flag or flag value (one line per problem on stderr).")]
    return [("0", "Success."),
            ("1", "A failure at run time (EXCEPTION: <reason> on stderr), or Ctrl-C / SIGTERM."),
            ("2", "A usage error: a bad flag, flag value or -j/--json file (one line per problem on stderr, "
                  "before anything is opened).")]


def _roff_text(text: str) -> str:
    """*text* as roff running text: backslashes and hyphens escaped, no control character at the start."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def extra_sections(prog: str) -> str:
    """The roff of *prog*'s EXIT STATUS, ENVIRONMENT, EXAMPLES and SEE ALSO sections."""
    out = [".SH EXIT STATUS"]
    for code, text in _exit_status(prog):
        out += [".TP", f".B {code}", _roff_text(text)]
    out.append(".SH ENVIRONMENT")
    env = list(_ENVIRONMENT)
    if prog == "doca_py_storage_topology":  # it runs every process on the emulator, whatever DOCA_PY_IMPL says
        env = [("DOCA_PY_IMPL", "Ignored: the topology runs every process on the emulated backend.")]
    if prog in _COMCH_APPS or prog in ("doca_storage_comch_to_rdma_gga_offload", "doca_storage_comch_to_rdma_zero_copy",
                                       "doca_storage_initiator_comch", "doca_py_storage_topology"):
        env += _COMCH_ENVIRONMENT
    if prog.startswith("doca_storage_") or prog == "doca_py_storage_topology":
        env += _RDMA_ENVIRONMENT
    for name, text in env:
        out += [".TP", f".B {name}", _roff_text(text)]
    out.append(".SH EXAMPLES")
    for text, command in EXAMPLES.get(prog, []):
        out += [".PP", _roff_text(text), ".PP", ".RS 4", ".EX", _roff_text(command), ".EE", ".RE"]
    out.append(".SH SEE ALSO")
    others = sorted(p for p in PROGRAMS if p != prog)
    out.append(",\n".join(f".BR {p} (1)" for p in others))
    out.append("The doca_py documentation (docs/ in the source; the CLI reference lists every program's flags).")
    return "\n".join(out) + "\n"


_REQUEST = re.compile(r"\.(?:TH|SH|SS|TP|PP|IP|RS|RE|B|BR|I|IR|EX|EE|nf|fi|br|sp)(?: |$)")


def escape_control_lines(page: str) -> str:
    """*page* with every text line that starts with ``.`` or ``'`` prefixed by ``\\&`` (the zero-width
    escape), so that roff prints it instead of taking it for a request (argparse-manpage wraps help text
    without looking at line starts); the requests argparse-manpage writes stay as they are."""
    lines = page.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("'") or (line.startswith(".") and not _REQUEST.match(line)):
            lines[i] = "\\&" + line
    return "\n".join(lines)


def man_title(prog: str) -> str:
    """The ``.TH`` title of *prog*'s page: its name in capitals, without its leading words while longer than
    `TITLE_WIDTH` (``doca_storage_comch_to_rdma_gga_offload`` → ``COMCH_TO_RDMA_GGA_OFFLOAD``; the NAME
    section keeps the full name, and ``man`` finds the page by its file name)."""
    words = prog.upper().split("_")
    while len("_".join(words)) > TITLE_WIDTH and len(words) > 1:
        words.pop(0)
    return "_".join(words)


def program_name(module: str) -> str:
    """The installed program of *module* (``apps.storage_target`` → ``doca_storage_target_rdma``)."""
    for prog, mod in PROGRAMS.items():
        if mod == module:
            return prog
    raise KeyError(f"no program for module {module!r}")


def build_manpage(parser: argparse.ArgumentParser, *, prog: str | None = None, section: int = 1,
                  manual_title: str = MANUAL, description: str | None = None) -> str:
    """The roff source of *parser*'s man page.

    The page is named after *prog*; by default the installed program of a parser whose
    ``prog`` is ``python -m <module>`` (the ``.TH`` title must be one word), else the
    parser's own ``prog``. *parser* itself is not changed.
    """
    if prog is None:
        module = parser.prog.removeprefix("python -m ")
        prog = program_name(module) if module in PROGRAMS.values() else parser.prog
    parser = copy.copy(parser)
    parser.prog = prog
    manpage_mod: Any = importlib.import_module("argparse_manpage.manpage")
    page = manpage_mod.Manpage(parser)
    page.source = f"doca_py {doca_py.__version__}"
    page.manual = manual_title
    page.section = section
    page.description = description if description is not None else (parser.description or "").split("\n")[0]
    th, rest = escape_control_lines(str(page)).split("\n", 1)
    fields = th.split(" ", 2)  # [".TH", title, '"1" "date" "source" "manual"']
    return " ".join([fields[0], man_title(prog), fields[2]]) + "\n" + rest.rstrip("\n") + "\n" + \
        extra_sections(prog)


def write_manpages(directory: Path) -> list[Path]:
    """Write ``<program>.1`` for every program of `PROGRAMS` into *directory*; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for prog, module in PROGRAMS.items():
        parser = importlib.import_module(module).build_parser()
        path = directory / f"{prog}.1"
        path.write_text(build_manpage(parser, prog=prog))
        written.append(path)
    return written
