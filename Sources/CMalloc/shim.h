// glibc's malloc tuning (mallopt, malloc_trim), which Swift's Glibc module does not include. Other C libraries
// (musl, in a static build) have neither: nothing is declared there, and the caller does without.
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
