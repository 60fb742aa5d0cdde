"""Fleet (issues 19 and 31): several instances on one PostgreSQL ledger, to moto's S3 behind the slowed fault proxy;
then a run with faults (kill -9 of an instance, a PostgreSQL restart) and the keys sent more than once."""
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

from .harness import log, make_tree, proc_cpu_seconds, reset, sh, stop, tree_summary
from .servers import Postgres, put_lines


class FleetGroup:
    def start_slow_s3(self):
        """moto behind the fault proxy in `delay` mode (each request held `fleet_delay_ms`, 20 by default):
        (processes, moto's own endpoint (for the checks, not slowed), the proxy's endpoint (for syncgate), the
        proxy's control port)."""
        return self.start_proxied_s3({"mode": "delay", "ms": self.fleet_delay_ms})

    def fleet_config(self, name, source, state, destination_yaml):
        """A config like ``config`` with `state:` given: a SQLite file (a fresh folder) or a PostgreSQL URL."""
        if not state.startswith("postgres"):
            reset(os.path.dirname(state))
        path = self.path(f"{name}.yaml")
        with open(path, "w") as f:
            f.write(f"version: 1\nstate: {json.dumps(state)}\n"
                    f"sources: [{{name: src, path: {json.dumps(source)}}}]\n"
                    f"destinations:\n  - name: dst\n{destination_yaml}\n"
                    f"routes: [{{match: ['**/*'], to: [dst]}}]\n")
        return path

    def fleet_run(self, config, instances, env, files, servers):
        """`instances` x `syncgate sync --json` on one config, started together. Each must exit 0. Returns a dict:
        seconds (from the first start to the last exit), exits (each instance's, in seconds from the start), shares
        (files synced by each), uploads (uploads started in all), cpu (the instances' CPU seconds, user + system),
        server_cpu (moto's and the proxy's over the run)."""
        os.sync()
        name = os.path.basename(config)[:-5]
        outputs = [open(self.path(f"{name}-{i}.jsonl"), "w+") for i in range(instances)]
        errors = [open(self.path(f"{name}-{i}.err"), "w+") for i in range(instances)]
        budget = 120 + files * 0.1
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_cpu = sum(proc_cpu_seconds(p.pid) for p in servers)
        try:
            start = time.perf_counter()
            procs = [subprocess.Popen([self.syncgate, "sync", "--json", "--config", config], cwd=self.work, env=env,
                                      stdout=out, stderr=err) for out, err in zip(outputs, errors)]
            self.processes.extend(procs)
            exits = [None] * instances
            while None in exits:
                for i, proc in enumerate(procs):
                    if exits[i] is None and proc.poll() is not None:
                        exits[i] = time.perf_counter() - start
                if time.perf_counter() - start > budget:
                    late = [i + 1 for i, e in enumerate(exits) if e is None]
                    raise RuntimeError(f"fleet {name}: instance(s) {late} of {instances} had not exited after "
                                       f"{budget:.0f} s; their output: {self.path(name)}-N.jsonl")
                time.sleep(0.01)
            seconds = max(exits)
            server_cpu = sum(proc_cpu_seconds(p.pid) for p in servers) - server_cpu
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = used.ru_utime + used.ru_stime - children.ru_utime - children.ru_stime
            shares, uploads = [], 0
            for i, (proc, out, err) in enumerate(zip(procs, outputs, errors)):
                out.seek(0)
                err.seek(0)
                if proc.returncode != 0:
                    raise RuntimeError(f"fleet {name}: instance {i + 1} of {instances} exited {proc.returncode}: "
                                       f"{err.read()[-2000:]}")
                events = [json.loads(line) for line in out if line.startswith("{")]
                shares.append(sum(1 for e in events if e.get("event") == "synced"))
                uploads += sum(1 for e in events if e.get("event") == "started")
        finally:
            for f in outputs + errors:
                f.close()
        log(f"  {seconds:8.3f} s  {instances} x syncgate sync ({name}): synced {'/'.join(map(str, shares))}, "
            f"exits at {'/'.join(f'{e:.1f}' for e in exits)} s, {uploads} uploads started; CPU: syncgate {cpu:.1f} s, "
            f"moto + proxy {server_cpu:.1f} s")
        return dict(seconds=seconds, exits=exits, shares=shares, uploads=uploads, cpu=cpu, server_cpu=server_cpu)

    def fleet(self):
        """1, 2 and 3 `syncgate sync` started together on one PostgreSQL ledger, and 1 on SQLite, sending the same
        files to moto's S3 behind the fault proxy (each request held 20 ms), `concurrency` at its default (4 uploads
        in flight per instance); and, for the machine's ceiling, 1 instance with `concurrency: 12` (as many uploads in
        flight as 3 x 4, no sharing). Then the ledger's own overhead: one instance to a local folder (`fsync: false`)
        on each engine. A fresh bucket and a fresh ledger (database) for every run."""
        s = self.sizes
        files = s["fleet_files"]
        src = self.path("fleet-tree")
        log(f"fleet: preparing {files} x 4 KiB in {s['fleet_folders']} folders; starting PostgreSQL")
        make_tree(src, files, 4096, s["fleet_folders"])
        expected = tree_summary(src)
        pg = Postgres()
        self.cleanups.append(pg.stop)
        runs = [("SQLite", 1, 4), ("PostgreSQL", 1, 4), ("PostgreSQL", 2, 4), ("PostgreSQL", 3, 4), ("PostgreSQL", 1, 12)]
        results = {run: [] for run in runs}  # fleet_run's dicts, with requests
        local = {"SQLite": [], "PostgreSQL": []}
        # Smoke: one moto and proxy for every run (a bucket each); full: a fresh pair per run, so that no run pays
        # for the objects of the runs before it.
        shared = self.start_slow_s3() if s.get("shared_server") else None
        try:
            for rep in range(self.reps):
                for engine, instances, concurrency in runs:
                    servers, direct, slow, control = shared or self.start_slow_s3()
                    try:
                        tag = f"fleet-{engine[0].lower()}{instances}c{concurrency}-{rep}"
                        env = self.s3_env(direct)
                        sh(self.aws(direct, "s3", "mb", f"s3://{tag}"), env=env, stdout=subprocess.DEVNULL)
                        state = pg.database(tag.replace("-", "_")) if engine == "PostgreSQL" \
                            else self.path(f"{tag}-state", "state.sqlite")
                        key = "" if concurrency == 4 else f"\n    concurrency: {concurrency}"  # 4: the default
                        cfg = self.fleet_config(tag, src, state, f"    type: s3\n    endpoint: {slow}\n"
                                                                 f"    region: us-east-1\n    bucket: {tag}{key}")
                        held = self.proxy_requests(control)
                        run = self.fleet_run(cfg, instances, env, files, servers)
                        run["requests"] = self.proxy_requests(control) - held
                        self.check(f"fleet {tag}", self.s3_count(direct, tag), expected)
                        self.check_ledger(cfg, files, env)
                        results[(engine, instances, concurrency)].append(run)
                    finally:
                        if not shared:
                            for proc in servers:
                                stop(proc)
                for engine in local:
                    tag = f"fleet-local-{engine[0].lower()}-{rep}"
                    out = self.path(f"{tag}-out")
                    state = pg.database(tag.replace("-", "_")) if engine == "PostgreSQL" \
                        else self.path(f"{tag}-state", "state.sqlite")
                    cfg = self.fleet_config(tag, src, state, f"    type: local\n    path: {json.dumps(out)}\n"
                                                             f"    fsync: false")
                    local[engine].append(self.sync(cfg)[0])
                    self.check(f"fleet {tag}", tree_summary(out), expected)
                    self.check_ledger(cfg, files)
            if shared:
                for proc in shared[0]:
                    stop(proc)
                shared = None
            self.fleet_fault = self.fleet_faults(pg)
        finally:
            if shared:
                for proc in shared[0]:
                    stop(proc)
            pg.stop()
        self.fleet_rows = [(engine, instances, concurrency, values)
                           for (engine, instances, concurrency), values in results.items()]
        self.fleet_local = local
        reset(src)

    FLEET_FAULT_SEED = 31  # which instance each kill picks

    def fleet_faults(self, pg):
        """Issue 31: 3 `syncgate sync` on one PostgreSQL ledger (`concurrency` 4 each) send `fleet_fault_files` files
        to moto's S3 behind the slowed proxy while faults strike: `kill -9` of a running instance (a replacement
        `sync` starts at once in its place) and a fast restart of the PostgreSQL server. The faults fire as the
        uploads progress (the k-th of K once k/(K+1) of the files have been stored), so that they land in the
        work whatever the speed of the binaries. Leases are shortened (`SYNCGATE_LEASE_SECONDS`) so that a dead
        instance's claims end within the run. An instance that exits non-zero on its own (not killed) is started
        again. Then every object is checked (size and ETag = MD5, from moto directly), the ledger must say every file
        synced, and moto's request log gives the PUTs per key: keys stored more than once (whole-object PUTs answered
        200, as the fleet test counts them), per fault."""
        s = self.sizes
        files, kills, restarts = s["fleet_fault_files"], s["fleet_fault_kills"], s["fleet_fault_restarts"]
        faults = ["kill"] * kills
        for i in range(restarts):
            faults.insert(min(len(faults), (i + 1) * (kills // (restarts + 1) + 1) - 1), "restart")
        src = self.path("fleet-fault-tree")
        make_tree(src, files, 4096, s["fleet_folders"])
        manifest = {}
        for dirpath, _, names in os.walk(src):
            for name in names:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    data = f.read()
                manifest[os.path.relpath(path, src)] = (len(data), hashlib.md5(data).hexdigest(), path)
        moto_log = self.path("fleet-fault-moto.log")
        log(f"fleet: faults: 3 instances, {files} files, {kills} kill(s) -9, {restarts} PostgreSQL restart(s)")
        servers, direct, slow, _ = self.start_proxied_s3({"mode": "delay", "ms": self.fleet_delay_ms}, moto_log)
        try:
            tag = "fleet-faults"
            env = dict(self.s3_env(direct), SYNCGATE_LEASE_SECONDS=str(s["fleet_fault_lease"]))
            sh(self.aws(direct, "s3", "mb", f"s3://{tag}"), env=env, stdout=subprocess.DEVNULL)
            cfg = self.fleet_config(tag, src, pg.database("fleet_faults"),
                                    f"    type: s3\n    endpoint: {slow}\n    region: us-east-1\n    bucket: {tag}")
            rng = random.Random(self.FLEET_FAULT_SEED)
            starts = 0
            slots = [None] * 3

            def launch(slot):
                nonlocal starts
                starts += 1
                with open(self.path(f"{tag}-{starts}.err"), "w") as err:
                    slots[slot] = subprocess.Popen([self.syncgate, "sync", "--quiet", "--config", cfg], cwd=self.work,
                                                   env=env, stdout=subprocess.DEVNULL, stderr=err)
                self.processes.append(slots[slot])

            began = time.monotonic()
            for slot in range(3):
                launch(slot)
            fired, failed_exits, restart_seconds = [], [], []
            budget = 300 + files * 0.1
            while True:
                stored = len(put_lines(moto_log, tag))
                if len(fired) < len(faults) and stored >= files * (len(fired) + 1) // (len(faults) + 1):
                    fault = faults[len(fired)]
                    running = [i for i, p in enumerate(slots) if p.poll() is None]
                    if fault == "kill" and running:
                        victim = rng.choice(running)
                        slots[victim].kill()  # SIGKILL
                        slots[victim].wait()
                        launch(victim)
                        fired.append(f"kill -9 at {stored} PUTs")
                    elif fault == "restart":
                        restart_seconds.append(pg.restart())
                        fired.append(f"PostgreSQL restart at {stored} PUTs ({restart_seconds[-1]:.1f} s)")
                    else:  # not a fault: not counted
                        fired.append(f"kill -9 at {stored} PUTs: no instance running, none made")
                    log(f"  {time.monotonic() - began:6.1f} s: {fired[-1]}")
                for i, proc in enumerate(slots):
                    code = proc.poll()
                    if code not in (None, 0) and len(failed_exits) < 10:
                        failed_exits.append(code)
                        log(f"  instance exited {code} on its own; started again")
                        launch(i)
                if all(p.poll() == 0 for p in slots) and (len(fired) == len(faults) or stored >= files):
                    break
                if time.monotonic() - began > budget:
                    raise RuntimeError(f"fleet faults: not done after {budget:.0f} s; see {self.path(tag)}-N.err")
                time.sleep(0.05)
            seconds = time.monotonic() - began
            present = self.bucket_check(direct, tag, manifest, samples=5)
            self.check("fleet faults: objects in the bucket", present, files)
            self.check_ledger(cfg, files, env)
            per_key = {}
            for key in put_lines(moto_log, tag):
                per_key[key] = per_key.get(key, 0) + 1
            if len(per_key) != files:  # the count would mean nothing (moto's log format changed?)
                raise RuntimeError(f"fleet faults: moto's request log shows PUTs of {len(per_key)} keys for {files} files")
        finally:
            for proc in servers:
                stop(proc)
        reset(src)
        twice = sum(1 for n in per_key.values() if n > 1)
        made = sum(1 for f in fired if not f.endswith("none made"))
        result = dict(files=files, faults=fired, made=made, twice=twice, puts=sum(per_key.values()), starts=starts,
                      failed_exits=failed_exits, seconds=seconds, lease=s["fleet_fault_lease"])
        log(f"  fleet faults: {seconds:.1f} s, {made} faults ({'; '.join(fired)}), {starts} starts, "
            f"exits on their own {failed_exits or 'none'}; {result['puts']} PUTs stored, {twice} keys more than once")
        return result


def print_fleet_table(rows, local, files):
    """The fleet: wall time of N instances started together (median of the repetitions), throughput, the ratio to
    one instance on PostgreSQL at the default concurrency (target 2.5x with 3, printed, never asserted), CPU seconds
    of the instances and of the test servers (moto, the proxy); then the ledger's overhead per file."""
    print(f"{'ledger':11} {'instances':>9} {'in flight':>9} {'median s':>9} {'files/s':>8} {'vs 1':>6} {'req/file':>8}"
          f" {'syncgate CPU s':>14} {'moto+proxy CPU s':>16}  {'files synced by each (last run)':32} target")
    base = next(statistics.median(r["seconds"] for r in runs) for engine, instances, concurrency, runs in rows
                if engine == "PostgreSQL" and instances == 1 and concurrency == 4)
    for engine, instances, concurrency, runs in rows:
        median = statistics.median(r["seconds"] for r in runs)
        ratio = f"{base / median:.2f}x" if engine == "PostgreSQL" else ""
        target = "2.5x" if engine == "PostgreSQL" and instances == 3 else ""
        flight = f"{instances} x {concurrency}"
        twice = max(r["uploads"] for r in runs) - files
        split = "/".join(map(str, runs[-1]["shares"])) + (f" ({twice} sent twice)" if twice > 0 else "")
        print(f"{engine:11} {instances:9d} {flight:>9} {median:9.3f} {files / median:8.0f} {ratio:>6}"
              f" {statistics.median(r['requests'] for r in runs) / files:8.2f}"
              f" {statistics.median(r['cpu'] for r in runs):14.1f} {statistics.median(r['server_cpu'] for r in runs):16.1f}"
              f"  {split:32} {target}".rstrip())
    sqlite, pg = statistics.median(local["SQLite"]), statistics.median(local["PostgreSQL"])
    print(f"ledger overhead, 1 instance to a local folder (fsync: false): SQLite {sqlite:.3f} s, PostgreSQL "
          f"{pg:.3f} s: {(pg - sqlite) * 1000 / files:+.2f} ms per file on PostgreSQL")
    sys.stdout.flush()


def print_fleet_faults(run):
    """The fleet's fault run (issue 31): keys stored more than once per fault, beside the check of every object."""
    faults = run["made"]
    print(f"faults: 3 x 4 on PostgreSQL, {run['files']} files, lease {run['lease']} s; {'; '.join(run['faults'])}; "
          f"{run['starts']} instances started in all, exits on their own: "
          f"{', '.join(map(str, run['failed_exits'])) or 'none'}; {run['seconds']:.1f} s")
    print(f"keys sent more than once: {run['twice']} for {faults} fault{'' if faults == 1 else 's'} "
          f"({run['twice'] / max(1, faults):.1f} per fault); "
          f"{run['puts']} PUTs stored for {run['files']} files; every object exact (size, ETag = MD5): yes, "
          f"ledger: {run['files']} synced")
    sys.stdout.flush()
