#!/usr/bin/env python3
"""A syncgate destination plugin for the tests and the benchmark: copies each file into settings.path (through a
temporary name and a rename), answering requests in order; it also deletes many names at once (`batch_delete`)
and answers `exists` (`existing_copy`) by hashing its copy. `--misbehave MODE` makes it break in one way:

  crash-put     exits (status 3) on the Nth put (settings.every, default 1), in the middle of it
  hang-put      never answers the Nth put, nor its cancel (reads on, answers the rest)
  freeze        stops reading and answering at the Nth put
  garbage       answers the Nth put with a line that is not JSON
  long-line     answers the Nth put with a 2 MiB line
  flood-log     writes 50,000 lines to stderr at the Nth put, then answers it
  flood-out     answers the Nth put with 200,000 progress lines first
  wrong-id      answers the Nth put under another id
  slow-start    waits PLUGIN_DELAY seconds (its environment; default 3) before answering its hello
  crash-start   exits at once without a word
  old-protocol  answers hello with protocol 99
  no-pace       does not declare `paces` (a destination with `bandwidth` refuses it)
  batch-empty      answers the Nth put with an empty batch (`[]`)
  batch-junk       answers the Nth put in a batch that also holds a number
  batch-undeclared does not declare `batch`, yet writes its answers as batches

and the six ways `syncgate plugin check` must catch (each on every put, whatever settings.every says):

  progress-back   sends progress 1000, then 1, before its ok
  ignore-cancel   on a paced put, waits for its grants whatever is cancelled (so a cancelled put never ends)
  answer-twice    answers each put twice
  noise           prints a line that is not JSON on stdout at each put (a debugging print)
  no-exit         does not exit when its stdin closes
  ignore-fault    copies a put carrying `fault` as any other

A paced put (`"paced": true`, sent when the destination has `bandwidth`) asks for each MiB before it writes it
(`want`) and writes it once granted; a `cancel` that comes meanwhile ends it with a `cancelled` error.

Batches (docs/plugins.md): when syncgate's hello carries `"batch": true` it declares `batch`, reads a line that
is a JSON array as that many requests, and writes the answers of each chunk it read as one batch line. With
`--unbatched` (anywhere in its arguments) or TEST_PLUGIN_UNBATCHED=1 in its environment it declares no `batch` and
speaks version 1 line by line, as a plugin written before batches would.

With TEST_PLUGIN_ONE_WRITER=1 in its environment it declares `one_writer` (one instance of a fleet at a time may
send to it); with TEST_PLUGIN_PUT_LOG=FILE it appends a line to FILE for each put it copied: its pid and the
remote name (the fleet test tells by them which instance's plugin sent what).

A state file (settings.state, optional) counts puts across restarts, so `every` counts over the whole test.
With settings.hold N it answers no put until N are in flight (or none came for 20 s), and appends to the file
settings.in_flight, at each put it reads, how many puts it has read and not yet answered (the concurrency test).
It answers the requests of each chunk it reads from stdin with one write (as many as syncgate had sent), so
that a busy plugin costs one wake-up per batch, not per file, on both sides. It copies on its one thread (worker
threads, tried, competed with syncgate for the cores and made it slower), in the kernel (copy_file_range) where it
can, but a paced put through its own reads and writes.
"""
import errno, hashlib, json, os, select, sys, time

args = sys.argv[1:]
unbatched = "--unbatched" in args or os.environ.get("TEST_PLUGIN_UNBATCHED") == "1"
args = [a for a in args if a != "--unbatched"]
mode = args[1] if len(args) > 1 and args[0] == "--misbehave" else ""
batched = False  # syncgate offered batches and this plugin declared them: its answers go out as batch lines
out = sys.stdout
root = None
every = 1
settings_list_sha256 = False  # settings.list_sha256: each `list` entry carries the copy's SHA-256 (for `syncgate check`)
state = None
put_log = os.environ.get("TEST_PLUGIN_PUT_LOG")


pending = []


def send(obj):
    """Queues an answer; `flush` writes the queue once the requests read so far are handled."""
    pending.append(obj)


def flush():
    global in_flight, answered
    if pending:
        # batch-undeclared: batches from the first answer after the handshake on (hello and configure are ids 1, 2)
        undeclared = mode == "batch-undeclared" and all(obj.get("id", 0) > 2 for obj in pending)
        if undeclared or (batched and len(pending) > 1):
            data = (json.dumps(pending) + "\n").encode()
        else:
            data = "".join(json.dumps(obj) + "\n" for obj in pending).encode()
        pending.clear()
        while data:
            data = data[os.write(1, data):]
    in_flight -= answered
    answered = 0


hold = 0  # settings.hold: puts held unanswered until this many are in flight
in_flight_log = None  # settings.in_flight: where the number in flight is written at each put
held = []  # the puts held
in_flight = 0  # puts read and not answered yet (their answers not written)
answered = 0  # puts answered since the last flush


def release_held():
    """Copies the puts held (their answers go out with the next flush)."""
    global answered
    for req in held:
        copy(req, req["id"])
    answered += len(held)
    held.clear()


