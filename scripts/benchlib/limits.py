"""Limits (issue 18): a destination's rate, min_interval and bandwidth, measured from the sync --json events."""
import json
import os
import statistics
import subprocess
import sys
import time

from .harness import ROOT, event_time, log, make_tree, reset, tree_summary


class LimitsGroup:
    def limits(self):
        """Each limit alone on the local destination (`fsync: false`, `concurrency: 4`: the limit, not the disk or
        the concurrency, is what holds the uploads back), measured from the times of the `sync --json` events:
        `rate` and `min_interval` from the `started` events (one per upload: a request, see docs/engine.md), the
        bandwidth as the bytes over the time from the first `started` to the last `synced`. The bandwidth is also
        measured on the same files through the Python test plugin (Tests/ExecPlugins/test_plugin.py, which paces its
        reads by asking syncgate for each MiB, docs/plugins.md) and through `local`, alternating in each repetition,
        at 5 MiB/s: the plugin's rate must be within 10% of local's."""
        s = self.sizes
        kib = 1024
        cases = [
            ("rate", f"{s['limit_rate_files']} x 1 KiB", "rate: {requests_per_second: 20}", s["limit_rate_files"], kib,
             20.0, "requests/s"),
            ("min_interval", f"{s['limit_interval_files']} x 1 KiB", "min_interval: 100ms", s["limit_interval_files"], kib,
             0.1, "s between starts"),
            ("bandwidth", f"{s['limit_bw_files']} x 1 MiB", "bandwidth: 2MiB", s["limit_bw_files"], 1 << 20,
             2.0, "MiB/s"),
        ]
        for name, what, key, files, size, configured, unit in cases:
            src = self.path(f"limits-{name}")
            make_tree(src, files, size, 1)
            values = [self.limit_run(name, key, files, size, unit, configured, src, rep, "local") for rep in range(self.reps)]
            self.limit_rows.append((name, what, key, configured, values, unit))
            reset(src)
        # The same 5 MiB/s through local and through the exec plugin, alternating in each repetition.
        files = s["limit_bw_pair_files"]
        src = self.path("limits-bandwidth-pair")
        make_tree(src, files, 1 << 20, 1)
        pair = {"local": [], "exec": []}
        for rep in range(self.reps):
            for dest in pair:
                pair[dest].append(self.limit_run(f"bandwidth {dest}", "bandwidth: 5MiB", files, 1 << 20, "MiB/s", 5.0,
                                                 src, rep, dest))
        for dest, values in pair.items():
            self.limit_rows.append((f"bandwidth {dest}", f"{files} x 1 MiB", "bandwidth: 5MiB", 5.0, values, "MiB/s"))
        reset(src)

    def limit_run(self, name, key, files, size, unit, configured, src, rep, dest):
        """One sync of `src` under one limit to `dest` (`local`, or `exec`: the Python test plugin); the measure."""
        tag = name.replace(" ", "-")
        out = self.path(f"limits-{tag}-out-{rep}")
        if dest == "exec":
            plugin = os.path.join(ROOT, "Tests", "ExecPlugins", "test_plugin.py")
            yaml = (f"    type: exec\n    command: [{json.dumps(plugin)}]\n    concurrency: 4\n"
                    f"    settings: {{path: {json.dumps(out)}}}\n    {key}")
        else:
            yaml = f"    type: local\n    path: {json.dumps(out)}\n    fsync: false\n    concurrency: 4\n    {key}"
        config = self.config(f"limits-{tag}", src, yaml)
        began = time.perf_counter()
        proc = subprocess.run([self.syncgate, "sync", "--json", "--config", config], cwd=self.work,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"limits {name}: sync exited {proc.returncode}: {proc.stderr[-2000:]}")
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        starts = sorted(event_time(e) for e in events if e.get("event") == "started")
        synced = sorted(event_time(e) for e in events if e.get("event") == "synced")
        self.check(f"limits {name}", tree_summary(out), tree_summary(src))
        self.check_ledger(config, files)
        if len(starts) != files:
            raise RuntimeError(f"limits {name}: {len(starts)} uploads started for {files} files (retries?)")
        if name == "rate":
            value = (len(starts) - 1) / (starts[-1] - starts[0])
        elif name == "min_interval":
            value = (starts[-1] - starts[0]) / (len(starts) - 1)
        else:
            value = files * size / (1 << 20) / (synced[-1] - starts[0])
        log(f"  {name}: {value:.3f} {unit} (configured {configured}); the run took {time.perf_counter() - began:.1f} s")
        reset(out)
        return value


def print_limits_table(rows):
    """The limits: configured against measured (median of the repetitions), and whether within 10%."""
    print(f"{'limit':16} {'case':16} {'configured':34} {'measured':>10}  {'unit':18} within 10%")
    for name, what, key, configured, values, unit in rows:
        value = statistics.median(values)
        deviation = (value - configured) / configured
        verdict = f"{'yes' if abs(deviation) <= 0.10 else 'NO'} ({deviation:+.1%})"
        print(f"{name:16} {what:16} {key:34} {value:10.3f}  {unit:18} {verdict}")
    medians = {name: statistics.median(values) for name, _, _, _, values, _ in rows}
    if "bandwidth local" in medians and "bandwidth exec" in medians:
        ratio = medians["bandwidth exec"] / medians["bandwidth local"]
        print(f"bandwidth through the exec plugin: {ratio:.1%} of local's rate "
              f"({'within' if abs(ratio - 1) <= 0.10 else 'NOT within'} 10%)")
    sys.stdout.flush()
