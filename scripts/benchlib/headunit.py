"""Head unit (case 6): syncgate to the head-unit simulator against a plain TCP copy of the same bytes."""
import os
import socket
import statistics
import subprocess
import threading
import time

from .harness import free_port, make_file, make_tree, measured, reset, stop, tree_summary, wait_listening


class HeadunitGroup:
    def tcp_copy(self, source):
        """The ceiling: the same bytes over one loopback TCP connection into a file (sendfile out, 1 MiB reads in)."""
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        target = self.path("tcp-copy.bin")

        def receive():
            conn, _ = server.accept()
            with conn, open(target, "wb") as out:
                while True:
                    data = conn.recv(1 << 20)
                    if not data:
                        break
                    out.write(data)

        start = time.perf_counter()
        receiver = threading.Thread(target=receive)
        receiver.start()
        with socket.create_connection(server.getsockname()) as c, open(source, "rb") as f:
            c.sendfile(f)
        receiver.join()
        seconds = time.perf_counter() - start
        server.close()
        self.check("tcp copy", os.path.getsize(target), os.path.getsize(source))
        os.remove(target)
        return seconds, 0.0

    def headunit(self):
        s = self.sizes
        small = self.path("hu-small")
        make_tree(small, s["hu_files"], 16 * 1024, 1)
        big = self.path("hu-big")
        make_file(os.path.join(big, "one.bin"), s["hu_mib"])
        small_results, big_results, fixed, ceiling = [], [], [], []
        for rep in range(self.reps):
            for which, source, results in (("small", small, small_results), ("big", big, big_results)):
                port = free_port()
                storage = self.path("hu-storage")
                reset(storage)
                os.makedirs(storage)
                sim = subprocess.Popen([self.simulator, "--port", str(port), "--storage", storage,
                                        "--quota", str(4 << 30)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    wait_listening(port, sim, "the head-unit simulator")
                    cfg = self.config(f"hu-{which}", source,
                                      f"    type: headunit\n    host: 127.0.0.1\n    port: {port}\n"
                                      f"    app: {{name: Bench, id: '1'}}\n    retry: {{file: 0, artwork: 0}}")
                    results.append(self.sync(cfg))
                    self.check(f"head unit {which}", tree_summary(storage)[0], tree_summary(source)[0])
                    self.check_ledger(cfg, s["hu_files"] if which == "small" else 1)
                    if which == "big":
                        # The same again: start-up, session (RegisterAppInterface), ListFiles, ledger; nothing sent.
                        fixed.append(self.sync(cfg))
                finally:
                    stop(sim)
            ceiling.append(self.tcp_copy(os.path.join(big, "one.bin")))
        self.record(f"headunit 6 {s['hu_files']} x 16 KiB", "syncgate", small_results)
        whole = statistics.median(v[0] for v in big_results)
        fixed_cost = statistics.median(v[0] for v in fixed)
        top = s["hu_mib"] / statistics.median(v[0] for v in ceiling)
        net = s["hu_mib"] / max(whole - fixed_cost, 1e-6)
        self.record(f"headunit 6 one {s['hu_mib']} MiB file", "syncgate", big_results,
                    note=f"{s['hu_mib'] / whole:.0f} MiB/s whole run; {net:.0f} MiB/s net of the fixed cost = "
                         f"{100 * net / top:.0f}% of the ceiling")
        self.record(f"headunit 6 one {s['hu_mib']} MiB file", "syncgate, same again (fixed cost)", fixed,
                    note="start-up, session, ListFiles, ledger; nothing sent")
        self.record(f"headunit 6 one {s['hu_mib']} MiB file", "plain TCP copy (ceiling)", ceiling, note=f"{top:.0f} MiB/s")
        reset(small, big, self.path("hu-storage"))
        self.headunit_window()

    def headunit_window(self):
        """Case 8 (issue 30): a head unit in range for a few seconds only (the simulator's --accept-for, each
        response held --delay-ms, as a slow link): the bytes of the high-priority set (a route with `priority: 10`,
        files the walk meets last) that arrive before it goes away, with `order: priority` and in the walk's order."""
        s = self.sizes
        window, delay = s["hu_window_s"], s["hu_window_delay_ms"]
        source = self.path("hu-window")
        make_tree(os.path.join(source, "bulk"), s["hu_window_low"], 64 * 1024, 4)
        make_tree(os.path.join(source, "vip"), s["hu_window_high"], 64 * 1024, 1)
        high_total = tree_summary(os.path.join(source, "vip"))[1]
        results = {"priority": [], "walk": []}
        high_bytes = {"priority": [], "walk": []}
        for rep in range(self.reps):
            for order in ("priority", "walk"):
                port = free_port()
                storage = self.path("hu-window-storage")
                reset(storage)
                os.makedirs(storage)
                sim = subprocess.Popen([self.simulator, "--port", str(port), "--storage", storage, "--quota", str(4 << 30),
                                        "--accept-for", str(window), "--delay-ms", str(delay)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    wait_listening(port, sim, "the head-unit simulator")
                    cfg = self.config(f"hu-window-{order}", source,
                                      f"    type: headunit\n    host: 127.0.0.1\n    port: {port}\n"
                                      f"    app: {{name: Bench, id: '1'}}\n    connect_timeout: 2s\n"
                                      f"    retry: {{file: 0, artwork: 0}}\n    order: {order}",
                                      routes="[{match: ['**/*'], to: [dst]}, {match: ['vip/**'], to: [dst], priority: 10}]")
                    # 75: the head unit went away with files still to send (the point of the case); 0: all fitted.
                    results[order].append(measured([self.syncgate, "sync", "--quiet", "--config", cfg], self.work, ok=(0, 75)))
                finally:
                    stop(sim)
                high_bytes[order].append(sum(os.path.getsize(os.path.join(storage, name)) for name in os.listdir(storage)
                                             if name.startswith("vip_")))
        case = f"headunit 8 {window:g} s window {s['hu_window_high']}+{s['hu_window_low']} x 64 KiB"
        for order, tool in (("priority", "syncgate, order: priority"), ("walk", "syncgate, walk order")):
            got = statistics.median(high_bytes[order])
            self.record(case, tool, results[order],
                        note=f"high-priority bytes within the window: {got / (1 << 20):.2f} of {high_total / (1 << 20):.2f} MiB "
                             f"({100 * got / high_total:.0f}%); responses held {delay} ms")
        reset(source, self.path("hu-window-storage"))
