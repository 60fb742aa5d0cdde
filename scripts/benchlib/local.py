"""Local destination (cases 1-5): syncgate against rsync -a, rsync -a --fsync and rclone copy."""
import os

from .harness import DURABLE_RSYNC, NOFSYNC, TAGS, change_files, make_file, make_tree, measured, log, reset, tree_summary


class LocalGroup:
    def local(self):
        s = self.sizes
        src = self.path("tree")
        log(f"local: preparing {s['files']} x 4 KiB in {s['folders']} folders")
        make_tree(src, s["files"], 4096, s["folders"])
        # syncgate twice: as shipped (copies made durable before they are recorded synced) and with `fsync: false`,
        # the durability rsync and rclone offer by default (none), so that the table shows what the flush costs;
        # and rsync with --fsync (every file flushed), the durable peer for the shipped default.
        tools = self.own(("syncgate", NOFSYNC, "rsync -a", DURABLE_RSYNC, "rclone copy"))
        results = {(case, tool): [] for case in ("1", "2", "3") for tool in tools}
        for rep in range(self.reps):
            for tool in tools:  # alternating within each repetition
                # A new folder per run, all removed at the end: ext4 makes creating files slow for a while
                # after many were deleted, which would tax whichever tool runs after a clean-up.
                d = self.path(f"out-{TAGS[tool]}-{rep}")
                run = self.local_tool(tool, src, d, TAGS[tool])
                results[("1", tool)].append(run())
                results[("2", tool)].append(run())
                change_files(src, 100)
                results[("3", tool)].append(run())
                self.check(f"local {tool}", tree_summary(d), tree_summary(src))
                if tool.startswith("syncgate"):
                    self.check_ledger(self.path(f"{TAGS[tool]}.yaml"), s["files"])
        names = {"1": "1 first sync", "2": "2 no change", "3": "3 100 changed"}
        for (case, tool), values in results.items():
            self.record(f"local {names[case]}, {s['files']} x 4 KiB", tool, values)
        reset(src, *[self.path(f"out-{TAGS[t]}-{r}") for t in tools for r in range(self.reps)])

        big = self.path("big-local")
        log(f"local: preparing one {s['big_local_mib']} MiB file")
        make_file(os.path.join(big, "one.bin"), s["big_local_mib"])
        results = {tool: [] for tool in tools}
        for rep in range(self.reps):
            for tool in tools:
                d = self.path("big-out")
                reset(d)
                results[tool].append(self.local_tool(tool, big, d, "big" + TAGS[tool])())
                self.check(f"big local {tool}", tree_summary(d), tree_summary(big))
                if tool.startswith("syncgate"):
                    self.check_ledger(self.path(f"big{TAGS[tool]}.yaml"), 1)
        for tool, values in results.items():
            self.record(f"local 4 one {s['big_local_mib']} MiB file", tool, values)
        reset(big, self.path("big-out"))

        tools = self.own(("syncgate", "rsync -a", "rclone copy"))
        many = self.path("many")
        log(f"local: preparing {s['many']} files")
        make_tree(many, s["many"], 64, max(1, s["many"] // 100))
        outs = {tool: self.path("many-out-" + TAGS[tool]) for tool in tools}
        runs = {tool: self.local_tool(tool, many, outs[tool], "sgmany") for tool in tools}
        first = runs["syncgate"]()
        self.check_ledger(self.path("sgmany.yaml"), s["many"])
        for tool in tools[1:]:
            runs[tool]()
        results = {tool: [] for tool in tools}
        status = []
        for rep in range(self.reps):
            for tool in tools:
                results[tool].append(runs[tool]())
            status.append(measured([self.syncgate, "status", "--json", "--config", self.path("sgmany.yaml")], self.work))
        for tool, d in outs.items():
            self.check(f"many {tool}", tree_summary(d), tree_summary(many))
        for tool, values in results.items():
            self.record(f"local 5 no change, {s['many']} files", tool, values)
        self.record(f"local 5 status, {s['many']} ledger rows", "syncgate status", status)
        self.record(f"local 5 first sync, {s['many']} files (context)", "syncgate", [first])
        reset(many, *outs.values())

    def local_tool(self, tool, source, destination, name):
        """A command that copies `source` into `destination` with `tool` (syncgate: with a fresh state)."""
        if tool.startswith("syncgate"):
            extra = "\n    fsync: false" if tool == NOFSYNC else ""
            cfg = self.config(name, source, f"    type: local\n    path: {destination}{extra}")
            return lambda: self.sync(cfg)
        if tool == "rsync -a":
            return lambda: measured(["rsync", "-a", source + "/", destination + "/"], self.work)
        if tool == DURABLE_RSYNC:
            return lambda: measured(["rsync", "-a", "--fsync", source + "/", destination + "/"], self.work)
        return lambda: measured(["rclone", "copy", "--transfers", "8", source, destination], self.work,
                                dict(os.environ, RCLONE_CONFIG="/dev/null"))
