"""The diagnosis as one JSON object (--json), and as the text
`perfdata diagnose` prints: the table of classes, then each problem with its
binaries, an example and the fix."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .classes import CLASSES, ORDER
from .fixes import binary_fix, class_fix, found_instead

if TYPE_CHECKING:
    from .diagnosis import Diagnosis


def diagnosis_result(diag: Diagnosis) -> dict[str, Any]:
    """The diagnosis as one JSON object: the totals, then per class (in
    the order of CLASSES) its counts, binaries (top 5), example and fix."""
    from symbolize import prefetch
    # the package manager asked once about every binary a fix may name
    prefetch(path for st in diag.classes.values() for (path, _) in st.binaries
             if path and path.startswith("/"))
    classes = []
    problems = 0
    for name in sorted(diag.classes, key=lambda n: (ORDER.index(n) if n in ORDER else 99)):
        st = diag.classes[name]
        kind, title, fix = CLASSES.get(name, ("problem", name, ""))
        if kind == "problem":
            problems += 1
        binaries: list[dict[str, Any]] = []
        for (path, bid), frames in st.binaries.most_common(5):
            entry: dict[str, Any] = {"path": path, "build_id": bid, "frames": frames,
                     "samples": st.bin_samples.get((path, bid), 0)}
            found = found_instead(diag.symbolizer, name, path, bid)
            if found:
                entry["found"] = found
            bfix = binary_fix(name, path, bid)
            if bfix:
                entry["fix"] = bfix
            binaries.append(entry)
        custom = class_fix(name, st, diag.classifier.stretched_frames)
        fix = fix if custom is None else custom
        classes.append({"class": name, "kind": kind, "title": title,
                        "frames": st.frames, "samples": st.samples,
                        "share": st.samples / diag.total_samples if diag.total_samples else 0,
                        "binaries": binaries, "example": st.example, "fix": fix,
                        **({"detail": st.detail} if st.detail else {})})
    out = {"samples": diag.total_samples, "frames": diag.total_frames,
           "inlined_frames": diag.inlined_frames,
           "problems": problems, "classes": classes}
    stitcher = diag.ss.stitcher
    if stitcher is not None and stitcher.counts["cut"]:
        out["stitch"] = {"cut": stitcher.counts["cut"],
                         "completed": stitcher.counts["completed"],
                         "completed_from_later": stitcher.counts["completed-from-later"],
                         "not_completed": stitcher.not_completed(),
                         "why_not": {k.split(":", 1)[1]: v
                                     for k, v in stitcher.counts.items()
                                     if k.startswith("not-completed:") and v}}
    return out


def describe(result: dict[str, Any], path: str) -> str:
    """The text of a diagnosis_result() of the file at `path`."""
    lines = []
    n = result["samples"]
    inl = result.get("inlined_frames") or 0
    # (as script prints them: with the inlined functions, which script
    # --no-inline leaves out, so its count is smaller)
    lines.append("%s: %d samples, %d frames%s" % (
        path, n, result["frames"],
        " as script prints them, %d of them inlined functions (script "
        "--no-inline prints fewer)" % inl if inl else ""))
    if n == 0:
        lines.append("no samples: nothing to diagnose")
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append("%-24s %9s %8s %7s  %s" % ("class", "frames", "samples", "share", "what"))
    for c in result["classes"]:
        lines.append("%-24s %9d %8d %6.1f%%  %s" % (c["class"], c["frames"], c["samples"],
                                                   100.0 * c["share"], c["title"]))
    problems = [c for c in result["classes"] if c["kind"] != "resolved" or c["fix"]]
    if not any(c["kind"] == "problem" for c in problems):
        lines.append("")
        lines.append("no problem found: every frame resolved")
    for c in problems:
        lines.append("")
        lines.append("%s: %d frames, %d samples (%.1f%%): %s" % (
            c["class"], c["frames"], c["samples"], 100.0 * c["share"], c["title"]))
        for b in c["binaries"]:
            lines.append("  binary: %s%s  (%d frames, %d samples)" % (
                b["path"], " build-id %s" % b["build_id"] if b["build_id"] else "",
                b["frames"], b["samples"]))
            for found in b.get("found") or ():
                lines.append("    found: %s" % found)
            if b.get("fix"):
                lines.append("    fix: %s" % b["fix"])
        ex = c["example"]
        if ex:
            t = ex["time"] if isinstance(ex["time"], int) else 0
            lines.append("  example: %s %s/%s %d.%09d: %s" % (
                ex["comm"], ex["pid"], ex["tid"], t // 10**9, t % 10**9,
                " <- ".join(ex["stack"])))
        fns = (c.get("detail") or {}).get("functions")
        if fns:
            lines.append("  functions: %s" % ", ".join(
                "%s (%d)" % (name, n) for name, n in Counter(fns).most_common(5)))
        if c["fix"]:
            lines.append("  fix: %s" % c["fix"])
    st = result.get("stitch")
    if st:
        lines.append("")
        lines.append("stack stitching: %d of %d cut DWARF stacks completed from their thread's "
                     "other samples (perfdata ... --stitch), %d not%s" % (
                         st["completed"], st["cut"], st["not_completed"],
                         " (%s)" % ", ".join("%s %d" % kv for kv in st["why_not"].items())
                         if st["why_not"] else ""))
    return "\n".join(lines) + "\n"
