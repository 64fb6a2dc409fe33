"""Numbers of the perf.data format, with the kernel's and perf's names.

Sources: include/uapi/linux/perf_event.h, tools/lib/perf/include/perf/event.h,
tools/perf/util/header.h.
"""
from __future__ import annotations

import enum


class RecordType(enum.IntEnum):
    # Kernel records (perf_event_type).
    MMAP = 1
    LOST = 2
    COMM = 3
    EXIT = 4
    THROTTLE = 5
    UNTHROTTLE = 6
    FORK = 7
    READ = 8
    SAMPLE = 9
    MMAP2 = 10
    AUX = 11
    ITRACE_START = 12
    LOST_SAMPLES = 13
    SWITCH = 14
    SWITCH_CPU_WIDE = 15
    NAMESPACES = 16
    KSYMBOL = 17
    BPF_EVENT = 18
    CGROUP = 19
    TEXT_POKE = 20
    AUX_OUTPUT_HW_ID = 21
    # perf's own records (perf_user_event_type), written by the tool.
    HEADER_ATTR = 64
    HEADER_EVENT_TYPE = 65
    HEADER_TRACING_DATA = 66
    HEADER_BUILD_ID = 67
    FINISHED_ROUND = 68
    ID_INDEX = 69
    AUXTRACE_INFO = 70
    AUXTRACE = 71
    AUXTRACE_ERROR = 72
    THREAD_MAP = 73
    CPU_MAP = 74
    STAT_CONFIG = 75
    STAT = 76
    STAT_ROUND = 77
    EVENT_UPDATE = 78
    TIME_CONV = 79
    HEADER_FEATURE = 80
    COMPRESSED = 81
    FINISHED_INIT = 82
    COMPRESSED2 = 83


#: Records the kernel writes (below this type) carry the sample_id trailer
#: and an event id; perf's own records (this type and above) do not.
USER_TYPE_START = 64


#: Records perf's --stats calls by a shorter name than the enum's.
STATS_NAMES: dict[int, str] = {
    RecordType.HEADER_ATTR: "ATTR",
    RecordType.HEADER_EVENT_TYPE: "EVENT_TYPE",
    RecordType.HEADER_TRACING_DATA: "TRACING_DATA",
    RecordType.HEADER_BUILD_ID: "BUILD_ID",
    RecordType.HEADER_FEATURE: "FEATURE",
}


def record_type_name(rtype: int) -> str:
    try:
        return RecordType(rtype).name
    except ValueError:
        return "UNKNOWN(%d)" % rtype


class SampleType(enum.IntFlag):
    IP = 1 << 0
    TID = 1 << 1
    TIME = 1 << 2
    ADDR = 1 << 3
    READ = 1 << 4
    CALLCHAIN = 1 << 5
    ID = 1 << 6
    CPU = 1 << 7
    PERIOD = 1 << 8
    STREAM_ID = 1 << 9
    RAW = 1 << 10
    BRANCH_STACK = 1 << 11
    REGS_USER = 1 << 12
    STACK_USER = 1 << 13
    WEIGHT = 1 << 14
    DATA_SRC = 1 << 15
    IDENTIFIER = 1 << 16
    TRANSACTION = 1 << 17
    REGS_INTR = 1 << 18
    PHYS_ADDR = 1 << 19
    AUX = 1 << 20
    CGROUP = 1 << 21
    DATA_PAGE_SIZE = 1 << 22
    CODE_PAGE_SIZE = 1 << 23
    WEIGHT_STRUCT = 1 << 24


class ReadFormat(enum.IntFlag):
    TOTAL_TIME_ENABLED = 1 << 0
    TOTAL_TIME_RUNNING = 1 << 1
    ID = 1 << 2
    GROUP = 1 << 3
    LOST = 1 << 4


#: perf_branch_sample_type bit that adds hw_idx to BRANCH_STACK samples.
BRANCH_SAMPLE_HW_INDEX = 1 << 17
#: perf_branch_sample_type bit of LBR call-stack mode (--call-graph=lbr).
BRANCH_SAMPLE_CALL_STACK = 1 << 11


