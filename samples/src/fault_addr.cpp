// Page faults on data of every kind, for `perf record -e page-faults -d`
// and `perf script -F addr,sym,dso` (tests/test_script_fault_addr.py): a
// zero-initialised global (.bss: anonymous memory past the file's pages),
// initialised ones in .data (a plain name, a namespaced object: a mangled
// name, a function-local static: a local symbol), the heap, and a data file
// mapped with mmap (no ELF: its addresses have no symbols).
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

char fault_bss_table[8 << 20];
char fault_data_table[1 << 20] = {1};

namespace faults {
struct Pages {
    char bytes[4 << 20];
};
Pages pages_in_namespace = {{1}};
}

static char *local_static() {
    static char kept[2 << 20] = {1};
    return kept;
}

int main(int argc, char **argv) {
    std::memset(fault_bss_table, 2, sizeof fault_bss_table);
    for (size_t i = 0; i < sizeof fault_data_table; i += 4096)
        fault_data_table[i] = 3;
    std::memset(faults::pages_in_namespace.bytes, 4, sizeof faults::pages_in_namespace.bytes);
    std::memset(local_static(), 5, 2 << 20);
    char *heap = static_cast<char *>(std::malloc(16 << 20));
    std::memset(heap, 6, 16 << 20);
    int sum = heap[4096] + fault_bss_table[9] + local_static()[7];
    if (argc > 1) {
        // a data file, mapped and read (its pages fault in)
        int fd = open(argv[1], O_RDONLY);
        if (fd >= 0) {
            off_t size = lseek(fd, 0, SEEK_END);
            char *p = static_cast<char *>(mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
            if (p != MAP_FAILED) {
                for (off_t i = 0; i < size; i += 4096)
                    sum += p[i];
                munmap(p, size);
            }
            close(fd);
        }
    }
    std::free(heap);
    return sum == -1;
}
