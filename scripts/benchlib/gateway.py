"""Gateway (one run): `syncgate run` against lsyncd on the same kind of folders: latency from close() to the
`synced` event and to the file in the destination, the burst against its floor, CPU when idle."""
import os
import subprocess
import sys
import time

from .harness import free_port, log, percentile, proc_cpu_seconds, reset, stop, stop_group, syncfs, tree_summary
from .servers import Postgres
from .watch import Arrivals, EventFollower, http_status


def settle_text(seconds):
    return f"{seconds:g} s"


class GatewayGroup:
    def start_gateway(self, tag, source, destination, settle, fsync=None, state=None):
        """`syncgate run` delivering `source` to a local folder (`fsync` as shipped, batch, unless given), its HTTP
        API on a free port, its ledger in SQLite or at `state` (a PostgreSQL URL); returns (process, port, config,
        log) once `/readyz` answers 200."""
        port = free_port()
        fsync_key = "" if fsync is None else f"\n    fsync: {fsync}"
        cfg = self.config(tag, source, f"    type: local\n    path: {destination}{fsync_key}",
                          f"gateway: {{settle: {round(settle * 1000)}ms}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n", state)
        log = self.path(tag + ".log")
        with open(log, "w") as out:
            proc = subprocess.Popen([self.syncgate, "run", "--config", cfg], cwd=self.work, stdout=out,
                                    stderr=subprocess.STDOUT)
        self.processes.append(proc)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                with open(log) as f:
                    raise RuntimeError(f"syncgate run exited at start ({proc.returncode}): {f.read()[-2000:]}")
            try:
                if http_status(port, "/readyz") == 200:
                    return proc, port, cfg, log
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("syncgate run was not ready within 60 s")
            time.sleep(0.05)

    def start_lsyncd(self, tag, source, destination, delay):
        """lsyncd with `default.rsync` from `source` to `destination`, `delay` seconds (None: its default, 15 s);
        returns once its start-up rsync is done."""
        log, conf = self.path(tag + ".log"), self.path(tag + ".lua")
        delay_key = "" if delay is None else f", delay = {delay}"
        with open(conf, "w") as f:
            f.write(f'settings {{ logfile = "{log}", nodaemon = true }}\n'
                    f'sync {{ default.rsync, source = "{source}", target = "{destination}"{delay_key} }}\n')
        # A session of its own, so that stopping it also stops an rsync it runs.
        proc = subprocess.Popen(["lsyncd", conf], cwd=self.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.processes.append(proc)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"lsyncd exited at start ({proc.returncode}); see {log}")
            if os.path.exists(log):
                with open(log) as f:
                    if any("Startup of" in line and "finished" in line for line in f):
                        return proc
            if time.monotonic() > deadline:
                raise RuntimeError("lsyncd did not finish its start-up within 60 s")
            time.sleep(0.05)

    def timed_writes(self, folder, names, rate, block):
        """Writes each file (open, 4 KiB, close), `rate` a second or as fast as it can (None); returns the
        time.monotonic() taken after each close()."""
        stamps = {}
        start = time.monotonic() + 0.05
        for i, name in enumerate(names):
            if rate:
                wait = start + i / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, block[i % 97:i % 97 + 4096])
            os.close(fd)
            stamps[name] = time.monotonic()
        return stamps

    def latency_run(self, label, source, destination, phases, follower=None):
        """Writes each phase's files into `source` and times their arrival in `destination` (and, with a follower,
        the `synced` events); checks that every file arrived. Returns {phase: (stamps, arrivals, events or None,
        seconds the writes took)}."""
        block = os.urandom(4096 + 97)
        arrivals = Arrivals(destination)
        results = {}
        try:
            for phase, prefix, count, rate, timeout in phases:
                names = [f"{prefix}{i:06d}.bin" for i in range(count)]
                arrivals.expect(names, 4096)
                began = time.monotonic()
                stamps = self.timed_writes(source, names, rate, block)
                written = time.monotonic() - began
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and not all(n in arrivals.seen for n in names):
                    time.sleep(0.05)
                # The events come right after the copies; should the stream have dropped some, stop waiting once
                # it has been quiet for 3 s.
                quiet, total = time.monotonic(), -1
                while follower and time.monotonic() - quiet < 3:
                    follower.update()
                    if all(n in follower.synced for n in names):
                        break
                    if follower.synced_total != total:
                        quiet, total = time.monotonic(), follower.synced_total
                    time.sleep(0.05)
                time.sleep(0.2)  # a last event still on its way
                if follower:
                    follower.update()
                count_dst, _ = tree_summary(destination)
                self.check(f"gateway {label} {phase}", tree_summary(destination), tree_summary(source))
                untimed = sum(1 for n in names if n not in arrivals.seen)
                log(f"  {label} {phase}: {count} files written in {written:.2f} s; "
                    f"{count - untimed} arrivals timed, {count_dst} files in the destination in all"
                    + (f", {sum(1 for n in names if n in follower.synced)} synced events" if follower else ""))
                results[phase] = (stamps, dict(arrivals.seen), dict(follower.synced) if follower else None, written)
        finally:
            arrivals.close()
        if arrivals.watch.overflows:
            log(f"  {label}: the destination watch overflowed {arrivals.watch.overflows} time(s); untimed files are left out")
        return results

    def gateway(self):
        load = os.getloadavg()[0]  # the machine's other work skews latencies: shown beside the table
        # The observers' threads (the event stream's reader, the destination's watch) stamp what they read as soon
        # as they hold the interpreter's lock: let them take it sooner than the default 5 ms.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)
        try:
            self.gateway_cases(load)
        finally:
            sys.setswitchinterval(switch)

    def gateway_cases(self, load):
        s = self.sizes
        steady = round(s["gw_rate"] * s["gw_seconds"])
        phases = [("a", "a", steady, s["gw_rate"], 60), ("b", "b", s["gw_burst"], None, 300)]
        runs = {}  # tool -> (settle or None, latency_run results)
        notes = {}
        idle_row = None
        # Each settle on SQLite, then the first one again with the ledger on PostgreSQL (a server of the bench's own,
        # loopback): a ledger round trip must not hold up delivery (issue 27), so the two engines' latencies compare.
        pg = None
        variants = [(settle, None) for settle in s["gw_settles"]] + [(s["gw_settles"][0], "PostgreSQL")]
        for index, (settle, engine) in enumerate(variants):
            tool = f"syncgate, settle {settle_text(settle)}" + (f", ledger on {engine}" if engine else "")
            tag = f"gw{index}"
            state = None
            if engine:
                if pg is None:
                    pg = Postgres()
                    self.cleanups.append(pg.stop)
                state = pg.database(tag)
            src, dst = self.path(tag + "-src"), self.path(tag + "-dst")
            reset(src, dst)
            os.makedirs(src)
            os.makedirs(dst)
            log(f"gateway: {tool}")
            proc, port, cfg, logfile = self.start_gateway(tag, src, dst, settle, state=state)
            try:
                follower = EventFollower(port, "dst")
                try:
                    runs[tool] = (settle, self.latency_run(tool, src, dst, phases, follower))
                finally:
                    follower.close()
                if follower.failed:
                    notes[tool] = f"{len(follower.failed)} failed events"
                self.check_ledger_soon(cfg, steady + s["gw_burst"])
                if index == 0:
                    idle_row = self.idle_cpu(tool, proc, s["gw_idle"], steady + s["gw_burst"])
            finally:
                stop(proc)
            with open(logfile) as f:
                warnings = [line.strip() for line in f if "overflowed" in line or "rescan" in line]
            if warnings:
                notes[tool] = "; ".join(filter(None, [notes.get(tool), f"{len(warnings)} watch warnings: {warnings[0]}"]))
            # Nothing is deleted until the bench ends: on ext4 without a journal, files created within minutes
            # after a large delete are created much more slowly (docs/performance.md), which would tax the next tool.

        peers = [("lsyncd, delay = 0", 0, phases)] if self.peers else []
        if s["gw_default_files"] and self.peers:
            peers.append(("lsyncd, default (delay 15 s)", None,
                          [("d", "d", s["gw_default_files"], s["gw_rate"], 60)]))
        for index, (tool, delay, peer_phases) in enumerate(peers):
            tag = f"lsyncd{index}"
            src, dst = self.path(tag + "-src"), self.path(tag + "-dst")
            reset(src, dst)
            os.makedirs(src)
            os.makedirs(dst)
            log(f"gateway: {tool}")
            proc = self.start_lsyncd(tag, src, dst, delay)
            try:
                runs[tool] = (None, self.latency_run(tool, src, dst, peer_phases))
            finally:
                stop_group(proc)

        floor = self.burst_floor()
        memory_row = self.gateway_memory()
        self.gateway_table(runs, notes, steady, idle_row, memory_row, floor)
        self.gateway_load = (load, os.getloadavg()[0])

    def burst_floor(self):
        """The physical floor of case b on this disk: the burst's files, all present, copied by the simplest loop
        there is (read; write a temporary file; rename it into place; one `syncfs` at the end, as `fsync: batch`
        does), with no watching, settling, routing or ledger. Returns its seconds."""
        s = self.sizes
        src, dst = self.path("floor-src"), self.path("floor-dst")
        reset(src, dst)
        os.makedirs(src)
        os.makedirs(dst)
        names = [f"b{i:06d}.bin" for i in range(s["gw_burst"])]
        self.timed_writes(src, names, None, os.urandom(4096 + 97))
        log(f"gateway: the floor, a raw copy of {len(names):,} files")
        began = time.monotonic()
        for name in names:
            fd = os.open(os.path.join(src, name), os.O_RDONLY)
            data = os.read(fd, 1 << 16)
            os.close(fd)
            temporary = os.path.join(dst, f".{name}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            os.close(fd)
            os.rename(temporary, os.path.join(dst, name))
        fd = os.open(dst, os.O_RDONLY)
        syncfs(fd)
        os.close(fd)
        took = time.monotonic() - began
        self.check("gateway floor", tree_summary(dst), tree_summary(src))
        return took

    def check_ledger_soon(self, config, files):
        """The gateway writes its ledger in batches (at least once a second): give it a few seconds to agree."""
        deadline = time.monotonic() + 15
        while True:
            try:
                return self.check_ledger(config, files)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.25)

    def idle_cpu(self, tool, proc, seconds, files):
        """CPU the gateway uses doing nothing: utime + stime over `seconds` with no file changing and no client."""
        time.sleep(1)  # the ledger agrees already (check_ledger_soon); the event stream's client is gone
        log(f"gateway: {tool}: idle for {seconds} s")
        before, began = proc_cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        used, wall = proc_cpu_seconds(proc.pid) - before, time.monotonic() - began
        percent = round(100 * used / wall, 3)  # as printed
        return (f"idle {seconds:g} s, {files:,} files in the ledger", f"syncgate run, settle {settle_text(self.sizes['gw_settles'][0])}",
                f"CPU {percent:.3f}% of one core ({used:.2f} s in {wall:.1f} s)",
                f"< 0.5%: {'met' if percent < 0.5 else 'MISSED'}", "")

    def gateway_table(self, runs, notes, steady, idle_row, memory_row, floor):
        """Rows of the gateway table: per tool and case, latency from close() to the `synced` event (syncgate) and
        to the file complete in the destination (every tool), with the targets beside them."""
        s = self.sizes
        cases = {"a": f"a {s['gw_rate']:g} files/s for {s['gw_seconds']:g} s ({steady:,} files)",
                 "b": f"b burst of {s['gw_burst']:,} files",
                 "d": f"default setups, {s['gw_default_files']} files at {s['gw_rate']:g}/s"}

        def latencies(stamps, seen):
            return [1000 * (seen[n] - t) for n, t in stamps.items() if n in seen]

        def add(case, tool, stamps, seen, target="", note="", missing_means="untimed"):
            missing = sum(1 for n in stamps if n not in seen)
            if missing:
                note = (note + "; " if note else "") + f"{missing} {missing_means}"
            self.gateway_rows.append((case, tool, latencies(stamps, seen), target, note))

        reference = None  # syncgate's default setup, case a, in destination: for the 10x target
        for tool, (settle, results) in runs.items():
            for phase, (stamps, arrived, events, written) in results.items():
                note = "; ".join(filter(None, [f"written in {written:.2f} s" if phase == "b" else "", notes.get(tool)]))
                if events is not None:
                    bound = 1000 * settle + 250
                    met = percentile(latencies(stamps, events), 0.99) < bound
                    add(cases[phase], f"{tool}: synced event", stamps, events,
                        f"p99 < settle + 250 ms = {bound:.0f} ms: {'met' if met else 'MISSED'}", note,
                        "synced events not received (the stream drops the oldest beyond 10,000 waiting)")
                    add(cases[phase], f"{tool}: in destination", stamps, arrived)
                    if reference is None and phase == "a" and settle == 1.0:
                        reference = latencies(stamps, arrived)
                elif phase == "d" and reference:
                    values = latencies(stamps, arrived)
                    r50 = percentile(values, 0.5) / percentile(reference, 0.5)
                    r99 = percentile(values, 0.99) / percentile(reference, 0.99)
                    add(cases[phase], f"{tool}: in destination", stamps, arrived,
                        f"syncgate (settle 1 s, case a, in destination) 10x lower: {r50:.1f}x at p50, {r99:.1f}x at "
                        f"p99: {'met' if min(r50, r99) >= 10 else 'MISSED'}", note)
                else:
                    add(cases[phase], f"{tool}: in destination", stamps, arrived, "", note)
        # The burst against its floor: from the first file's due time (close + settle) to the last arrival, beside
        # a raw copy of as many files already in place.
        spans = []
        for tool, (settle, results) in runs.items():
            if settle is not None and "b" in results:
                stamps, arrived = results["b"][0], results["b"][1]
                if arrived:
                    span = max(arrived.values()) - min(stamps.values()) - settle
                    spans.append(f"{tool} delivered its burst in {span:.2f} s from the first file's due time: {span / floor:.1f}x")
        self.gateway_rows.append((cases["b"], "raw copy, no watching (the floor)",
                                  f"{s['gw_burst']:,} files in {floor:.2f} s ({s['gw_burst'] / floor:,.0f} files/s)",
                                  "; ".join(spans), ""))
        if not s["gw_default_files"]:
            self.gateway_rows.append(("default setups", "lsyncd, default (delay 15 s)", "not run (--smoke)", "", ""))
        self.gateway_rows.append(idle_row)
        self.gateway_rows.append(memory_row)


def print_gateway_table(rows):
    """The gateway case: latency from a file's close() to `synced` (p50, p99, max over every file), and the idle CPU
    and memory figures, each with its target."""
    print(f"{'gateway case':44} {'tool: measured at':54} {'files':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
          f"  target; note")
    for case, tool, values, target, note in rows:
        if isinstance(values, str):
            print(f"{case:44} {tool:54} {values}" + (f"  target {target}" if target else ""))
            continue
        if not values:
            print(f"{case:44} {tool:54} {0:6d}  nothing timed; {note}")
            continue
        figures = f"{len(values):6d} {percentile(values, 0.5):8.1f} {percentile(values, 0.99):8.1f} {max(values):8.1f}"
        print(f"{case:44} {tool:54} {figures}  {'; '.join(filter(None, [target, note]))}".rstrip())
    sys.stdout.flush()
