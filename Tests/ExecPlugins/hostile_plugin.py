#!/usr/bin/env python3
"""A plugin that plays the hostile side, for the adversarial tests (ExecPluginTests): `hostile_plugin.py MODE`.

It writes its pid to the file `settings.pidfile` (when given) at `configure`, so a test can check it is gone, and
answers `hello` with list, delete and probe. Modes:

- echo-code: every put fails, its error `code` (and message) carrying `settings.token`, file-scoped.
- echo-code-destination: the same, destination-scoped (the destination is blocked with that code).
- huge-names: `list` streams entries whose names are 64 KiB each, without end, and ignores `cancel`.
- endless-list: `list` streams short names, one every 20 ms, without end, and ignores `cancel`.
- endless-list-authoritative: the same, from a plugin whose listing is authoritative (listed at every sync).
- control-names: `list` answers names holding CR, ESC, BEL (and a leading CR that would overwrite the line).
"""
import json, os, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else ""
settings = {}


def send(obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


def requests():
    rest = b""
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.strip():
                yield json.loads(line)


for req in requests():
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        send({"id": rid, "ok": {"protocol": 1, "name": "hostile",
                                "capabilities": {"names_distinct": True, "list": True, "delete": True, "probe": True,
                                                 "listing_authoritative": mode == "endless-list-authoritative"}}})
    elif op == "configure":
        settings = req.get("settings", {})
        if settings.get("pidfile"):
            with open(settings["pidfile"], "w") as f:
                f.write(str(os.getpid()))
        send({"id": rid, "ok": {}})
    elif op == "put":
        token = settings.get("token", "")
        scope = "destination" if mode == "echo-code-destination" else "file"
        send({"id": rid, "error": {"class": "permanent", "scope": scope, "code": "denied-" + token,
                                   "message": "the server refused token " + token}})
    elif op == "probe":
        if mode == "echo-code-destination":
            token = settings.get("token", "")
            send({"id": rid, "error": {"class": "permanent", "scope": "destination", "code": "denied-" + token,
                                       "message": "still refused"}})
        else:
            send({"id": rid, "ok": {}})
    elif op == "list":
        if mode == "huge-names":
            n = 0
            while True:
                n += 1
                send({"id": rid, "entry": {"name": ("%08d" % n) + "x" * 65528, "size": 1}})
        elif mode.startswith("endless-list"):
            n = 0
            while True:
                n += 1
                send({"id": rid, "entry": {"name": "file-%d.txt" % n, "size": 1}})
                time.sleep(0.02)
        elif mode == "control-names":
            for name in ["\rFAKE: all synced", "bell\x07ring.txt", "esc\x1b[31mred.txt", "plain.txt"]:
                send({"id": rid, "entry": {"name": name, "size": 3}})
            send({"id": rid, "ok": {"complete": True, "space_available": None}})
        else:
            send({"id": rid, "ok": {"complete": True, "space_available": None}})
    elif op == "delete":
        send({"id": rid, "ok": {}})
    elif op == "cancel":
        pass
