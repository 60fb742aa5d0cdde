"""The command line of scripts/bench: its flags, the sizes (full and --smoke), running the groups chosen, the
tables."""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

from .bench import Bench
from .fleet import print_fleet_faults, print_fleet_table
from .flaky import print_flaky_table
from .gateway import print_gateway_table
from .harness import GROUPS, build, ensure_tools, log, print_table
from .limits import print_limits_table


def main(doc):
    """`doc`: scripts/bench's docstring, the help's description."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition (for CI)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per case (the median is printed)")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups: {', '.join(GROUPS)}")
    parser.add_argument("--bin-dir", help="folder holding syncgate (and syncgate-headunit-sim for the head unit group): "
                                          "skips the release build")
    parser.add_argument("--no-peers", action="store_true",
                        help="syncgate's own cases only: no rsync, rclone, aws or lsyncd runs (the floors stay), to "
                             "compare two builds of syncgate group by group in a shorter time")
    parser.add_argument("--fleet-delay-ms", type=int, default=20,
                        help="fleet: how long the fault proxy holds each request to S3 (default 20, the issue's)")
    args = parser.parse_args()
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown group(s): {', '.join(sorted(unknown))}")
    sizes = dict(files=20000, folders=200, big_local_mib=1024, big_s3_mib=256, many=100000, hu_files=500, hu_mib=50,
                 hu_window_s=3, hu_window_delay_ms=50, hu_window_high=100, hu_window_low=400,
                 away_files=10000, limit_rate_files=300, limit_interval_files=100, limit_bw_files=20,
                 limit_bw_pair_files=30,
                 gw_settles=(1.0, 0.1), gw_rate=100, gw_seconds=60, gw_burst=10000, gw_default_files=20, gw_idle=60,
                 gw_events=1_000_000, gw_event_files=5000, gw_segments=4, fleet_files=2000, fleet_folders=20,
                 fleet_fault_files=2000, fleet_fault_kills=3, fleet_fault_restarts=1, fleet_fault_lease=5,
                 flaky_files=2000, flaky_folders=20, flaky_fractions=(0.0, 0.1, 0.3),
                 flaky_tools=("syncgate", "aws s3 sync", "rclone copy"), flaky_max_runs=8, flaky_run_timeout=900,
                 check_files=100000, check_objects=20000)
    reps = args.reps
    if args.smoke:
        sizes = dict(files=100, folders=5, big_local_mib=4, big_s3_mib=17, many=500, hu_files=10, hu_mib=2,
                     hu_window_s=2, hu_window_delay_ms=50, hu_window_high=10, hu_window_low=40,
                     away_files=200, shared_server=True, limit_rate_files=20, limit_interval_files=10, limit_bw_files=4,
                     limit_bw_pair_files=10,
                     gw_settles=(1.0,), gw_rate=100, gw_seconds=0.2, gw_burst=200, gw_default_files=0, gw_idle=2,
                     gw_events=10_000, gw_event_files=500, gw_segments=2, fleet_files=60, fleet_folders=3,
                     fleet_fault_files=200, fleet_fault_kills=1, fleet_fault_restarts=0, fleet_fault_lease=5,
                     flaky_files=40, flaky_folders=2, flaky_fractions=(0.3,), flaky_tools=("syncgate",),
                     flaky_max_runs=8, flaky_run_timeout=120, check_files=500, check_objects=200)
        reps = 1
    ensure_tools(groups)
    bin_dir = build(args.bin_dir, ("syncgate", "syncgate-headunit-sim") if "headunit" in groups else ("syncgate",))
    work = tempfile.mkdtemp(prefix="syncgate-bench-")
    bench = Bench(bin_dir, work, sizes, reps)
    bench.fleet_delay_ms = args.fleet_delay_ms
    bench.peers = not args.no_peers
    started = time.time()
    # SIGTERM ends the bench as Ctrl-C does: through the `finally` below, which stops what the bench started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for group in GROUPS:
            if group in groups:
                runs = "one run" if group in ("gateway", "flaky") else f"{reps} repetition{'s' if reps > 1 else ''}"
                log(f"{group}: running ({runs})")
                getattr(bench, group)()
        repeated = f"{reps} repetition(s), medians; " if set(groups) - {"gateway", "flaky"} else ""
        print(f"syncgate benchmark: {os.cpu_count()} cores, {repeated}"
              f"binaries {bin_dir}; {time.time() - started:.0f} s in all")
        if bench.rows:
            print_table(bench.rows)
        if bench.limit_rows:
            if bench.rows:
                print()
            print("limits: the local destination, fsync: false, concurrency: 4 (the exec row: the Python test plugin, paced by "
                  "grants); measured from the sync --json events")
            print_limits_table(bench.limit_rows)
        if bench.fleet_rows:
            if bench.rows or bench.limit_rows:
                print()
            print(f"fleet: {sizes['fleet_files']} x 4 KiB to moto's S3 behind the fault proxy (each request held "
                  f"{bench.fleet_delay_ms} ms); 'in flight': instances x concurrency (4: the default); instances started "
                  f"together, time from the first start to the last exit; 'vs 1': against 1 x 4 on PostgreSQL")
            print_fleet_table(bench.fleet_rows, bench.fleet_local, sizes["fleet_files"])
            if bench.fleet_fault:
                print_fleet_faults(bench.fleet_fault)
        if bench.flaky_rows:
            if bench.rows or bench.limit_rows or bench.fleet_rows:
                print()
            print(f"flaky: {sizes['flaky_files']} files of 1-4 KiB to moto's S3 behind the fault proxy answering that "
                  f"share of requests with 500 InternalError (seed {Bench.FLAKY_SEED}); up to {sizes['flaky_max_runs']} "
                  f"runs each until all are delivered (syncgate: concurrency 8, retry.file 2; sync, then retry)")
            print_flaky_table(bench.flaky_rows, sizes["flaky_files"])
        if bench.gateway_rows:
            if bench.rows or bench.limit_rows or bench.fleet_rows or bench.flaky_rows:
                print()
            print(f"gateway: one run; 1-minute load average {bench.gateway_load[0]:.2f} at its start, "
                  f"{bench.gateway_load[1]:.2f} at its end")
            print_gateway_table(bench.gateway_rows)
    finally:
        bench.stop_all()
        began = time.monotonic()
        shutil.rmtree(work, ignore_errors=True)
        log(f"removed the bench's files in {time.monotonic() - began:.0f} s")
