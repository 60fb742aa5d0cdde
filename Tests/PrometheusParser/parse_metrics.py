#!/usr/bin/env python3
"""Parses Prometheus text (the file named, or standard input) with prometheus_client's own parser and prints its families as JSON:
[{"name", "type", "help", "samples": [{"name", "labels", "value"}]}]. A text the parser refuses exits 1 with its
error. Used by Tests/SyncgateHTTPTests/MetricsTests.swift to read /metrics as Prometheus would."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def number(value):
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return value


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as f:
            text = f.read()
    else:
        text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as error:  # the parser's refusal is the finding
        print(f"prometheus_client refused the text: {error!r}", file=sys.stderr)
        return 1
    names = [family.name for family in families]
    if len(names) != len(set(names)):
        print(f"a family appears twice: {sorted(names)}", file=sys.stderr)
        return 1
    out = [
        {
            "name": family.name,
            "type": family.type,
            "help": family.documentation,
            "samples": [{"name": s.name, "labels": s.labels, "value": number(s.value)} for s in family.samples],
        }
        for family in families
    ]
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
