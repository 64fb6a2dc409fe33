// cpp_inline: C++ templates, namespaces and inlined functions (-O2 -g).
// Out-of-line (noinline) frames:
//   perfdemo::Mixer<unsigned long>::run(unsigned long)
//     <- perfdemo::detail::drive<perfdemo::Mixer<unsigned long> >(...)  <- main
// Inlined into Mixer::run: perfdemo::detail::rotate<unsigned long>, Mixer::step.
#include <cstdio>
#include <cstdlib>

namespace perfdemo {
namespace detail {

template <typename T>
inline __attribute__((always_inline)) T rotate(T v, unsigned k)
{
    return (v << k) | (v >> (sizeof(T) * 8 - k));
}

}  // namespace detail

template <typename T>
class Mixer {
public:
    explicit Mixer(T seed) : state_(seed) {}

    inline __attribute__((always_inline)) void step(T i)
    {
        state_ = detail::rotate<T>(state_ ^ i, 17) * static_cast<T>(0x9E3779B97F4A7C15ULL);
    }

    __attribute__((noinline)) T run(unsigned long n)
    {
        for (unsigned long i = 0; i < n; i++)
            step(static_cast<T>(i));
        return state_;
    }

private:
    T state_;
};

namespace detail {

template <typename M>
__attribute__((noinline)) unsigned long drive(M &m, unsigned long n)
{
    return static_cast<unsigned long>(m.run(n)) + 1;
}

}  // namespace detail
}  // namespace perfdemo

int main(int argc, char **argv)
{
    double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
    if (scale <= 0)
        scale = 1.0;
    perfdemo::Mixer<unsigned long> m(12345);
    unsigned long r = perfdemo::detail::drive(m, (unsigned long)(400000000 * scale));
    std::printf("cpp_inline: %lu\n", r);
    return 0;
}
