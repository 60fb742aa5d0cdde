"""Verification (case "check", issue 28): `syncgate check` against `rclone check` on the same data: a local folder of
many small files, and objects in moto's S3. Both tools compare the same copies: syncgate with the ledger (one listing
of the destination, sizes and the ETag or mtime its receipts recorded), rclone with the source folder (a walk of both
sides, and by default the MD5 of every local file). `rclone check --size-only` is the cheaper comparison, beside it."""
import os
import subprocess

from .harness import log, make_tree, measured, reset


class VerifyGroup:
    def verify(self):
        s = self.sizes
        # A tenth of the files first, syncgate alone: its memory should not grow with the destination.
        self.verify_local(max(1, s["check_files"] // 10), peers=False)
        self.verify_local(s["check_files"], peers=self.peers)
        self.verify_s3(s["check_objects"])

    def verify_local(self, files, peers=True):
        src, dst = self.path("check-src"), self.path("check-dst")
        log(f"verify: preparing {files} x 64 B in {max(1, files // 100)} folders, synced to a local folder")
        make_tree(src, files, 64, max(1, files // 100))
        cfg = self.config("check-local", src, f"    type: local\n    path: {dst}\n    fsync: false")
        self.sync(cfg)
        self.check_ledger(cfg, files)
        env = dict(os.environ, RCLONE_CONFIG="/dev/null")
        tools = {
            "syncgate check": lambda: measured([self.syncgate, "check", "--quiet", "--config", cfg], self.work),
            "rclone check": lambda: measured(["rclone", "check", "--one-way", src, dst], self.work, env),
            "rclone check --size-only": lambda: measured(["rclone", "check", "--one-way", "--size-only", src, dst], self.work, env),
        }
        if not peers:
            tools = {"syncgate check": tools["syncgate check"]}
        results = {tool: [] for tool in tools}
        for _ in range(self.reps):
            for tool, run in tools.items():
                results[tool].append(run())
        for tool, values in results.items():
            self.record(f"check local, {files} files", tool, values)
        reset(src, dst)

    def verify_s3(self, objects):
        src = self.path("check-s3-src")
        log(f"verify: preparing {objects} x 64 B, synced to moto's S3")
        make_tree(src, objects, 64, max(1, objects // 100))
        proc, endpoint = self.start_moto()
        try:
            env = self.s3_env(endpoint)
            bucket = "check"
            subprocess.run(self.aws(endpoint, "s3", "mb", f"s3://{bucket}"), env=env, check=True, stdout=subprocess.DEVNULL)
            cfg = self.config("check-s3", src, f"    type: s3\n    endpoint: {endpoint}\n    region: us-east-1\n"
                                               f"    bucket: {bucket}\n    concurrency: 16")
            seconds, _ = self.sync(cfg, env)
            self.check_ledger(cfg, objects, env)
            log(f"verify: moto took {objects} objects in {seconds:.1f} s ({objects / seconds:.0f} objects/s)")
            tools = {
                "syncgate check": lambda: measured([self.syncgate, "check", "--quiet", "--config", cfg], self.work, env),
                "rclone check": lambda: measured(["rclone", "check", "--one-way", src, f"moto:{bucket}"], self.work, env),
                "rclone check --size-only": lambda: measured(["rclone", "check", "--one-way", "--size-only", src, f"moto:{bucket}"],
                                                             self.work, env),
            }
            if not self.peers:
                tools = {"syncgate check": tools["syncgate check"]}
            results = {tool: [] for tool in tools}
            for _ in range(self.reps):
                for tool, run in tools.items():
                    results[tool].append(run())
            for tool, values in results.items():
                self.record(f"check s3 (moto), {objects} objects", tool, values,
                            note=f"moto stored {objects / seconds:.0f} objects/s")
        finally:
            proc.terminate()
            proc.wait()
            reset(src)
