"""Destination away (case 7, issue 14): a run over pending files whose head unit and S3 endpoint are absent."""
import json
import os
import subprocess

from .harness import CREDENTIALS, free_port, make_tree, measured, reset


class AwayGroup:
    def away(self):
        """10,000 files wait for a head unit and an S3 endpoint that are both absent: each run must end in about
        one connect timeout, exit 75, and leave every file pending (none failed)."""
        s = self.sizes
        src = self.path("away-tree")
        make_tree(src, s["away_files"], 1024, 20)
        connect_timeout = 2
        path = self.path("away.yaml")
        with open(path, "w") as f:
            f.write(f"version: 1\nstate: {self.path('away-state', 'state.sqlite')}\n"
                    f"sources: [{{name: src, path: {src}}}]\n"
                    f"destinations:\n"
                    f"  - {{name: car, type: headunit, host: 127.0.0.1, port: {free_port()}, app: {{name: Bench, id: '1'}},"
                    f" connect_timeout: {connect_timeout}s}}\n"
                    f"  - {{name: bucket, type: s3, endpoint: 'http://127.0.0.1:{free_port()}', region: us-east-1,"
                    f" bucket: away}}\n")
        env = dict(os.environ, **CREDENTIALS)
        first, again = [], []
        for rep in range(self.reps):
            reset(self.path("away-state"))
            first.append(measured([self.syncgate, "sync", "--quiet", "--config", path], self.work, env, ok=(75,)))
            again.append(measured([self.syncgate, "sync", "--quiet", "--config", path], self.work, env, ok=(75,)))
            out = subprocess.run([self.syncgate, "status", "--json", "--config", path], cwd=self.work, check=True,
                                 capture_output=True, text=True, env=env).stdout
            for d in json.loads(out)["destinations"]:
                got = {k: d[k] for k in ("state", "pending", "failed")}
                if got != {"state": "unavailable", "pending": s["away_files"], "failed": 0}:
                    raise RuntimeError(f"away: {d['name']}: the ledger says {got}")
        budget = f"budget 1 s + connect_timeout ({connect_timeout} s) = {1 + connect_timeout} s"
        self.record(f"away 7 {s['away_files']} pending, head unit + S3 absent", "syncgate, first run", first, note=budget)
        self.record(f"away 7 {s['away_files']} pending, head unit + S3 absent", "syncgate, next run (probes)", again, note=budget)
        reset(src, self.path("away-state"))
