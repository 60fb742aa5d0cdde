"""The bench's shared harness: running and timing commands (GNU time for peak memory), processes and ports,
the test data (trees of files), and ``Harness``, the base of ``Bench``: its rows, its syncgate configs and checks."""
import calendar
import ctypes
import hashlib
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

NOFSYNC = "syncgate, fsync: false"
DURABLE_RSYNC = "rsync -a --fsync"
TAGS = {"syncgate": "sg", NOFSYNC: "sgnf", "rsync -a": "rsync", DURABLE_RSYNC: "rsyncfs", "rclone copy": "rclone"}
GROUPS = ("local", "s3", "headunit", "away", "exec", "limits", "fleet", "flaky", "gateway", "verify")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true", "AWS_PAGER": ""}


def syncfs(fd):
    """syncfs(2) on the file system holding `fd` (os.syncfs exists only from Python 3.12 on)."""
    if hasattr(os, "syncfs"):
        os.syncfs(fd)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syncfs(fd) != 0:
        raise OSError(ctypes.get_errno(), "syncfs failed")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def log(text):
    print(f"bench: {text}", file=sys.stderr, flush=True)


# --- tools ---------------------------------------------------------------------------------------------------

def ensure_tools(groups):
    apt = [t for t in ("rsync", "rclone") if shutil.which(t) is None]
    if "gateway" in groups and shutil.which("lsyncd") is None:
        apt.append("lsyncd")
    if not os.path.exists("/usr/bin/time"):
        apt.append("time")
    if apt:
        prefix = [] if os.geteuid() == 0 else ["sudo"]
        log(f"installing {' '.join(apt)} with apt-get")
        sh(prefix + ["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL)
        sh(prefix + ["apt-get", "install", "-y", "-qq"] + apt, stdout=subprocess.DEVNULL,
           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if "fleet" in groups:
        sh(["bash", os.path.join(ROOT, "scripts/test-deps.d/postgres.sh")])
    if "s3" in groups or "fleet" in groups or "flaky" in groups or "verify" in groups:
        sh(["bash", os.path.join(ROOT, "scripts/test-deps.d/s3.sh")])
        if shutil.which("aws") is None:
            log("installing the aws CLI with pip")
            pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "awscli"]
            if subprocess.run(pip).returncode != 0:
                sh(pip + ["--break-system-packages"])


def build(bin_dir, products):
    if bin_dir:
        for product in products:
            if not os.access(os.path.join(bin_dir, product), os.X_OK):
                sys.exit(f"bench: {bin_dir}/{product} is not there; build it first (swift build -c release)")
        return os.path.abspath(bin_dir)
    for product in products:
        log(f"building {product} (release)")
        sh(["swift", "build", "-c", "release", "--product", product], cwd=ROOT, stdout=subprocess.DEVNULL)
    return subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def measured(cmd, cwd, env=None, ok=(0,)):
    """Runs a command under GNU time: (seconds, peak RSS in MiB). A failing command stops the benchmark.

    Every run starts with no dirty pages: an untimed sync(2) first. Otherwise a tool that flushes (syncgate's
    default ends each ledger batch with a syncfs of the destination's file system) would also pay for the
    write-back of the data just prepared and of the copies the previous tool left in the page cache."""
    os.sync()
    with tempfile.NamedTemporaryFile("r") as report:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name] + cmd, cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode not in ok:
            raise RuntimeError(f"{' '.join(cmd[:3])} exited {proc.returncode}: {proc.stderr[-2000:]}")
        kib = int(report.read().strip().splitlines()[-1])
    log(f"  {seconds:8.3f} s {kib / 1024:6.1f} MiB  {' '.join(os.path.basename(c) for c in cmd[:4])}")
    return seconds, kib / 1024


def timed_run(cmd, cwd, env, timeout, stderr_path):
    """Runs a command that may fail (its exit code is a figure): (seconds, exit code; "timeout" when it ran past
    `timeout` seconds and was killed). Its standard error goes to `stderr_path`."""
    os.sync()
    with open(stderr_path, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = "timeout"
        return time.perf_counter() - start, code


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited at start ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_group(proc):
    """Stops a process started in a session of its own, with whatever it started (lsyncd's rsync)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def reset(*paths):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def proc_cpu_seconds(pid):
    """utime + stime of a process (/proc/PID/stat fields 14 and 15), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_memory(pid):
    """(VmRSS, VmHWM) of a process, in KiB."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def percentile(values, q):
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def event_time(event):
    """Seconds since the epoch of an event's `time` (ISO 8601 with milliseconds, UTC)."""
    stamp = time.strptime(event["time"][:19], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(stamp) + float("0" + event["time"][19:-1])


# --- data ----------------------------------------------------------------------------------------------------

def make_tree(root, files, size, folders):
    per = max(1, files // folders)
    block = os.urandom(size + 97)
    for i in range(files):
        folder = os.path.join(root, f"d{i // per:04d}")
        if i % per == 0:
            os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{i:06d}.bin"), "wb") as f:
            f.write(block[i % 97:i % 97 + size])


def make_file(path, mib):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        chunk = os.urandom(1 << 20)
        for i in range(mib):
            f.write(chunk[i % 251:] + chunk[:i % 251])


def make_sized_tree(root, files, folders, smallest, largest, seed=25):
    """`files` files of `smallest`..`largest` bytes (sizes and bytes from a seeded random.Random) in `folders`
    folders: {relative path: (size, MD5 hex, path)}."""
    rng = random.Random(seed)
    per = max(1, files // folders)
    manifest = {}
    for i in range(files):
        relative = f"d{i // per:04d}/f{i:06d}.bin"
        path = os.path.join(root, relative)
        if i % per == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        data = rng.randbytes(rng.randint(smallest, largest))
        with open(path, "wb") as f:
            f.write(data)
        manifest[relative] = (len(data), hashlib.md5(data).hexdigest(), path)
    return manifest


def change_files(root, count):
    changed = 0
    for dirpath, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if changed >= count:
                return
            with open(os.path.join(dirpath, name), "r+b") as f:
                f.write(os.urandom(16))
            changed += 1


def tree_summary(root):
    """(file count, total bytes) of a folder, to check that a tool delivered everything."""
    count = total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            if ".syncgate-tmp-" in name:
                continue
            count += 1
            total += os.path.getsize(os.path.join(dirpath, name))
    return count, total


# --- the harness ---------------------------------------------------------------------------------------------

class Harness:
    """What every group shares: where the bench works, the binaries, the sizes, the rows of the tables, the
    processes to stop on the way out, and syncgate's configs and checks."""

    def __init__(self, bin_dir, work, sizes, reps):
        self.syncgate = os.path.join(bin_dir, "syncgate")
        self.simulator = os.path.join(bin_dir, "syncgate-headunit-sim")
        self.work = work
        self.sizes = sizes
        self.reps = reps
        self.rows = []  # (case, tool, [(seconds, MiB)], note)
        self.gateway_rows = []  # (case, tool, [latency ms] or a text, target)
        self.limit_rows = []  # (limit, case, configured, [measured], unit)
        self.processes = []  # what the gateway case started: stopped on the way out, whatever happens
        self.peers = True  # False (--no-peers): the other tools (rsync, rclone, aws, lsyncd) are not run
        self.fleet_delay_ms = 20  # how long the fault proxy holds each request to the fleet's S3 server
        self.cleanups = []  # callables run on the way out (the fleet group's PostgreSQL server)
        self.fleet_rows = []  # (ledger, instances, concurrency, [fleet_run's dict per repetition])
        self.fleet_local = {}  # ledger -> [seconds]: the ledger's overhead, one instance to a local folder
        self.flaky_rows = []  # flaky_runs' dicts, with fraction, tool, failed and forwarded
        self.fleet_fault = None  # fleet_faults' dict (issue 31)

    def own(self, tools):
        """`tools` without the peers when they are not run (--no-peers): syncgate's own entries only."""
        return tuple(t for t in tools if self.peers or t.startswith("syncgate"))

    def record(self, case, tool, values, note=""):
        self.rows.append((case, tool, values, note))

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def config(self, name, source, destination_yaml, extra="", state=None, routes="[{match: ['**/*'], to: [dst]}]"):
        """A config of one source and one destination; `state`: a PostgreSQL URL (default: a fresh SQLite file);
        `routes`: the routes (every file to the destination)."""
        path = self.path(f"{name}.yaml")
        state_line = json.dumps(state) if state else self.path(name + '-state', 'state.sqlite')
        with open(path, "w") as f:
            f.write(f"version: 1\nstate: {state_line}\n"
                    f"sources: [{{name: src, path: {source}}}]\n"
                    f"destinations:\n  - name: dst\n{destination_yaml}\n"
                    f"routes: {routes}\n{extra}")
        reset(self.path(name + "-state"))
        return path

    def sync(self, config, env=None):
        return measured([self.syncgate, "sync", "--quiet", "--config", config], self.work, env)

    def check(self, what, got, expected):
        if got != expected:
            raise RuntimeError(f"{what}: delivered {got}, expected {expected}")

    def check_ledger(self, config, files, env=None):
        """syncgate's own record must agree: every file synced, none left pending, uploading or failed."""
        out = subprocess.run([self.syncgate, "status", "--json", "--config", config], cwd=self.work, check=True,
                             capture_output=True, text=True, env=env).stdout
        for d in json.loads(out)["destinations"]:
            got = {k: d[k] for k in ("synced", "pending", "uploading", "failed")}
            if got != {"synced": files, "pending": 0, "uploading": 0, "failed": 0}:
                raise RuntimeError(f"{config}: the ledger says {got}, expected {files} synced")

    def stop_all(self):
        """Stops whatever the gateway case started and is still running (on the way out, Ctrl-C included)."""
        for proc in self.processes:
            if proc.poll() is None:
                stop_group(proc) if proc.args[0] == "lsyncd" else stop(proc)
        self.processes = []
        for cleanup in self.cleanups:
            cleanup()
        self.cleanups = []


def print_table(rows):
    print(f"{'case':48} {'tool':26} {'median s':>9} {'peak MiB':>9} {'vs best peer':>13}  note")
    by_case = {}
    for case, tool, values, note in rows:
        seconds = statistics.median(v[0] for v in values)
        mib = max(v[1] for v in values)
        by_case.setdefault(case, []).append((tool, seconds, mib, note, len(values)))
    for case, entries in by_case.items():
        peers = [seconds for tool, seconds, *_ in entries if not tool.startswith("syncgate")]
        best = min(peers) if peers else None
        durable = next((seconds for tool, seconds, *_ in entries if tool == DURABLE_RSYNC), None)
        for tool, seconds, mib, note, n in entries:
            ratio = f"{seconds / best:.2f}x" if best and tool in ("syncgate", NOFSYNC) else ""
            if durable and tool == "syncgate":
                note = (note + "; " if note else "") + f"{seconds / durable:.2f}x {DURABLE_RSYNC}"
            memory = f"{mib:9.1f}" if mib else f"{'-':>9}"
            print(f"{case:48} {tool:26} {seconds:9.3f} {memory} {ratio:>13}  {note}".rstrip())
    sys.stdout.flush()
