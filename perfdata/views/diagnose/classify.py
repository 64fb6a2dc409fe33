"""FrameClassifier: the class of one frame, from what the symbolizer knows
of its binary (its symbol tables, its build-id here and at record time, its
DWARF, its code), each answer kept for the next frame of the binary."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from symbolize import NO_FILE_MAPPINGS

if TYPE_CHECKING:
    from symbolize import Symbolizer

    from ...resolve.frames import StackFrame
    from .classes import BinaryKey


class FrameClassifier:
    """The class of a frame, and the questions about its binary that the
    stack checks ask too (frame pointers, the function at an address)."""

    def __init__(self, symbolizer: Symbolizer) -> None:
        self.symbolizer = symbolizer
        # (path, build-id, function start) -> it sets up no frame pointer
        self._fp_cache: dict[tuple[str | None, str | None, int], bool] = {}
        # (path, build-id, address[, "raw"]) -> the names differ
        self._ra_cache: dict[tuple[Any, ...], bool] = {}
        # (path, build-id) -> {symbol start: size, "binary": the Binary}
        self._dynsym_sizes: dict[tuple[str | None, str | None], dict[Any, Any]] = {}
        self.stretched_frames = 0      # resolved-dynsym frames past their symbol's size
        self._kernel_state: str | None = None
        # (path, build-id) -> the LineInfo whose supplementary file is missing, or None
        self._unnamed_lines: dict[tuple[str | None, str | None], Any] = {}

    def classify(self, f: StackFrame, exclude_kernel: bool) -> tuple[str, BinaryKey | None]:
        """The frame's class, and the binary it is counted against
        (exclude_kernel: the sample's event counts user space only)."""
        binary = (f.dso_path or f.dso, f.build_id)
        if self.modified(f):
            return "binary-modified", binary
        if f.symbol is not None:
            src = f.source
            if f.kernel:
                return ("resolved-ksymbol" if src == "ksymbol" else "resolved-kallsyms"), \
                    (f.dso, f.build_id)
            if f.dso == "[vdso]":
                return "resolved-vdso", binary
            if src == "plt":
                return "resolved-plt", binary
            if src == "perfmap":
                return "resolved-perfmap", (f.dso, None)
            if src == "jitdump":
                return "resolved-jitdump", (f.dso, None)
            if f.is_return_address and self._ra_adjusted(f):
                return "resolved-ra-adjusted", binary
            if src == "minidebuginfo":
                return "resolved-minidebuginfo", binary
            if src == "dynsym":
                if self._stretched(f):
                    self.stretched_frames += 1
                return "resolved-dynsym", binary
            if not f.inlined and self._inline_unnamed(f):
                return "inline-unnamed", binary
            if src in ("debuginfo", "dwarf-inline"):
                choice = self.symbolizer.binary_for(*binary)
                return ("resolved-debuginfo" if choice.debug is not None
                        else "resolved-symtab"), binary
            return "resolved-symtab", binary
        if f.kernel:
            if exclude_kernel:
                return "kernel-skid", (f.dso, f.build_id)
            return self._kernel_class(f), (f.dso, f.build_id)
        path = f.dso_path or f.dso
        if f.dso.startswith("//anon") or f.dso.startswith("/memfd:") or f.dso == "[anon]" \
                or (path or "").startswith("/tmp/perf-"):
            return "jit-no-perfmap", (f.dso, None)
        if f.note == "no-map" or f.dso in NO_FILE_MAPPINGS:
            return "no-map", None
        if f.dso == "[vdso]":
            return "vdso-missing", binary
        choice = self.symbolizer.binary_for(*binary)
        if choice.status == "buildid-mismatch":
            return "buildid-mismatch", binary
        if choice.status in ("missing", "not-elf"):
            return "binary-missing", binary
        b = choice.binary
        if choice.debug is None and (b is None or not b.has_section(".symtab")):
            return "no-debuginfo", binary
        return "no-symbol", binary

    def _inline_unnamed(self, f: StackFrame) -> bool:
        """Does the DWARF of the frame's binary hold inlined calls at its
        address that it cannot name (their names are in a supplementary
        file not found)?"""
        if f.kernel or f.address is None or not f.dso_path:
            return False
        key = (f.dso_path, f.build_id)
        if key not in self._unnamed_lines:
            lines = self.symbolizer.line_info(f.dso_path, f.build_id)
            self._unnamed_lines[key] = lines if lines is not None and \
                lines.supplementary_missing else None
        lines = self._unnamed_lines[key]
        if lines is None:
            return False
        svma = self.symbolizer.svma_of(f.dso_path, f.build_id, f.address)
        # (innermost first: the last is the function itself, which its
        # symbol names)
        return svma is not None and None in lines.function_names(svma)[:-1]

    def modified(self, f: StackFrame) -> bool:
        """Is the frame from a binary taken unverified (no build-id
        recorded) at its path, modified after the recording?"""
        return not f.kernel and bool(f.dso_path) and \
            self.symbolizer.modified_after_recording(f.dso_path)  # type: ignore[arg-type]

    def _stretched(self, f: StackFrame) -> bool:
        """Is a .dynsym-named frame past its symbol's own size (a symbol of
        size 0 stretched to the next one, as perf does): then the address may
        be in a static function .dynsym does not list."""
        if f.offset is None or f.address is None:
            return False
        key = (f.dso_path, f.build_id)
        sizes = self._dynsym_sizes.get(key)
        if sizes is None:
            sizes = {}
            try:
                from symbolize import read_elf_symbols
                b = self.symbolizer.binary_for(f.dso_path or f.dso, f.build_id).binary
                if b is not None and b.ok:
                    for r in read_elf_symbols(b, ".dynsym", "dynsym"):
                        sizes[r.start] = max(sizes.get(r.start, 0), r.size)
                    sizes["binary"] = b
            except Exception:     # a reader bug must not stop the diagnosis
                sizes = {}
            self._dynsym_sizes[key] = sizes
        b = sizes.get("binary")
        if b is None:
            return False
        start = b.file_offset_to_svma(f.address - f.offset)
        size = sizes.get(start)
        return size is not None and f.offset >= size

    def _ra_adjusted(self, f: StackFrame) -> bool:
        """Does the raw return address name another function than address - 1?"""
        key = (f.dso_path, f.build_id, f.address)
        hit = self._ra_cache.get(key)
        if hit is None:
            hit = False
            try:
                raw = self.symbolizer.lookup(f.dso_path, f.build_id, file_offset=f.address,
                                             is_return_address=False)
                names = [x.name for x in raw if not x.inlined]
                hit = bool(names) and names[-1] != f.symbol and not f.inlined
            except Exception:     # a symbolizer bug must not stop the diagnosis
                hit = False
            self._ra_cache[key] = hit
        return hit

    def _kernel_class(self, f: StackFrame) -> str:
        if self._kernel_state is None:
            state = "kernel-no-symbol"
            table = None
            try:
                table = self.symbolizer.kernel_symbols(f.build_id)
            except Exception:
                table = None
            if table is None or len(table) == 0:
                state = "kernel-no-kallsyms"
                try:
                    with open("/proc/kallsyms") as ks:
                        first = [ks.readline() for _ in range(50)]
                    if first and first[0] and all(line.startswith("0000000000000000 ")
                                                  for line in first if line):
                        state = "kernel-kptr-restrict"
                except OSError:
                    pass
            self._kernel_state = state
        return self._kernel_state

    def has_no_frame_pointer(self, f: StackFrame) -> bool:
        """True when the function's code is known and sets up no frame pointer
        (x86_64: no push %rbp; mov %rsp,%rbp in its first bytes).  PLT stubs
        never do."""
        if f.symbol is None or f.offset is None or f.kernel:
            return False
        if f.source == "plt":
            return True
        if f.source in ("perfmap", "jitdump", "ksymbol") or \
                f.dso == "[vdso]" and f.source is None:
            return False          # code we have no bytes of
        start = f.address - f.offset
        key = (f.dso_path, f.build_id, start)
        hit = self._fp_cache.get(key)
        if hit is None:
            hit = False
            choice = self.symbolizer.binary_for(f.dso_path or f.dso, f.build_id)
            b = choice.binary
            if b is not None and b.ok and b.machine == "EM_X86_64" and start >= 0:
                code = b.read(start, 48)
                if code:
                    hit = not x86_sets_frame_pointer(code)
            self._fp_cache[key] = hit
        return hit

    def absent(self, binary: BinaryKey) -> bool:
        """Is this a file binary (not JIT code, the vdso) that was not found
        here, or only in another build?"""
        path, bid = binary
        if not path or not path.startswith("/") or path.startswith("//") or \
                path.startswith("/memfd:") or path.startswith("/tmp/perf-"):
            return False
        return self.symbolizer.binary_for(path, bid).status in (
            "missing", "buildid-mismatch", "not-elf")

    def names_differ(self, path: str | None, bid: str | None, file_offset: int) -> bool:
        """Do file_offset and file_offset - 1 lie in different functions?"""
        key = (path, bid, file_offset, "raw")
        hit = self._ra_cache.get(key)
        if hit is None:
            hit = False
            try:
                names = []
                for off in (file_offset, file_offset - 1):
                    got = self.symbolizer.lookup(path, bid, file_offset=off)
                    names.append([x.name for x in got if not x.inlined][-1:])
                hit = bool(names[1] and names[1][0]) and names[0] != names[1]
            except Exception:     # a symbolizer bug must not stop the diagnosis
                hit = False
            self._ra_cache[key] = hit
        return hit


def x86_sets_frame_pointer(code: bytes) -> bool:
    """push %rbp; mov %rsp,%rbp within the first instructions (after an
    optional endbr64)."""
    i = 4 if code[:4] == b"\xf3\x0f\x1e\xfa" else 0
    if code[i:i + 1] != b"\x55" and code[i:i + 2] != b"\x41\x57" and \
            code[i:i + 2] != b"\x41\x56" and code[i:i + 2] != b"\x41\x55" and \
            code[i:i + 2] != b"\x41\x54" and code[i:i + 1] != b"\x53":
        return False
    window = code[i:i + 40]
    # gcc may schedule other instructions between the push and the mov.
    for mov in (b"\x48\x89\xe5", b"\x48\x8b\xec"):
        at = window.find(mov)
        if at > 0 and b"\x55" in window[:at]:
            return True
    return False
