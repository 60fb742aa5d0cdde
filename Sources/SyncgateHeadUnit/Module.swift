// The HeadUnit module: see the issue that builds it.
