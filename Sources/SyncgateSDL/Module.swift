// The SDL module: see the issue that builds it.
