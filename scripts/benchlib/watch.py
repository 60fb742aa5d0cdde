"""The gateway group's observers: inotify on a folder (raw, through libc), the arrival of files complete in a
destination, and a follower of the gateway's `GET /api/events` stream."""
import ctypes
import http.client
import json
import os
import select
import socket
import struct
import threading
import time

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE = 0x2, 0x4, 0x8, 0x40, 0x80, 0x100
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_ONLYDIR, IN_EXCL_UNLINK = 0x400, 0x800, 0x4000, 0x1000000, 0x4000000
# What `syncgate run` watches every source folder for (InotifyWatch.folderMask): the events the memory case counts.
GATEWAY_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF
                | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)


class Inotify:
    """One inotify instance on one folder, read on a thread of its own: `events` counts them, and `visit(mask, name,
    when)`, when given, gets each (`name` as bytes; `when`: time.monotonic() right after the read that returned it)."""

    def __init__(self, folder, mask, visit):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, folder.encode(), mask) < 0:
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
        self.visit = visit
        self.events = self.overflows = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self.stopping.is_set():
            if not poller.poll(100):
                continue
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            when = time.monotonic()
            offset = 0
            while offset < len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16:offset + 16 + length].rstrip(b"\0")
                offset += 16 + length
                if mask & IN_Q_OVERFLOW:
                    self.overflows += 1
                self.events += 1
                if self.visit:
                    self.visit(mask, name, when)

    def close(self):
        self.stopping.set()
        self.thread.join()
        os.close(self.fd)


class Arrivals:
    """When each expected file appears complete in a destination folder: under its final name with its size, told
    by inotify (IN_MOVED_TO: a copy renamed into place, as syncgate and rsync both do; IN_CLOSE_WRITE: one written
    in place). The same method for every tool, so that their columns compare like with like."""

    def __init__(self, folder):
        self.folder = folder
        self.expected = {}  # name -> size
        self.seen = {}  # name -> time.monotonic()
        self.watch = Inotify(folder, IN_MOVED_TO | IN_CLOSE_WRITE, self.visit)

    def expect(self, names, size):
        for name in names:
            self.expected[name] = size

    def visit(self, mask, name, when):
        name = name.decode()
        size = self.expected.get(name)
        if size is None or name in self.seen:
            return
        try:
            if os.stat(os.path.join(self.folder, name)).st_size == size:
                self.seen[name] = when
        except FileNotFoundError:
            pass

    def close(self):
        self.watch.close()


class EventFollower:
    """Follows `GET /api/events` (Server-Sent Events, one `data:` line per event in the `sync --json` form) over a
    plain socket with a large receive buffer. Its thread only reads and stamps what it read (time.monotonic() right
    after each read); ``update()``, called from the main thread, parses that: the arrival time of the first `synced`
    event of each path at `destination`, how many `synced` events came in all, and the `failed` ones. The gateway
    drops the oldest events of a client that falls 10,000 behind (docs/http.md); missing ones are counted."""

    def __init__(self, port, destination):
        self.destination = destination
        self.synced = {}  # path -> time.monotonic()
        self.synced_total = 0
        self.failed = []
        self.reads = []  # (time.monotonic(), bytes) not parsed yet
        self.raw, self.body, self.left = bytearray(), bytearray(), None
        self.sock = socket.create_connection(("127.0.0.1", port), 10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            data = self.sock.recv(1 << 16)
            if not data:
                raise RuntimeError("/api/events: the connection closed before the answer's head")
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if lines[0].split()[1] != "200":
            raise RuntimeError(f"/api/events answered {lines[0]}")
        # The answer's head comes once the gateway has subscribed this stream to its events.
        self.chunked = any(h.lower().startswith("transfer-encoding:") and "chunked" in h.lower() for h in lines[1:])
        self.reads.append((time.monotonic(), rest))
        self.sock.settimeout(None)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            self.reads.append((time.monotonic(), data))

    def update(self):
        """Parses what was read since the last call (chunked transfer encoding, then SSE lines)."""
        end = len(self.reads)
        taken = self.reads[:end]
        del self.reads[:end]  # the reading thread only appends
        for when, data in taken:
            if not self.chunked:
                self.body += data
            else:
                raw, pos = self.raw, 0
                raw += data
                while True:
                    if self.left is None:  # a chunk's size line
                        cut = raw.find(b"\r\n", pos)
                        if cut < 0:
                            break
                        self.left = int(bytes(raw[pos:cut]).split(b";")[0], 16) or -2
                        pos = cut + 2
                    elif self.left == -1:  # the CRLF after a chunk
                        if len(raw) - pos < 2:
                            break
                        pos += 2
                        self.left = None
                    elif self.left == -2:  # the last chunk
                        break
                    else:
                        take = min(self.left, len(raw) - pos)
                        if take == 0:
                            break
                        self.body += raw[pos:pos + take]
                        pos += take
                        self.left = self.left - take or -1
                del raw[:pos]
            cut = self.body.rfind(b"\n")
            if cut >= 0:
                for line in bytes(self.body[:cut]).split(b"\n"):
                    if line.startswith(b"data: ") and (b"synced" in line or b"failed" in line):
                        self.take(json.loads(line[6:]), when)
                del self.body[:cut + 1]

    def take(self, event, when):
        kind = event.get("event")
        if kind == "synced" and event.get("destination") == self.destination:
            self.synced.setdefault(event["path"], when)
            self.synced_total += 1
        elif kind == "failed":
            self.failed.append(event)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.sock.close()
        self.update()


def http_status(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()
