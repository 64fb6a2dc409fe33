"""The `perfdata diagnose` command: every sample of the file diagnosed
(stitching on, to say what --stitch completes), printed as text or JSON."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from .diagnosis import Diagnosis
from .output import describe

if TYPE_CHECKING:
    import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..options import add_input_argument, add_symbolize_options
    p = subparsers.add_parser("diagnose", help="why frames are [unknown] or wrong, and the fix")
    add_input_argument(p)
    p.add_argument("--json", action="store_true", help="the table as one JSON object")
    add_symbolize_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO) -> None:
    import sys
    from dataclasses import replace

    from ...resolve import build_sample_symbolizer
    from ...run.profile import open_profile
    from ..options import resolve_options
    pf = open_profile(args.file, getattr(args, "strict", False))
    # Stitching always: the report says how many cut stacks --stitch completes.
    samples = build_sample_symbolizer(pf, replace(resolve_options(args), stitch=True))
    diag = Diagnosis(samples)
    try:
        diag.run()
    finally:
        seen = set()
        for message in list(pf.warnings) + list(samples.symbolizer.warnings):
            if message not in seen:
                seen.add(message)
                sys.stderr.write("perfdata: warning: %s\n" % message)
    result = diag.result()
    result["file"] = str(args.file)
    if args.json:
        out.write(json.dumps(result, indent=1, default=str) + "\n")
    else:
        out.write(describe(result, args.file))
