"""BPF_PROG_INFO's lines: each program and sub-program as perf names it
(bpf_prog_<tag>_<name>, the name from the BPF_BTF section's func info
where there is one), with its address and size."""
from __future__ import annotations

import struct
from typing import Any

_BTF_KIND_EXTRA = {1: lambda v: 4, 3: lambda v: 12, 4: lambda v: 12 * v, 5: lambda v: 12 * v,
                   6: lambda v: 8 * v, 13: lambda v: 8 * v, 14: lambda v: 4,
                   15: lambda v: 12 * v, 17: lambda v: 4, 19: lambda v: 12 * v}


def _btf_type_name(btf: bytes, type_id: int, little: bool) -> str | None:
    """The name of BTF type `type_id`, or None."""
    e = "<" if little else ">"
    if len(btf) < 24:
        return None
    magic, version, flags, hdr_len = struct.unpack_from(e + "HBBI", btf, 0)
    if magic != 0xeb9f:
        return None
    type_off, type_len, str_off, str_len = struct.unpack_from(e + "IIII", btf, 8)
    types = hdr_len + type_off
    strings = hdr_len + str_off
    pos, end, current = types, types + type_len, 1
    while pos + 12 <= end and current < type_id:
        _, info, _ = struct.unpack_from(e + "III", btf, pos)
        kind, vlen = (info >> 24) & 0x1f, info & 0xffff
        pos += 12 + _BTF_KIND_EXTRA.get(kind, lambda v: 0)(vlen)
        current += 1
    if current != type_id or pos + 12 > end:
        return None
    name_off = struct.unpack_from(e + "I", btf, pos)[0]
    start = strings + name_off
    stop = btf.find(b"\0", start, strings + str_len)
    if stop < 0:
        return None
    return btf[start:stop].decode("utf-8", "replace")


def describe_bpf_prog_info(infos: list[dict[str, Any]], btfs: dict[int, bytes],
                           little: bool) -> list[str]:
    lines = []
    for info in infos:
        count = info["nr_jited_ksyms"]
        if count != info["nr_prog_tags"] or count != info["nr_jited_func_lens"]:
            continue
        btf = btfs.get(info["btf_id"]) if info["btf_id"] else None

        def name(sub: int) -> str:
            tag = info["prog_tags_array"][sub].hex()
            short = None
            if btf is not None and info["func_info_rec_size"]:
                short = _bpf_func_name(info, btf, sub, little)
            elif sub == 0 and count == 1:
                short = info["name"] or None
            else:
                short = "F"
            return "bpf_prog_" + tag + ("_" + short if short else "")

        addrs, lens = info["jited_ksyms_array"], info["jited_func_lens_array"]
        if count == 1:
            lines.append("# bpf_prog_info %d: %s addr 0x%x size %d"
                         % (info["id"], name(0), addrs[0], lens[0]))
            continue
        lines.append("# bpf_prog_info %d:" % info["id"])
        for sub in range(count):
            lines.append("# \tsub_prog %d: %s addr 0x%x size %d"
                         % (sub, name(sub), addrs[sub], lens[sub]))
    return lines


def _bpf_func_name(info: dict[str, Any], btf: bytes, sub: int, little: bool) -> str | None:
    data = info.get("_data", b"")
    off = info["func_info"] + sub * info["func_info_rec_size"]
    if off + 8 > len(data):
        return None
    type_id = struct.unpack_from("<I" if little else ">I", data, off + 4)[0]
    return _btf_type_name(btf, type_id, little)