backlog = []
rest = b""


def read_lines():
    """Reads one chunk of stdin into the backlog; False at its end."""
    global rest
    if held and not select.select([0], [], [], 20)[0]:
        release_held()  # no more puts came: answer those held
        return True
    chunk = os.read(0, 1 << 16)
    if not chunk:
        return False
    lines = (rest + chunk).split(b"\n")
    rest = lines.pop()
    for line in lines:
        if line.strip():
            msg = json.loads(line)
            if isinstance(msg, list):
                backlog.extend(msg)  # a batch: its requests, in order
            else:
                backlog.append(msg)
    return True


def requests():
    """The requests (parsed), a chunk of stdin at a time; answers are flushed before waiting for more."""
    while True:
        while backlog:
            yield backlog.pop(0)
        flush()
        if not read_lines():
            return


def wait_grant(rid, seen):
    """Waits for the grant of put `rid`'s last want, keeping the other requests for later; False when the put
    was cancelled meanwhile (or stdin closed)."""
    while True:
        for i, msg in enumerate(seen):
            if msg.get("id") == rid and msg.get("op") == "grant":
                del seen[i]
                return True
            if msg.get("id") == rid and msg.get("op") == "cancel" and mode != "ignore-cancel":
                del seen[i]
                return False
        flush()
        before = len(backlog)
        if not read_lines():
            return False
        seen.extend(backlog[before:])
        del backlog[before:]


def count_put():
    """The number of this put over the whole test (kept in the state file when there is one)."""
    global puts
    if state is None:
        puts += 1
        return puts
    try:
        with open(state) as f:
            n = int(f.read() or "0")
    except FileNotFoundError:
        n = 0
    n += 1
    with open(state, "w") as f:
        f.write(str(n))
    return n


in_kernel = hasattr(os, "copy_file_range")  # copies without reading the bytes into Python


def copy(req, rid):
    """Copies one file into the folder (through a temporary name and a rename)."""
    global in_kernel
    name = req["remote_name"]
    target = os.path.join(root, name)
    try:
        folder = os.path.dirname(target)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        tmp = os.path.join(folder, ".tmp-%d-%d" % (pid, rid))
        src = os.open(req["path"], os.O_RDONLY)
        try:
            try:
                dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except FileNotFoundError:  # its folder was removed since it was made
                os.makedirs(folder, exist_ok=True)
                dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                copied = 0
                paced = req.get("paced")
                while not paced and in_kernel:
                    # In the kernel, without the bytes passing through Python (a MiB at a time, for progress).
                    try:
                        n = os.copy_file_range(src, dst, 1 << 20)
                    except OSError as e:
                        if e.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP) or copied:
                            raise
                        in_kernel = False  # not between these file systems: read and write, from now on
                        break
                    if not n:
                        break
                    copied += n
                    if copied >= 1 << 20:
                        send({"id": rid, "progress": copied})
                while paced or not in_kernel:
                    block = os.read(src, 1 << 20)
                    if not block:
                        break
                    if paced:
                        send({"id": rid, "want": len(block)})
                        if not wait_grant(rid, waiting):
                            raise Cancelled()
                    os.write(dst, block)
                    copied += len(block)
                    if copied >= 1 << 20:
                        send({"id": rid, "progress": copied})
            finally:
                os.close(dst)
        finally:
            os.close(src)
        os.replace(tmp, target)
        if put_log:
            with open(put_log, "a") as log:
                log.write("%d %s\n" % (pid, name))
        if mode == "progress-back":
            send({"id": rid, "progress": 1000})
            send({"id": rid, "progress": 1})
        send({"id": rid, "ok": {"detail": "%d bytes" % copied}})
        if mode == "answer-twice":
            send({"id": rid, "ok": {"detail": "%d bytes, again" % copied}})
    except Cancelled:
        os.remove(tmp)
        send({"id": rid, "error": {"class": "retryable", "scope": "file", "code": "cancelled", "message": "cancelled"}})
    except FileNotFoundError as e:
        send({"id": rid, "error": {"class": "permanent", "scope": "file", "code": "ENOENT", "message": str(e)}})
    except OSError as e:
        send({"id": rid, "error": {"class": "retryable", "scope": "file", "code": "os", "message": str(e)}})


class Cancelled(Exception):
    pass


puts = 0
waiting = []  # lines read while a paced put waited for its grant, that were not its own
pid = os.getpid()
made = set()
if mode == "crash-start":
    sys.exit(2)
def lines():
    """The requests, those read while a put waited for its grant first."""
    while True:
        while waiting:
            yield waiting.pop(0)
        for line in requests():
            yield line
            if waiting:
                break
        else:
            return


