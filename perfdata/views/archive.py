"""`perfdata archive FILE -o OUT.tar.zst`: what it takes to symbolize the
profile elsewhere, in one zstd-compressed tar.

The binaries, debug files and vdso image the profile references and that are
found here, stored by build-id as `.build-id/xx/rest` (the binary) and
`.build-id/xx/rest.debug` (its debug file), which is the layout --debug-dir
reads; the kernel's symbols as `[kernel.kallsyms]/BUILD-ID/kallsyms` (perf's
build-id cache layout: --buildid-dir DIR finds it, or --kallsyms FILE);
binaries the profile has no build-id for (perf records those with leaf hits
only) also under their path (DIR/usr/lib/..., --debug-dir's path layout);
the jitdumps (jit-PID.dump) the processes mapped and the perf maps
(/tmp/perf-PID.map) that named JIT code, under their path too;
`MANIFEST.txt` lists member, kind, original path.  Unpack with
`perfdata archive -x OUT.tar.zst -C DIR` (or `tar --zstd -xf`), then
`perfdata script FILE --debug-dir DIR`.

Unpacking accepts only regular files with relative names free of `..`, with
sizes in bounds: an archive cannot write outside DIR, make links or devices.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from perfdata.buildid_archive import (ArchiveError, extract_archive,  # noqa: F401
                                     safe_name, write_archive)
from perfdata.session.machine import KERNEL_DSO
from symbolize import is_jitdump_path, is_perfmap_path

if TYPE_CHECKING:
    import argparse

    from perfdata.resolve.symbolized import SampleSymbolizer
    # (member name, local path, kind, original path) of an archive's file
    Member = tuple[str, str, str, str]
    # (path, build-id, why) of a binary the archive lacks
    Absent = tuple[str, str | None, str]


def plan(ss: SampleSymbolizer) -> tuple[list[Member], list[Absent]]:
    """[(arcname, local path, kind, original path)] for the profile, after
    running the SampleSymbolizer `ss` over it; and a list of what is absent."""
    from .buildids import collect
    refs = collect(ss)
    sym = ss.symbolizer
    items, absent, names = [], [], set()

    def add(arcname: str, path: str | None, kind: str, orig: str) -> None:
        if arcname not in names and path and os.path.isfile(path):
            names.add(arcname)
            items.append((arcname, path, kind, orig))

    for (path, bid), ref in sorted(refs.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if path.startswith(KERNEL_DSO):
            ks = sym.kernel_symbols_file(bid)
            if bid and ks:
                add("[kernel.kallsyms]/%s/kallsyms" % bid, ks, "kallsyms", path)
            else:
                absent.append((path, bid, "kallsyms"))
            continue
        if is_jitdump_path(path):
            continue          # below
        if is_perfmap_path(path):
            continue          # below
        if path.startswith("[") and path != "[vdso]" or path.startswith("//") or \
                path.startswith("/memfd:"):
            continue          # no file
        lpath, lbid = ref.lookup
        choice = sym.binary_for(lpath, lbid)
        if choice.binary is None and choice.debug is None:
            absent.append((path, bid, choice.status))
            continue
        have = bid or (choice.binary.build_id if choice.binary is not None else None)
        if not have or len(have) < 4:
            absent.append((path, bid, "no build-id"))
            continue
        base = ".build-id/%s/%s" % (have[:2], have[2:])
        if ss.build_ids.get(path) != have and path.startswith("/"):
            # The profile has no build-id for it (perf records those of the
            # binaries with leaf hits only): elsewhere it is looked up by
            # path, so store it in --debug-dir's path layout too.
            rel = os.path.normpath(path).lstrip("/")
            if safe_name(rel):
                if choice.binary is not None:
                    add(rel, choice.binary.path, "binary", path)
                if choice.debug is not None:
                    add(rel + ".debug", choice.debug.path, "debug", path)
        if choice.binary is not None:
            add(base, choice.binary.path, "vdso" if path == "[vdso]" else "binary", path)
        if choice.debug is not None:
            add(base + ".debug", choice.debug.path, "debug", path)
        # The supplementary file its DWARF continues in (dwz -m), where
        # --debug-dir looks for it: by its identity under .build-id.
        lines = sym.line_info(lpath, lbid)
        sup = lines.supplementary() if lines is not None else None
        sup_id = sup.supplementary_identity if sup is not None else None
        if sup is not None and sup_id and len(sup_id) >= 4:
            add(".build-id/%s/%s.debug" % (sup_id[:2], sup_id[2:]), sup.path, "dwz", path)
        elif lines is not None and lines.supplementary_missing:
            # (missing: the DWARF names one)
            absent.append((path, bid, "dwz file %s not found"
                           % lines.binary.supplementary_link.name))  # type: ignore[union-attr]
    # The jitdumps the processes mapped (JIT code's names and unwinding
    # info), under their recorded path: --debug-dir's path layout, where
    # the symbolizer looks for one first.
    # The perf maps that named JIT code (/tmp/perf-PID.map) likewise.
    dumps = {path for path, _ in refs if is_jitdump_path(path)}
    maps = {path for path, _ in refs if is_perfmap_path(path)}
    for kind, paths in (("jitdump", dumps | set(ss.resolver.jit.jitdump_paths())),
                        ("perfmap", maps)):
        for path in sorted(paths):
            found = sym.jit_file(path)
            rel = os.path.normpath(path).lstrip("/")
            if found is None or not safe_name(rel):
                absent.append((path, None, "%s not found" % kind))
            else:
                add(rel, found, kind, path)
    return items, absent


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .options import add_input_argument, add_symbolize_options
    p = subparsers.add_parser("archive", help="binaries, debug files, vdso and kallsyms of "
                              "a profile in one .tar.zst (perf archive)")
    add_input_argument(p)
    p.add_argument("-o", "--output", help="archive to write (default FILE.tar.zst)")
    p.add_argument("-x", "--extract", metavar="ARCHIVE",
                   help="unpack ARCHIVE instead (this command's, or perf archive's tarball, "
                        "put in this layout)")
    p.add_argument("-C", "--directory", metavar="DIR", help="where -x unpacks (default .)")
    add_symbolize_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO) -> None:
    if args.extract:
        dest = args.directory or "."
        extract_archive(args.extract, dest)     # ArchiveError: cli.py's exit 2
        kernel = os.path.isdir(os.path.join(dest, "[kernel.kallsyms]"))
        out.write("unpacked %s into %s; use --debug-dir %s%s\n" % (
            args.extract, dest, dest,
            " (kernel symbols included)" if kernel else ""))
        return
    from .errors import CommandError
    from ..resolve import build_sample_symbolizer
    from ..run.profile import open_profile, print_warnings
    from .options import resolve_options
    pf = open_profile(args.file, getattr(args, "strict", False))
    ss = build_sample_symbolizer(pf, resolve_options(args))
    try:
        items, absent = plan(ss)
    finally:
        print_warnings(pf, ss.symbolizer.warnings)
    output = args.output or (str(args.file) + ".tar.zst")
    try:
        write_archive(items, output)
    except OSError as exc:
        raise CommandError("%s: %s" % (output, exc))
    size = sum(os.path.getsize(p) for _, p, _, _ in items)
    out.write("%s: %d files (%d bytes before compression), %d bytes\n"
              % (output, len(items), size, os.path.getsize(output)))
    for arc, path, kind, orig in items:
        out.write("  %-7s %s  <- %s\n" % (kind, arc, path))
    for path, bid, why in absent:
        out.write("  absent  %s %s: %s\n" % (path, bid or "", why))