class Feature(enum.IntEnum):
    RESERVED = 0
    TRACING_DATA = 1
    BUILD_ID = 2
    HOSTNAME = 3
    OSRELEASE = 4
    VERSION = 5
    ARCH = 6
    NRCPUS = 7
    CPUDESC = 8
    CPUID = 9
    TOTAL_MEM = 10
    CMDLINE = 11
    EVENT_DESC = 12
    CPU_TOPOLOGY = 13
    NUMA_TOPOLOGY = 14
    BRANCH_STACK = 15
    PMU_MAPPINGS = 16
    GROUP_DESC = 17
    AUXTRACE = 18
    STAT = 19
    CACHE = 20
    SAMPLE_TIME = 21
    MEM_TOPOLOGY = 22
    CLOCKID = 23
    DIR_FORMAT = 24
    BPF_PROG_INFO = 25
    BPF_BTF = 26
    COMPRESSED = 27
    CPU_PMU_CAPS = 28
    CLOCK_DATA = 29
    HYBRID_TOPOLOGY = 30
    PMU_CAPS = 31


def feature_name(fid: int) -> str:
    try:
        return Feature(fid).name
    except ValueError:
        return str(fid)


#: Size of the feature bitmap in the file header (HEADER_FEAT_BITS).
HEADER_FEAT_BITS = 256


class CallchainContext(enum.IntEnum):
    """Markers inside a CALLCHAIN (as u64, -32 .. -4095)."""
    HV = (1 << 64) - 32
    KERNEL = (1 << 64) - 128
    USER = (1 << 64) - 512
    GUEST = (1 << 64) - 2048
    GUEST_KERNEL = (1 << 64) - 2176
    GUEST_USER = (1 << 64) - 2560
    MAX = (1 << 64) - 4095


def is_callchain_context(value: int) -> bool:
    return value >= CallchainContext.MAX


# perf_event_header.misc
MISC_CPUMODE_MASK = 0x7
MISC_CPUMODE_UNKNOWN = 0
MISC_KERNEL = 1
MISC_USER = 2
MISC_HYPERVISOR = 3
MISC_GUEST_KERNEL = 4
MISC_GUEST_USER = 5
MISC_PROC_MAP_PARSE_TIMEOUT = 1 << 12
MISC_MMAP_DATA = 1 << 13            # on MMAP/MMAP2
MISC_COMM_EXEC = 1 << 13            # on COMM
MISC_FORK_EXEC = 1 << 13            # on FORK
MISC_SWITCH_OUT = 1 << 13           # on SWITCH
MISC_EXACT_IP = 1 << 14             # on SAMPLE
MISC_SWITCH_OUT_PREEMPT = 1 << 14   # on SWITCH
MISC_MMAP_BUILD_ID = 1 << 14        # on MMAP2
MISC_LOST_SAMPLES_BPF = 1 << 15     # on LOST_SAMPLES: dropped by a BPF filter
MISC_EXT_RESERVED = 1 << 15

CPUMODE_NAMES = {
    MISC_CPUMODE_UNKNOWN: "unknown", MISC_KERNEL: "kernel", MISC_USER: "user",
    MISC_HYPERVISOR: "hypervisor", MISC_GUEST_KERNEL: "guest kernel",
    MISC_GUEST_USER: "guest user",
}

# perf_event_attr.type
class AttrType(enum.IntEnum):
    HARDWARE = 0
    SOFTWARE = 1
    TRACEPOINT = 2
    HW_CACHE = 3
    RAW = 4
    BREAKPOINT = 5


# The sizes perf_event_attr has had (PERF_ATTR_SIZE_VER0..).
ATTR_SIZE_VER0 = 64
ATTR_SIZES = (64, 72, 80, 96, 104, 112, 120, 128, 136, 144)

# Magic numbers of the file header, read as a little-endian u64.
MAGIC_V1 = b"PERFFILE"
MAGIC_V2 = b"PERFILE2"
