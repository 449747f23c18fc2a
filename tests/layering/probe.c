/*
 * probe — one include, compiled with the include directories of one module
 * (tests/CMakeLists.txt, "layering"): PROBE_HEADER names a header that
 * module may not see, and the build must refuse it.
 */
#include PROBE_HEADER

int probe(void);
int probe(void)
{
    return 0;
}
