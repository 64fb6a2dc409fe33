/* Shared helpers for the perfdata sample programs.
 * scale(): optional argv[1] multiplies the work (record.sh uses a smaller
 * value for --call-graph=dwarf recordings to keep perf.data small). */
#ifndef SAMPLES_COMMON_H
#define SAMPLES_COMMON_H
#include <stdlib.h>

static inline double sample_scale(int argc, char **argv)
{
    if (argc > 1) {
        double s = atof(argv[1]);
        if (s > 0)
            return s;
    }
    return 1.0;
}
#endif
