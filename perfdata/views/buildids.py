"""`perfdata buildids FILE`: every binary the profile references, with its
build-id (as `perf buildid-list`), the samples that hit it, where its
symbols come from here (which file, which sections) and what is missing.
"""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from perfdata.session.machine import KERNEL_DSO
from symbolize import is_jitdump_path

if TYPE_CHECKING:
    import argparse

    from perfdata.resolve.symbolized import SampleSymbolizer
    from symbolize import Symbolizer, KernelSymbols, SymbolTable
    # (path, build-id) of a binary
    BinaryKey = tuple[str, str | None]

_SECTIONS = (".symtab", ".dynsym", ".gnu_debugdata", ".debug_info", ".debug_line",
             ".eh_frame", ".debug_frame")


class BinaryRef:
    """One binary of the profile: path and build-id as recorded, samples
    hitting it (any frame), leaf samples, and the lookup path/build-id used."""
    __slots__ = ("path", "build_id", "samples", "leaf_samples", "lookup")

    def __init__(self, path: str, build_id: str | None) -> None:
        self.path = path
        self.build_id = build_id
        self.samples = 0
        self.leaf_samples = 0
        self.lookup = (path, build_id)


def collect(ss: SampleSymbolizer) -> dict[BinaryKey, BinaryRef]:
    """Run the SampleSymbolizer; {(path, build_id): BinaryRef} for every
    binary of the BUILD_ID feature, the MMAP2 build-ids and the samples."""
    refs: dict[BinaryKey, BinaryRef] = {}

    def ref(path: str, bid: str | None) -> BinaryRef:
        r = refs.get((path, bid))
        if r is None:
            r = refs[(path, bid)] = BinaryRef(path, bid)
        return r

    for sample in ss:
        hit = set()
        # (made without side events: its items are samples)
        for i, f in enumerate(sample.frames):  # type: ignore[union-attr]
            if f.dso in ("[unknown]",) and f.note == "no-map":
                continue
            path = KERNEL_DSO if f.kernel and f.dso.startswith("[") else f.dso
            if f.kernel and not f.dso.startswith("["):
                path = f.dso
            bid = ss.build_ids.get(path) if f.kernel else f.build_id
            if path == "[vdso]":
                bid = ss.build_ids.get("[vdso]") or f.build_id
            key = (path, bid)
            if key not in hit:
                hit.add(key)
                r = ref(path, bid)
                r.samples += 1
                if f.dso_path and f.dso_path != path:
                    r.lookup = (f.dso_path, f.build_id)
            if i == 0:
                ref(path, bid).leaf_samples += 1
    for path, bid in ss.build_ids.items():
        if not any(p == path and b == bid for p, b in refs):
            ref(path, bid)
    return refs


