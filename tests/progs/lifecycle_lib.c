/* A library for tests/progs/lifecycle.c, built with -DLIB=a or -DLIB=b:
 * LIB_leaf <- LIB_work.  Both builds have the same layout (a_work and
 * b_work at the same offset), so one loaded where the other was has its
 * functions at the other's addresses: only the maps tell them apart. */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(LIB, name)

volatile long CAT(LIB, sink);

__attribute__((noinline)) long FN(leaf)(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i * i % 7;
        CAT(LIB, sink) = s;
    }
    return s;
}

__attribute__((noinline)) long FN(work)(long n)
{
    long r = FN(leaf)(n);
    CAT(LIB, sink) = r;
    return r + 1;
}
