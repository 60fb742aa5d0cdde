"""Object storage (cases 1-4): syncgate against rclone copy and aws s3 sync, on moto's S3."""
import os
import subprocess

from .harness import change_files, log, make_file, make_tree, measured, reset, sh, stop, tree_summary


class S3Group:
    def s3_tool(self, tool, source, endpoint, bucket, name):
        env = self.s3_env(endpoint)
        if tool == "syncgate":
            cfg = self.config(name, source, f"    type: s3\n    endpoint: {endpoint}\n    region: us-east-1\n"
                                            f"    bucket: {bucket}\n    concurrency: 8\n"
                                            f"    multipart: {{threshold: 16MiB, part_size: 8MiB, concurrency: 4}}")
            return lambda: self.sync(cfg, env)
        if tool == "rclone copy":
            return lambda: measured(["rclone", "copy", "--transfers", "8", source, f"moto:{bucket}"], self.work, env)
        return lambda: measured(self.aws(endpoint, "s3", "sync", "--only-show-errors", source, f"s3://{bucket}"),
                                self.work, env)

    def s3(self):
        s = self.sizes
        tools = self.own(("syncgate", "rclone copy", "aws s3 sync"))
        src = self.path("s3-tree")
        log(f"s3: preparing {s['files']} x 4 KiB in {s['folders']} folders")
        make_tree(src, s["files"], 4096, s["folders"])
        big = self.path("s3-big")
        make_file(os.path.join(big, "one.bin"), s["big_s3_mib"])
        results = {(case, tool): [] for case in ("1", "2", "3", "4") for tool in tools}
        shared = self.start_moto() if self.sizes.get("shared_server") else None
        try:
            for rep in range(self.reps):
                for tool in tools:
                    # Full runs: a fresh, empty server for each tool and repetition, so no tool pays for another's
                    # stored objects. The smoke run shares one server (buckets per tool) to stay short.
                    proc, endpoint = shared or self.start_moto()
                    try:
                        env = self.s3_env(endpoint)
                        tag = tool.split()[0]
                        small_bucket, big_bucket = f"{tag}-small-{rep}", f"{tag}-big-{rep}"
                        for bucket in (small_bucket, big_bucket):
                            sh(self.aws(endpoint, "s3", "mb", f"s3://{bucket}"), env=env, stdout=subprocess.DEVNULL)
                        run = self.s3_tool(tool, src, endpoint, small_bucket, f"s3-{rep}")
                        results[("1", tool)].append(run())
                        results[("2", tool)].append(run())
                        change_files(src, 100)
                        results[("3", tool)].append(run())
                        self.check(f"s3 {tool}", self.s3_count(endpoint, small_bucket), tree_summary(src))
                        results[("4", tool)].append(self.s3_tool(tool, big, endpoint, big_bucket, f"s3big-{rep}")())
                        self.check(f"s3 big {tool}", self.s3_count(endpoint, big_bucket), tree_summary(big))
                        if tool == "syncgate":
                            self.check_ledger(self.path(f"s3-{rep}.yaml"), s["files"], env)
                            self.check_ledger(self.path(f"s3big-{rep}.yaml"), 1, env)
                    finally:
                        if not shared:
                            stop(proc)
        finally:
            if shared:
                stop(shared[0])
        names = {"1": f"1 first sync, {s['files']} x 4 KiB", "2": f"2 no change, {s['files']} x 4 KiB",
                 "3": f"3 100 changed, {s['files']} x 4 KiB", "4": f"4 one {s['big_s3_mib']} MiB file (multipart)"}
        for (case, tool), values in results.items():
            self.record(f"s3 {names[case]}", tool, values)
        reset(src, big)
