"""Flaky server (issue 25): moto's S3 behind the fault proxy failing a share of the requests: syncgate, aws s3 sync,
rclone copy, each run again until every file is there."""
import shutil
import subprocess
import sys

from .harness import TAGS, log, make_sized_tree, reset, sh, stop, timed_run


class FlakyGroup:
    FLAKY_SEED = 25  # the proxy's random.Random seed: every tool meets the same sequence of decisions

    def flaky(self):
        """Small files (1-4 KiB) to moto's S3 behind the fault proxy in `flaky` mode: each request answered, with
        probability F (seeded), with S3's 500 InternalError instead of being forwarded. For each F and each tool: a
        fresh server and bucket, runs until the bucket holds every file or 8 runs (syncgate: `sync`, then `retry`;
        a peer: the same command again while it exits non-zero), files in the bucket after each run, exit codes,
        the wall time of all runs, and the requests the proxy failed and forwarded. The bucket is checked against
        the files (size and ETag = MD5 of every object, the bytes of a few): a wrong object stops the bench, a
        missing one is a figure."""
        s = self.sizes
        files = s["flaky_files"]
        src = self.path("flaky-tree")
        log(f"flaky: preparing {files} files of 1-4 KiB in {s['flaky_folders']} folders")
        manifest = make_sized_tree(src, files, s["flaky_folders"], 1024, 4096)
        tools = []
        for tool, program in (("syncgate", None), ("aws s3 sync", "aws"), ("rclone copy", "rclone")):
            if tool not in s["flaky_tools"] or tool not in self.own((tool,)):
                continue
            if program and shutil.which(program) is None:
                log(f"flaky: {tool} skipped: {program} is not installed (and could not be installed)")
                continue
            tools.append(tool)
        shared = self.start_proxied_s3(None) if s.get("shared_server") else None
        try:
            for fraction in s["flaky_fractions"]:
                for tool in tools:
                    servers, direct, proxied, control = shared or self.start_proxied_s3(None)
                    try:
                        tag = f"flaky-{TAGS.get(tool, tool.split()[0])}-{round(fraction * 100)}"
                        env = self.s3_env(direct)
                        sh(self.aws(direct, "s3", "mb", f"s3://{tag}"), env=env, stdout=subprocess.DEVNULL)
                        self.proxy_call(control, "POST", "/fault", {"mode": "flaky", "fraction": fraction,
                                                                    "seed": self.FLAKY_SEED, "flavor": "s3"})
                        before = self.proxy_counts(control)
                        row = self.flaky_runs(tool, src, direct, proxied, tag, manifest, s["flaky_max_runs"])
                        self.proxy_call(control, "POST", "/pass")
                        after = self.proxy_counts(control)
                        row.update(fraction=fraction, tool=tool, failed=after[0] - before[0],
                                   forwarded=after[1] - before[1])
                        self.flaky_rows.append(row)
                    finally:
                        if not shared:
                            for proc in servers:
                                stop(proc)
        finally:
            if shared:
                for proc in shared[0]:
                    stop(proc)
        reset(src)

    def flaky_runs(self, tool, source, direct, proxied, bucket, manifest, max_runs):
        """Runs `tool` (through the proxy) until the bucket holds every file or `max_runs` runs: a dict of
        delivered (files in the bucket after each run), exits, commands, seconds (all runs) and exact (the
        final check)."""
        env = self.s3_env(proxied)
        config = None
        if tool == "syncgate":
            config = self.config(bucket, source, f"    type: s3\n    endpoint: {proxied}\n    region: us-east-1\n"
                                                f"    bucket: {bucket}\n    concurrency: 8\n    retry: {{file: 2}}")
        delivered, exits, commands, seconds = [], [], [], 0.0
        while len(delivered) < max_runs and (not delivered or delivered[-1] < len(manifest)):
            if tool == "syncgate":
                command = "sync" if not delivered else "retry"
                cmd = [self.syncgate, command, "--quiet", "--config", config]
            elif tool == "rclone copy":
                command, cmd = "copy", ["rclone", "copy", "--transfers", "8", source, f"moto:{bucket}"]
            else:
                command, cmd = "sync", self.aws(proxied, "s3", "sync", "--only-show-errors", source, f"s3://{bucket}")
            errors = self.path(f"{bucket}-{len(delivered) + 1}.err")
            took, code = timed_run(cmd, self.work, env, self.sizes["flaky_run_timeout"], errors)
            seconds += took
            if tool == "syncgate" and code in (64, 78):  # a usage or config error: the harness is wrong
                with open(errors) as f:
                    raise RuntimeError(f"flaky: syncgate {command} exited {code}: {f.read()[-2000:]}")
            present = self.bucket_check(direct, bucket, manifest)
            delivered.append(present)
            exits.append(code)
            commands.append(command)
            log(f"  {took:8.3f} s  {tool if tool != 'syncgate' else 'syncgate ' + command}, run {len(delivered)}: exit {code}, "
                f"{present}/{len(manifest)} files in the bucket")
        exact = delivered[-1] == len(manifest)
        if exact:
            self.bucket_check(direct, bucket, manifest, samples=5)  # the bytes of a few, besides every ETag
            if config:
                self.check_ledger(config, len(manifest), self.s3_env(direct))
        return dict(delivered=delivered, exits=exits, commands=commands, seconds=seconds, exact=exact)


def print_flaky_table(rows, files):
    """The flaky server: per fraction of failed requests and tool, the runs it took (at most 8), the files in the
    bucket after each, the exit codes, the time of all runs, the proxy's failed / forwarded requests, and whether
    the bucket ends with every file, byte-exact. Figures only: a tool that does not deliver everything is a result."""
    print(f"{'500s':>5} {'tool':12} {'runs':>4} {'total s':>8} {'failed/forwarded':>17}  {'all ' + str(files) + ' exact':>12}"
          f"  files in the bucket after each run; exit codes")
    for row in rows:
        runs = len(row["delivered"])
        exact = "yes" if row["exact"] else f"no ({files - row['delivered'][-1]} missing)"
        after = "/".join(map(str, row["delivered"]))
        codes = ", ".join(f"{k + ' ' if row['tool'] == 'syncgate' else ''}{c}"
                          for c, k in zip(row["exits"], row["commands"]))
        print(f"{row['fraction']:5.0%} {row['tool']:12} {runs:4d} {row['seconds']:8.1f} "
              f"{str(row['failed']) + '/' + str(row['forwarded']):>17}  {exact:>12}  {after}; {codes}")
    sys.stdout.flush()
