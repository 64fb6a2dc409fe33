"""Diagnosis: every frame of every sample counted in its class
(classify.py), and the problems of whole stacks: a frame-pointer chain
broken by a function without frame pointers or cut short, garbage dropped
below a stack's bottom, a DWARF unwind that stopped (and why)."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from symbolize import injected_jit_group

from ...format import CallchainContext as CC
from ...resolve.frames import KERNEL_MODES, STACK_BOTTOMS
from .classes import NATURAL_ENDS, ClassStats, describe_sample
from .classify import FrameClassifier
from .output import diagnosis_result

if TYPE_CHECKING:
    from ...format import EventAttr
    from ...resolve.frames import StackFrame
    from ...resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from ...session.maps import Map, MapGroup
    from .classes import BinaryKey

_BAD_UNWIND = ("cfa-not-increasing", "bad-cfi", "zero-ra")


class Diagnosis:
    """Classify the frames of a SampleSymbolizer's samples."""

    def __init__(self, samples: SampleSymbolizer) -> None:
        self.ss = samples
        self.symbolizer = samples.symbolizer
        self.classes: dict[str, ClassStats] = {}
        self.total_samples = 0
        self.total_frames = 0
        self.inlined_frames = 0        # frames of inlined functions, of total_frames
        self.classifier = FrameClassifier(samples.symbolizer)

    # ------------------------------------------------------------ counting
    def _hit(self, cls: str, sample: SymbolizedSample, frames: int = 1,
             binary: BinaryKey | None = None) -> ClassStats:
        st = self.classes.get(cls)
        if st is None:
            st = self.classes[cls] = ClassStats(cls)
        st.frames += frames
        key = self.total_samples      # the sample being added (ids are reused)
        if st.last_sample != key:
            st.last_sample = key
            st.samples += 1
            if st.example is None:
                st.example = describe_sample(sample)
            st.detail_bins = set()
        if binary is not None:
            st.binaries[binary] += frames
            if binary not in st.detail_bins:
                st.detail_bins.add(binary)
                st.bin_samples[binary] += 1
        return st

    def run(self) -> Diagnosis:
        for sample in self.ss:
            self.add(sample)  # type: ignore[arg-type]  # (made without side events)
        return self

    def add(self, sample: SymbolizedSample) -> None:
        self.total_samples += 1
        frames = sample.frames
        if frames and frames[-1].stitched:
            # What the recording holds is diagnosed; the frames stitched from
            # other samples are counted apart (result()).
            frames = [f for f in frames if not f.stitched]
        self.total_frames += len(frames)
        self.inlined_frames += sum(1 for f in frames if f.inlined)
        exclude_kernel = _excludes_kernel(sample.event)
        broken_after = None
        if sample.stop_reason is None:
            broken_after = self._fp_break(sample, frames)
            if broken_after is None:
                self._fp_truncated(sample, frames)
        b: BinaryKey | None
        for i, f in enumerate(frames):
            if broken_after is not None and i > broken_after and not f.kernel and \
                    not self.classifier.modified(f):
                # (a frame named from a binary modified since is that first:
                # its names are suspect whatever the chain)
                cls, b = "fp-broken", broken_binary(frames[broken_after])
                if i == broken_after + 1:
                    fn = self._hit(cls, sample, 0).detail.setdefault("functions", Counter())
                    fn[frames[broken_after].symbol] += 1
            else:
                cls, b = self.classifier.classify(f, exclude_kernel)
            self._hit(cls, sample, 1, b)
        if sample.stop_reason is None:
            self._bottom_garbage(sample, frames)
        else:
            self._dwarf(sample, frames)

    # ------------------------------------------------------ frame pointers
    def _fp_break(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> int | None:
        """Index of the first user frame (leaf first) in a function built
        without frame pointers that has frames after it, or None."""
        user = [i for i, f in enumerate(frames) if not f.kernel and not f.inlined]
        for n, i in enumerate(user[:-1]):
            f = frames[i]
            if f.symbol in STACK_BOTTOMS:
                return None
            if self.classifier.has_no_frame_pointer(f):
                return i
        return None

    def _fp_truncated(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        """A -g chain that ends before any function that starts a stack: the
        walk lost the frame-pointer chain (a function without frame pointers
        left another value in %rbp).  Counted as a sample of fp-broken, blamed
        on the innermost function known to lack frame pointers."""
        user = [f for f in frames if not f.kernel and not f.inlined]
        if not user or len(user) >= self.ss.max_stack:
            return
        last = user[-1]
        if last.symbol is None or last.symbol in NATURAL_ENDS:
            return
        blame = next((f for f in user if self.classifier.has_no_frame_pointer(f)), None)
        if blame is None:
            return
        st = self._hit("fp-broken", sample, 0, broken_binary(blame))
        st.detail["truncated"] = st.detail.get("truncated", 0) + 1
        fn = st.detail.setdefault("functions", Counter())
        fn[blame.symbol] += 1

    def _bottom_garbage(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        user = [f for f in frames if not f.kernel and not f.inlined]
        if not user or user[-1].symbol not in STACK_BOTTOMS:
            return
        chain = (sample.fields.get("callchain") or {}).get("ips") or ()
        raw = 0
        in_user = sample.cpumode not in (1, 3, 4)
        for ip in chain:
            if ip >= CC.MAX:
                in_user = ip == CC.USER or ip == CC.GUEST_USER
                continue
            if in_user:
                raw += 1
        dropped = raw - len(user)
        if dropped > 0 and len(user) < self.ss.max_stack:
            self._hit("bottom-garbage-dropped", sample, dropped,
                      (user[-1].dso_path or user[-1].dso, user[-1].build_id))
            self.classes["bottom-garbage-dropped"].detail["bottom"] = user[-1].symbol

    # --------------------------------------------------------------- DWARF
    def _dwarf(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        unwound = sample.unwind
        if unwound is not None and unwound.frames and sample.ip is not None and \
                unwound.frames[0] != sample.ip and sample.cpumode not in KERNEL_MODES:
            # (the symbolizer printed the sample ip as the leaf instead)
            self._hit("ip-mismatch", sample, 0)
        fallback = self._unwind_of(sample, "fp_fallback_frames") or ()
        raw = self._unwind_of(sample, "frames") or ()
        self._dwarf_ra_adjusted(sample, frames, raw)
        for idx in fallback:
            if 0 < idx <= len(raw):
                st = self._hit("dwarf-no-cfi", sample, 1, self._binary_at(sample, raw[idx - 1]))
                st.detail["fp-fallback"] = st.detail.get("fp-fallback", 0) + 1
        reason = sample.stop_reason
        user = [f for f in frames if not f.kernel]
        last = user[-1] if user else None
        lastbin = (last.dso_path or last.dso, last.build_id) if last is not None else None
        if reason == "stack-exhausted":
            need = self._stack_needed(sample)
            dyn = (sample.fields.get("stack_user") or {}).get("dyn_size")
            if need is not None and dyn and need <= dyn:
                # The whole stack was there: the unwind went astray (a
                # register the CFI trusts held another value).
                st = self._hit("dwarf-bad-unwind", sample, 0, lastbin)
                st.detail["read-outside-stack"] = st.detail.get("read-outside-stack", 0) + 1
                return
            st = self._hit("dwarf-stack-exhausted", sample, 0, lastbin)
            d = st.detail
            d["recorded"] = max(d.get("recorded", 0), _stack_size(sample))
            if need is None:
                d["unknown"] = d.get("unknown", 0) + 1
            else:
                d["needed"] = max(d.get("needed", 0), need)
        elif reason == "no-cfi":
            if last is not None and last.symbol in NATURAL_ENDS:
                # _start, __libc_start_main, ...: the stack's own end, where
                # glibc marks the return address undefined (no CFI to want)
                return
            where = self._binary_at(sample, self._unwind_of(sample, "stop_address")) or lastbin
            if where is not None and self.classifier.absent(where):
                # (no CFI because no binary: the binary's own class says why)
                self._hit("dwarf-no-binary", sample, 0, where)
                return
            st = self._hit("dwarf-no-cfi", sample, 0, where)
            st.detail["stopped"] = st.detail.get("stopped", 0) + 1
        elif reason == "no-map":
            self._hit("dwarf-no-map", sample, 0, lastbin)
        elif reason == "max-depth":
            self._hit("dwarf-max-depth", sample, 0, lastbin)
        elif reason in _BAD_UNWIND:
            st = self._hit("dwarf-bad-unwind", sample, 0, lastbin)
            st.detail[reason] = st.detail.get(reason, 0) + 1

    def _dwarf_ra_adjusted(self, sample: SymbolizedSample, frames: Sequence[StackFrame],
                           raw: Sequence[int]) -> None:
        """DWARF callers are printed at return address - 1: count those whose
        raw return address names another function (a call at a function's
        end, e.g. to a noreturn function), moving one frame of each from its
        resolved class to resolved-ra-adjusted."""
        if not raw:
            return
        exact = set(self._unwind_of(sample, "exact_ip_frames") or ())
        by_avma: dict[int | None, StackFrame] = {}
        f: StackFrame | None
        for f in frames:
            if not f.kernel:
                by_avma[f.avma] = f        # the last (outermost) of an inline group
        for i, ra in enumerate(raw[:self.ss.max_stack]):
            if i == 0 or i in exact:
                continue
            f = by_avma.get(ra - 1)
            if f is None or f.symbol is None or f.source in ("perfmap", "jitdump", "ksymbol"):
                continue
            if self.classifier.names_differ(f.dso_path, f.build_id, f.address + 1):
                old_cls, b = self.classifier.classify(f, False)
                st = self.classes.get(old_cls)
                if st is not None and st.frames > 0:
                    st.frames -= 1
                    if b is not None and st.binaries.get(b):
                        st.binaries[b] -= 1
                self._hit("resolved-ra-adjusted", sample, 1, b)

    def _unwind_of(self, sample: SymbolizedSample, attr: str) -> Any:
        return getattr(sample.unwind, attr, None)

    def _binary_at(self, sample: SymbolizedSample, avma: int | None) -> BinaryKey | None:
        """(path, build-id) of the mapping holding avma, or None."""
        if avma is None or sample.thread is None or sample.thread.maps is None:
            return None
        m = sample.thread.maps.find(avma)
        if m is None:
            return None
        try:
            return self.ss.dso_of(m)
        except Exception:
            return (m.path, m.build_id)

    def _stack_needed(self, sample: SymbolizedSample) -> int | None:
        """Bytes from sp to the end of the stack mapping holding it: a
        snapshot that size holds the whole stack."""
        regs = (sample.fields.get("regs_user") or {})
        unwinder = self.ss.unwinder
        try:
            # (stack-exhausted: a DWARF unwind, so an unwinder)
            named = unwinder.arch.regs_from_perf(sample.event.attr["sample_regs_user"],  # type: ignore[union-attr]
                                                 regs.get("regs") or ())
            sp = named.get(unwinder.arch.sp)  # type: ignore[union-attr]  # (as above)
        except Exception:
            return None
        if sp is None or sample.thread is None:
            return None
        maps = sample.thread.maps
        m = maps.find(sp) if maps is not None else None
        if m is None:
            # The main stack grows below the start its MMAP record gave.
            for cand in _iter_maps(maps):
                if cand.path == "[stack]" and cand.end > sp and cand.start - sp < (64 << 20):
                    m = cand
                    break
        if m is None:
            return None
        return m.end - sp

    # ---------------------------------------------------------------- result
    def result(self) -> dict[str, Any]:
        """The diagnosis as one JSON object (output.diagnosis_result)."""
        return diagnosis_result(self)


def broken_binary(f: StackFrame) -> BinaryKey:
    """The binary blamed for a broken chain; the code a JIT wrote, which perf
    inject --jit puts in a file per load (thousands), as one."""
    path = f.dso_path or f.dso
    group = injected_jit_group(path) if path else None
    return (group, None) if group is not None else (path, f.build_id)


def _iter_maps(maps: MapGroup | None) -> Sequence[Map]:
    return list(maps) if maps is not None else ()


def _excludes_kernel(event: EventAttr) -> bool:
    try:
        return bool(event.attr["flags"]["exclude_kernel"])
    except (AttributeError, KeyError, TypeError):
        return False


def _stack_size(sample: SymbolizedSample) -> int:
    st = sample.fields.get("stack_user") or {}
    return st.get("size") or 0
