// The Sheets module: see the issue that builds it.
