"""External plugin (issue 16): case 1's first sync through an exec plugin against the built-in local destination."""
import json
import os
import statistics

from .harness import ROOT, log, make_tree, reset, tree_summary


class ExecGroup:
    def exec(self):
        """A first sync of the same tree through an external plugin that copies into a folder (the Python test
        plugin, Tests/ExecPlugins/test_plugin.py, one thread) against the built-in local destination, both with
        `fsync: false` (the plugin flushes nothing), alternating within each repetition."""
        s = self.sizes
        src = self.path("exec-tree")
        log(f"exec: preparing {s['files']} x 4 KiB in {s['folders']} folders")
        make_tree(src, s["files"], 4096, s["folders"])
        plugin = os.path.join(ROOT, "Tests", "ExecPlugins", "test_plugin.py")
        # The plugin speaks batches (docs/plugins.md): what syncgate sends at one moment is one line, and the
        # plugin answers what it read at one go with one line. Shown at the default concurrency (4) and at 16, and
        # line by line (`--unbatched`, protocol version 1 as before batches) at 4, for the batches' share.
        tools = {"syncgate local (built-in)": "local", "syncgate exec, concurrency 4": "plugin4",
                 "syncgate exec, concurrency 16": "plugin16", "syncgate exec, concurrency 4, line by line": "plugin4u"}
        results = {tool: [] for tool in tools}
        outs = []
        for rep in range(self.reps):
            for tool, tag in tools.items():
                out = self.path(f"exec-out-{tag}-{rep}")
                outs.append(out)
                if tag.startswith("plugin"):
                    command = json.dumps(plugin) + (', "--unbatched"' if tag.endswith("u") else "")
                    yaml = (f"    type: exec\n    command: [{command}]\n    concurrency: {tag[6:].rstrip('u')}\n"
                            f"    settings: {{path: {json.dumps(out)}}}")
                else:
                    yaml = f"    type: local\n    path: {json.dumps(out)}\n    fsync: false"
                config = self.config(f"exec-{tag}", src, yaml)
                results[tool].append(self.sync(config))
                self.check(f"exec {tool}", tree_summary(out), tree_summary(src))
                self.check_ledger(config, s["files"])
        builtin = statistics.median(v[0] for v in results["syncgate local (built-in)"])
        for tool, values in results.items():
            seconds = statistics.median(v[0] for v in values)
            note = f"{s['files'] / seconds:.0f} files/s" + ("" if tool.endswith("(built-in)") else f", {100 * builtin / seconds:.0f}% of the built-in's throughput")
            self.record(f"exec first sync, {s['files']} x 4 KiB", tool, values, note=note)
        reset(src, *outs)