def describe_binary(symbolizer: Symbolizer, ref: BinaryRef) -> dict[str, Any]:
    """{'symbols': ..., 'binary': ..., 'debug': ..., 'missing': [...]}."""
    path, bid = ref.lookup
    info: dict[str, Any] = {"path": ref.path, "build_id": ref.build_id, "samples": ref.samples,
                            "leaf_samples": ref.leaf_samples}
    missing = []
    table: KernelSymbols | SymbolTable | None
    if ref.path.startswith(KERNEL_DSO) or ref.path.startswith("[guest.kernel"):
        table = None
        try:
            table = symbolizer.kernel_symbols(ref.build_id)
        except Exception:
            table = None
        n = len(table) if table is not None else 0
        info["status"] = "found" if n else "missing"
        info["symbols"] = "kallsyms (%d symbols)" % n if n else "none"
        if not n:
            missing.append("kallsyms of this kernel (--kallsyms FILE)")
        info["missing"] = missing
        return info
    if is_jitdump_path(ref.path):
        codes = len(symbolizer.jitdump(path))
        info["status"] = "jit"
        info["symbols"] = "jitdump (%d code loads)" % codes if codes else "none"
        info["missing"] = [] if codes else ["the jitdump the JIT wrote (%s)" % path]
        return info
    if ref.path.startswith("//anon") or ref.path.startswith("/tmp/perf-"):
        info["status"] = "jit"
        info["symbols"] = "perf map" if os.path.exists(path) else "none"
        info["missing"] = [] if os.path.exists(path) else ["a perf map (/tmp/perf-PID.map)"]
        return info
    choice = symbolizer.binary_for(path, bid)
    info["status"] = choice.status
    info["reason"] = choice.reason
    for name, b in (("binary", choice.binary), ("debug", choice.debug)):
        if b is not None:
            info[name] = {"path": b.path,
                          "sections": [s for s in _SECTIONS if b.has_section(s)]}
    table = symbolizer.symbol_table(path, bid)
    info["symbols"] = ", ".join(table.sources) if table is not None and len(table) else "none"
    b, d = choice.binary, choice.debug
    if choice.status == "missing":
        missing.append("the binary" + (" with build-id %s" % bid if bid else ""))
    elif choice.status == "buildid-mismatch":
        others = ["%s has %s" % (p, detail or "none") for p, outcome, detail in choice.tried
                  if outcome == "buildid-mismatch"]
        missing.append("the binary with build-id %s (what is here has another: %s)"
                       % (bid, "; ".join(others)))
    elif choice.status == "not-elf":
        damaged = ["%s: %s" % (p, detail) for p, outcome, detail in choice.tried
                   if outcome in ("not-elf", "no-code") and detail]
        missing.append("a usable ELF file" + (" (%s)" % "; ".join(damaged) if damaged else ""))
    else:
        if choice.binary is not None and \
                symbolizer.modified_after_recording(choice.binary.path):
            missing.append("a recorded build-id to check it by: the file was modified after "
                           "the profile was written, its names may be another build's")
        has_symtab = (b is not None and b.has_section(".symtab")) or \
            (d is not None and d.has_section(".symtab"))
        has_dwarf = any(x is not None and x.has_section(".debug_info") for x in (b, d))
        if not has_symtab and not has_dwarf:
            missing.append("debug info (.symtab/DWARF): only %s" % (info["symbols"]))
        elif not has_dwarf:
            missing.append("DWARF (no inline frames or source lines)")
    info["missing"] = missing
    return info


def buildid_rows(ss: SampleSymbolizer) -> list[dict[str, Any]]:
    refs = collect(ss)
    rows = []
    for key in sorted(refs, key=lambda k: (-refs[k].samples, k[0], k[1] or "")):
        rows.append(describe_binary(ss.symbolizer, refs[key]))
    return rows


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .options import add_input_argument, add_symbolize_options
    p = subparsers.add_parser("buildids", help="binaries of the profile, their build-ids, "
                              "where their symbols come from (perf buildid-list)")
    add_input_argument(p)
    p.add_argument("--json", action="store_true", help="one JSON object per binary")
    p.add_argument("--ids-only", action="store_true",
                   help="only 'BUILD-ID PATH' lines, as perf buildid-list")
    add_symbolize_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO) -> None:
    from ..resolve import build_sample_symbolizer
    from ..run.profile import open_profile
    from .options import resolve_options
    pf = open_profile(args.file, getattr(args, "strict", False))
    ss = build_sample_symbolizer(pf, resolve_options(args))
    try:
        rows = buildid_rows(ss)
    finally:
        seen = set()
        for message in list(pf.warnings) + list(ss.symbolizer.warnings):
            if message not in seen:
                seen.add(message)
                sys.stderr.write("perfdata: warning: %s\n" % message)
    for r in rows:
        if args.json:
            out.write(json.dumps(r, default=str) + "\n")
            continue
        out.write("%s %s\n" % (r["build_id"] or "-" * 40, r["path"]))
        if args.ids_only:
            continue
        out.write("    samples: %d (leaf %d); symbols: %s; status: %s\n"
                  % (r["samples"], r["leaf_samples"], r["symbols"], r["status"]))
        for name in ("binary", "debug"):
            if name in r:
                out.write("    %s: %s [%s]\n" % (name, r[name]["path"],
                                                 " ".join(r[name]["sections"])))
        out.write("    missing: %s\n" % ("; ".join(r["missing"]) or "nothing"))

