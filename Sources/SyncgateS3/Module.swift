// The S3 module: see the issue that builds it.
