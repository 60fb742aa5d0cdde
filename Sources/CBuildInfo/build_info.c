#include "build_info.h"

#ifndef SYNCGATE_COMMIT
#define SYNCGATE_COMMIT ""
#endif

#ifndef SYNCGATE_BUILD_DATE
#define SYNCGATE_BUILD_DATE ""
#endif

const char *syncgate_build_commit(void) { return SYNCGATE_COMMIT; }

const char *syncgate_build_date(void) { return SYNCGATE_BUILD_DATE; }
