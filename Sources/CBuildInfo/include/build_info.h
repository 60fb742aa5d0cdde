#ifndef SYNCGATE_BUILD_INFO_H
#define SYNCGATE_BUILD_INFO_H

/// The git commit the binary was built from ("" when the build did not say: a plain `swift build`).
/// Set by Package.swift from the SYNCGATE_COMMIT environment variable (scripts/install sets it).
const char *syncgate_build_commit(void);

/// The build date, YYYY-MM-DD ("" when the build did not say), from SYNCGATE_BUILD_DATE.
const char *syncgate_build_date(void);

#endif
