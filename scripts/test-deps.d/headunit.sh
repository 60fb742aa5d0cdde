#!/usr/bin/env bash
# The head-unit tests need nothing outside the package: the simulator (syncgate-headunit-sim) is built by
# `swift build` / `swift test`, and the recorded Core session is read from ../shared when present.
exit 0