for req in lines():
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        if mode == "slow-start":
            time.sleep(float(os.environ.get("PLUGIN_DELAY", "3")))
        send({"id": rid, "ok": {"protocol": 99 if mode == "old-protocol" else 1, "name": "test",
                                "capabilities": {"names_distinct": True, "resend_harmless": True, "list": True,
                                                 "delete": True, "probe": True, "faults": True,
                                                 "batch_delete": True, "existing_copy": True,
                                                 "paces": mode != "no-pace",
                                                 "one_writer": os.environ.get("TEST_PLUGIN_ONE_WRITER") == "1",
                                                 "batch": bool(req.get("batch")) and not unbatched and mode != "batch-undeclared"}}})
        flush()  # the hello answer goes out on its own, before batches are on
        batched = bool(req.get("batch")) and not unbatched and mode != "batch-undeclared"
    elif op == "configure":
        s = req.get("settings", {})
        if "path" not in s:
            send({"id": rid, "error": {"class": "permanent", "scope": "destination", "code": "settings",
                                       "message": "no path", "settings": [{"key": "path", "message": "missing: where to copy"}]}})
            continue
        root = s["path"]
        settings_list_sha256 = bool(s.get("list_sha256", False))
        # Temporary copies a killed plugin left behind (their process is gone) are removed.
        for folder, _, names in os.walk(root):
            for f in names:
                if f.startswith(".tmp-"):
                    try:
                        os.kill(int(f.split("-")[1]), 0)
                    except (ProcessLookupError, ValueError):
                        os.remove(os.path.join(folder, f))
                    except PermissionError:
                        pass
        every = int(s.get("every", "1"))
        state = s.get("state")
        hold = int(s.get("hold", "0"))
        in_flight_log = s.get("in_flight")
        print("INFO configured for " + root + " token=" + s.get("token", ""), file=sys.stderr, flush=True)
        send({"id": rid, "ok": {}})
    elif op == "put":
        if hold:
            in_flight += 1
            with open(in_flight_log, "a") as f:
                f.write("%d\n" % in_flight)
            held.append(req)
            if len(held) >= hold:
                release_held()
            continue
        if mode == "noise":
            print("copying " + req["remote_name"])
            sys.stdout.flush()
        if "fault" in req and mode != "ignore-fault":
            send({"id": rid, "error": dict(req["fault"], code="fault", message="asked for")})
            continue
        n = count_put() if mode else 0
        hit = mode and n % every == 0
        if hit and mode == "crash-put":
            print("ERROR crashing on purpose at put %d" % n, file=sys.stderr, flush=True)
            os._exit(3)
        if hit and mode == "hang-put":
            continue
        if hit and mode == "freeze":
            time.sleep(60)
            sys.exit(0)
        if hit and mode == "garbage":
            os.write(1, b"this is not json\n"); continue
        if hit and mode == "long-line":
            os.write(1, ('{"id": %d, "progress": 1, "pad": "%s"}\n' % (rid, "x" * (2 << 20))).encode()); continue
        if hit and mode == "flood-log":
            for i in range(50000):
                sys.stderr.write("flood line %d\n" % i)
            sys.stderr.flush()
        if hit and mode == "flood-out":
            line = ('{"id":%d,"progress":0}\n' % rid).encode()
            for i in range(200):
                os.write(1, line * 1000)
        if hit and mode == "batch-empty":
            os.write(1, b"[]\n"); continue
        if hit and mode == "batch-junk":
            os.write(1, ('[{"id": %d, "progress": 0}, 7]\n' % rid).encode()); continue
        if hit and mode == "wrong-id":
            rid = rid + 1000
        copy(req, rid)
    elif op == "delete" and "remote_names" in req:
        failed = {}
        for name in req["remote_names"]:
            try:
                os.remove(os.path.join(root, name))
            except OSError as e:
                failed[name] = {"class": "permanent", "scope": "file", "code": "not-found", "message": str(e)}
        send({"id": rid, "ok": {"failed": failed}})
    elif op == "exists":
        target, digest = os.path.join(root, req["remote_name"]), hashlib.sha256()
        try:
            with open(target, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            held = digest.hexdigest() == req.get("sha256")
        except OSError:
            held = False
        send({"id": rid, "ok": {"receipt": {"detail": "already there"} if held else None}})
    elif op == "delete":
        try:
            os.remove(os.path.join(root, req["remote_name"]))
            send({"id": rid, "ok": {}})
        except OSError as e:
            send({"id": rid, "error": {"class": "permanent", "scope": "file", "code": "not-found", "message": str(e)}})
    elif op == "list":
        for folder, _, files in os.walk(root):
            for f in files:
                if not f.startswith(".tmp-"):
                    p = os.path.join(folder, f)
                    entry = {"name": os.path.relpath(p, root), "size": os.path.getsize(p)}
                    if settings_list_sha256:
                        digest = hashlib.sha256()
                        with open(p, "rb") as copy:
                            for chunk in iter(lambda: copy.read(1 << 20), b""):
                                digest.update(chunk)
                        entry["sha256"] = digest.hexdigest()
                    send({"id": rid, "entry": entry})
        send({"id": rid, "ok": {"complete": True}})
    elif op == "probe":
        send({"id": rid, "ok": {}})
    elif op in ("cancel", "grant"):
        pass
    else:
        send({"id": rid, "error": {"class": "permanent", "scope": "file", "code": "unknown-op", "message": "unknown op"}})
flush()
if mode == "no-exit":
    time.sleep(3600)
