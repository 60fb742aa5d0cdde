"""The servers the bench starts: moto's S3 (with the fault proxy in front of it) and PostgreSQL."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .harness import CREDENTIALS, ROOT, free_port, sh, wait_listening


class Postgres:
    """A PostgreSQL server of the bench's own, as the tests start one (Tests/SyncgateTestSupport/PostgresTestServer.swift):
    `initdb` into a temporary folder, `postgres` on a free loopback port, trust for a superuser on loopback, run as
    nobody (through setpriv) when the bench runs as root. Left at PostgreSQL's defaults otherwise (`fsync` and
    `synchronous_commit` on): a ledger as durable as a deployed one. ``database()`` makes a fresh database."""

    USER = "bench"

    def __init__(self):
        folders = [p for p in os.environ.get("PATH", "").split(":") if p] + ["/usr/local/bin"]
        versions = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: -int(v) if v.isdigit() else 0) \
            if os.path.isdir("/usr/lib/postgresql") else []
        folders += [f"/usr/lib/postgresql/{v}/bin" for v in versions]
        self.bin = {}
        for name in ("initdb", "postgres", "psql"):
            found = next((os.path.join(f, name) for f in folders if os.access(os.path.join(f, name), os.X_OK)), None)
            if found is None:
                raise RuntimeError(f"PostgreSQL's {name} is not installed (scripts/test-deps.d/postgres.sh installs it)")
            self.bin[name] = found
        self.folder = tempfile.mkdtemp(prefix="syncgate-bench-pg-")
        self.port = free_port()
        self.proc = None
        self.created = 0
        self.as_user = []
        if os.geteuid() == 0:  # postgres refuses to run as root
            import pwd
            nobody = pwd.getpwnam("nobody")
            os.chown(self.folder, nobody.pw_uid, nobody.pw_gid)
            self.as_user = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
        data = os.path.join(self.folder, "data")
        sh(self.as_user + [self.bin["initdb"], "-D", data, "-U", self.USER, "--auth=trust", "-E", "UTF8",
                           "--locale=C.UTF-8", "-N"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.command = self.as_user + [self.bin["postgres"], "-D", data, "-h", "127.0.0.1", "-p", str(self.port),
                                       "-k", self.folder]
        self.launch()

    def launch(self):
        """Starts the server (its log appended to postgres.log); returns once it accepts connections."""
        with open(os.path.join(self.folder, "postgres.log"), "a") as out:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc, "postgres")
        deadline = time.time() + 60
        while subprocess.run(self.psql("postgres", "SELECT 1"), capture_output=True).returncode != 0:
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"postgres did not accept connections; see {self.folder}/postgres.log")
            time.sleep(0.1)

    def psql(self, database, sql):
        return [self.bin["psql"], "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER, "-d", database, "-X", "-q",
                "-v", "ON_ERROR_STOP=1", "-c", sql]

    def database(self, prefix):
        """A new, empty database; its URL (for `state:`)."""
        self.created += 1
        name = f"{prefix}_{self.created}"
        sh(self.psql("postgres", f"CREATE DATABASE {name}"), stdout=subprocess.DEVNULL)
        return f"postgres://{self.USER}@127.0.0.1:{self.port}/{name}"

    def restart(self):
        """A fast restart, as `pg_ctl restart -m fast` makes one: fast shutdown (SIGINT: sessions are ended, open
        transactions rolled back), then the server starts again on the same port and data. Returns its seconds."""
        began = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)
        self.launch()
        return time.monotonic() - began

    def stop(self):
        """Fast shutdown (SIGINT), then removes its folder. Idempotent."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class Servers:
    """moto, the fault proxy and reading a bucket (a mixin of ``Bench``)."""

    def start_moto(self, log_path=None):
        """moto's S3 on a free port: (process, endpoint). With `log_path`, its request log (werkzeug: one line per
        request, `"PUT /bucket/key HTTP/1.1" 200 -`) goes to that file."""
        port = free_port()
        script = ("from moto.server import main; import sys; "
                  f"sys.argv=['moto_server','-H','127.0.0.1','-p','{port}']; main()")
        out = open(log_path, "w") if log_path else subprocess.DEVNULL
        try:
            proc = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=subprocess.STDOUT if log_path
                                    else subprocess.DEVNULL, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        finally:
            if log_path:
                out.close()
        wait_listening(port, proc, "moto")
        return proc, f"http://127.0.0.1:{port}"

    def s3_env(self, endpoint):
        env = dict(os.environ, **CREDENTIALS)
        env.pop("AWS_CA_BUNDLE", None)
        env.update(RCLONE_CONFIG="/dev/null", RCLONE_CONFIG_MOTO_TYPE="s3", RCLONE_CONFIG_MOTO_PROVIDER="Other",
                   RCLONE_CONFIG_MOTO_ENDPOINT=endpoint, RCLONE_CONFIG_MOTO_ACCESS_KEY_ID=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                   RCLONE_CONFIG_MOTO_SECRET_ACCESS_KEY=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                   RCLONE_CONFIG_MOTO_REGION="us-east-1")
        return env

    def aws(self, endpoint, *args):
        return ["aws", "--endpoint-url", endpoint] + list(args)

    def s3_count(self, endpoint, bucket):
        out = subprocess.run(self.aws(endpoint, "s3", "ls", "--recursive", f"s3://{bucket}"), env=self.s3_env(endpoint),
                             check=True, capture_output=True, text=True).stdout
        lines = [line.split() for line in out.splitlines() if line.strip()]
        return len(lines), sum(int(parts[2]) for parts in lines)

    def start_proxied_s3(self, fault, moto_log=None):
        """moto behind the fault proxy (Tests/FaultProxy/fault_proxy.py) with `fault` set (None: none): (processes, moto's own
        endpoint (for the checks), the proxy's endpoint (for the tools), the proxy's control port). `moto_log`: a file
        for moto's request log."""
        moto, direct = self.start_moto(moto_log)
        self.processes.append(moto)
        listen, control = free_port(), free_port()
        while control == listen:
            control = free_port()
        proxy = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "FaultProxy", "fault_proxy.py"),
                                  "--listen", str(listen), "--target", direct.split("//", 1)[1],
                                  "--control", str(control)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(proxy)
        wait_listening(control, proxy, "the fault proxy")
        if fault:
            self.proxy_call(control, "POST", "/fault", fault)
        return (moto, proxy), direct, f"http://127.0.0.1:{listen}", control

    @staticmethod
    def proxy_call(control, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", control, timeout=10)
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None)
            response = conn.getresponse()
            return response.read().decode()
        finally:
            conn.close()

    def proxy_requests(self, control):
        """How many requests the proxy has held so far (every connection's count)."""
        entries = [json.loads(line) for line in self.proxy_call(control, "GET", "/log").splitlines() if line.strip()]
        return sum(e.get("requests", 0) for e in entries)

    def proxy_counts(self, control):
        """(requests failed, requests forwarded) by the proxy's `flaky` mode so far, every connection's."""
        entries = [json.loads(line) for line in self.proxy_call(control, "GET", "/log").splitlines() if line.strip()]
        return sum(e.get("failed", 0) for e in entries), sum(e.get("forwarded", 0) for e in entries)

    def bucket_check(self, endpoint, bucket, manifest, samples=0):
        """How many of `manifest`'s files (relative path -> (size, MD5)) the bucket holds, read straight from moto:
        each object's size and ETag (the MD5 of a single-part upload). An object that differs stops the bench;
        `samples` objects are also downloaded and compared byte for byte."""
        import boto3  # installed with moto (scripts/test-deps.d/s3.sh); only this group reads the bucket with it
        from botocore.config import Config
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                              config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
        present, wrong = 0, []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                expected = manifest.get(item["Key"])
                if expected is None or (item["Size"], item["ETag"].strip('"')) != expected[:2]:
                    wrong.append(item["Key"])
                else:
                    present += 1
        if wrong:
            raise RuntimeError(f"{bucket} holds {len(wrong)} object(s) that are not the files, e.g. {wrong[:3]}")
        for key in sorted(manifest)[:samples]:
            data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
            with open(manifest[key][2], "rb") as f:
                if data != f.read():
                    raise RuntimeError(f"{bucket}/{key} differs from its file")
        return present


def put_lines(moto_log, bucket):
    """The keys (`/bucket/key`) of the whole-object PUTs into `bucket` that moto answered 200, one per request, from
    its request log (werkzeug: `"PUT /bucket/key HTTP/1.1" 200 -`); a multipart upload's parts (`uploadId=`) and
    the bucket's creation (`PUT /bucket`) are left out."""
    keys = []
    with open(moto_log, errors="replace") as f:
        for line in f:
            start = line.find(f'"PUT /{bucket}/')
            if start < 0 or "uploadId=" in line or '" 200 ' not in line:
                continue
            keys.append(line[start + 5:].split(" ", 1)[0].split("?", 1)[0])
    return keys
