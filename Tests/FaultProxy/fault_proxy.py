#!/usr/bin/env python3
"""A fault-injecting TCP proxy for syncgate's tests (loopback only, standard library only).

    fault_proxy.py --listen PORT --target HOST:PORT --control PORT

Forwards every connection on 127.0.0.1:PORT to the target, unless a fault is set through the control port:

    POST /fault  {"mode": "...", "count": N, ...}     set a fault for the next N connections (N absent: until changed)
    POST /pass                                        forward everything again
    POST /run-ended                                   a run of the client ended (counts down "down" mode's runs)
    GET  /log                                         what happened to each connection (JSON lines)

Modes:
  refuse                      stop listening: connections are refused (ECONNREFUSED)
  reset       {"after": B}    forward B bytes of the request, then reset both sides (RST)
  stall                       accept, read, never answer (until the client gives up)
  blackhole                   a network cut without a reset: connections already open (forwarded) stop carrying
                              data both ways (what arrives is read and dropped, nothing is closed), and new ones
                              stall; until changed ("count" is ignored). POST /pass carries data again
  trickle     {"rate": B}     forward, but send the answers at B bytes per second
  cut         {"after": B}    forward B bytes of the request, then close both sides cleanly
  http_error  {"status": 503, "retry_after": 1, "body": "...", "content_type": "..."}
                              read one HTTP request and answer it with that status (Connection: close)
  down        {"runs": N}     refuse connections (not listening) for the next N runs of the client: the test
                              reports each run's end with POST /run-ended; after the N-th the proxy listens again
  throttle    {"count": N, "flavor": "s3" | "sheets", "retry_after": S}
                              answer the next N HTTP requests as a throttling server does (S3: 503 SlowDown;
                              Sheets: 429 RESOURCE_EXHAUSTED), with Retry-After S when given, then forward again
  delay       {"ms": M}       forward, but hold each HTTP/1.1 request M ms before sending its head on (requests
                              told apart by Content-Length or chunked framing, so each request on a kept-alive
                              connection waits, not only the first); a stream that is not HTTP is forwarded as is.
                              The log entry counts the requests held ("requests")
  flaky       {"fraction": F, "seed": S, "flavor": "s3" | "sheets", "status": 500, "retry_after": R}
                              answer each HTTP/1.1 request with probability F (0..1) with a server error instead of
                              forwarding it; the others are forwarded unchanged. The decisions come from one
                              random.Random(S) (S absent: unseeded), drawn in the order requests arrive, so a run sees
                              the same sequence of decisions. The error is S3's 500 InternalError (XML; "status": 503
                              gives 503 ServiceUnavailable) or, for "sheets", Google's 500 INTERNAL (JSON). A failed
                              request's body is read and dropped first (after a 100 Continue when it asked for one),
                              and the answer keeps the connection open (Content-Length, Connection: keep-alive)
                              unless the request asked to close it. Requests are told apart as in `delay`, so this
                              works per request on kept-alive connections, and the fraction is read for each request:
                              POST /fault again (a new fraction, or a new seed) or POST /pass (forward everything)
                              takes effect at the next request of every connection opened while `flaky` was set.
                              (Connections opened in another mode stay in it: set `flaky` with fraction 0 first to
                              switch a run's connections later.) "count" is ignored: until changed. The log entry
                              of each connection counts its requests "failed" and "forwarded". Clients that
                              pipeline requests (send one before the answer to the last) are not supported.
"""
import argparse
import asyncio
import json
import random
import signal
import socket
import struct
import sys
import time


REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 429: "Too Many Requests",
           403: "Forbidden", 400: "Bad Request"}


def http_answer(answer, keep_alive=False, head_only=False):
    """The bytes of an HTTP/1.1 answer made of `answer`'s "status" (503 when absent), "body", "content_type" and
    "retry_after"; `keep_alive`: the connection stays open; `head_only`: the answer to a HEAD (headers only)."""
    status = int(answer.get("status", 503))
    body = answer.get("body", "").encode()
    headers = [f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}", f"Content-Length: {len(body)}",
               "Connection: keep-alive" if keep_alive else "Connection: close"]
    if "content_type" in answer:
        headers.append(f"Content-Type: {answer['content_type']}")
    if "retry_after" in answer:
        headers.append(f"Retry-After: {answer['retry_after']}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + (b"" if head_only else body)


class Request:
    """One HTTP/1.x request's head as read from a client: its bytes (up to the blank line) and its framing."""

    def __init__(self, head):
        self.head = head
        lines = head[:-4].split(b"\r\n")
        self.method, _, rest = lines[0].partition(b" ")
        self.version = rest.rpartition(b" ")[2]
        self.length, self.chunked, self.expects_continue, connection = 0, False, False, b""
        for header in lines[1:]:
            name, _, value = header.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                self.length = int(value)  # ValueError: not a request this proxy can follow
            elif name == b"transfer-encoding" and b"chunked" in value:
                self.chunked = True
            elif name == b"expect" and value == b"100-continue":
                self.expects_continue = True
            elif name == b"connection":
                connection = value
        self.has_body = self.chunked or self.length > 0
        # HTTP/1.1 keeps a connection open unless asked not to; HTTP/1.0 only when asked to.
        self.wants_close = b"close" in connection or (self.version == b"HTTP/1.0" and b"keep-alive" not in connection)


class RequestStream:
    """HTTP/1.1 requests read one after the other from a client's stream, told apart by their framing
    (Content-Length or chunked), so that a mode can act on each request of a kept-alive connection.

    ``next()`` gives the next request's head (a ``Request``); ``body(request, sink)`` then passes its body on to
    `sink` (an async function of bytes) as it comes: chunk size lines, chunks and trailers as they are. What is
    left when the stream is not (or no longer) HTTP is in ``rest()``, to be forwarded as is."""

    def __init__(self, reader):
        self.reader = reader
        self.buffer = bytearray()

    async def fill(self):
        data = await self.reader.read(65536)
        self.buffer.extend(data)
        return bool(data)

    async def next(self):
        """The next request's head, or None at the end of the stream or when what comes is not an HTTP request."""
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > 65536 or not await self.fill():
                break
        cut = self.buffer.find(b"\r\n\r\n")
        first = bytes(self.buffer[:max(cut, 0)]).split(b"\r\n")[0]
        if cut < 0 or len(first.split(b" ")) != 3 or not first.endswith((b"HTTP/1.1", b"HTTP/1.0")):
            return None
        request = Request(bytes(self.buffer[:cut + 4]))
        del self.buffer[:cut + 4]
        return request

    def rest(self):
        """What was read and not yet given out (emptied)."""
        data = bytes(self.buffer)
        self.buffer.clear()
        return data

    async def body(self, request, sink):
        """Passes `request`'s body to `sink`; False when the stream ended before the body did."""
        if not request.chunked:
            return await self.forward(request.length, sink)
        while True:  # chunks, then the trailers up to an empty line
            size_line = await self.line(sink)
            if size_line is None:
                return False
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := await self.line(sink)) != b"\r\n":
                    if trailer is None:
                        return False
                return True
            if not await self.forward(size + 2, sink):
                return False

    async def forward(self, count, sink):
        """`count` bytes to `sink`: what is buffered first, then as they come."""
        while count > 0:
            if not self.buffer and not await self.fill():
                return False
            take = min(count, len(self.buffer))
            data = bytes(self.buffer[:take])
            del self.buffer[:take]
            count -= take
            await sink(data)
        return True

    async def line(self, sink):
        """One CRLF-ended line (a chunk's size, a trailer), passed to `sink` and returned; None at the end."""
        while b"\r\n" not in self.buffer:
            if not await self.fill():
                return None
        cut = self.buffer.index(b"\r\n") + 2
        text = bytes(self.buffer[:cut])
        del self.buffer[:cut]
        await sink(text)
        return text


def writer_sink(writer):
    """An async function that writes bytes to `writer` and waits for it to drain (a ``RequestStream`` sink)."""
    async def send(data):
        writer.write(data)
        await writer.drain()
    return send


async def discard(data):
    """A ``RequestStream`` sink that drops what it gets (a failed request's body)."""


class Proxy:
    def __init__(self, listen_port, target_host, target_port):
        self.listen_port = listen_port
        self.target = (target_host, target_port)
        self.fault = None
        self.blackhole = False
        self.remaining = None
        self.server = None
        self.log = []
        self.tasks = set()
        self.runs_down = 0
        self.flaky_random = random.Random()

    async def start(self):
        if self.server is None:
            self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.listen_port, reuse_address=True)

    async def stop_listening(self):
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None

    async def set_fault(self, fault):
        self.blackhole = bool(fault and fault.get("mode") == "blackhole")
        self.fault = fault
        self.remaining = fault.get("count") if fault else None
        if fault and fault.get("mode") == "flaky":
            self.remaining = None  # per request, until changed
            self.flaky_random = random.Random(fault.get("seed"))
        self.runs_down = fault.get("runs", 1) if fault and fault.get("mode") == "down" else 0
        if fault and fault.get("mode") in ("refuse", "down"):
            await self.stop_listening()
        else:
            await self.start()

    async def run_ended(self):
        self.log.append({"time": time.time(), "mode": "run-ended"})
        if self.fault and self.fault.get("mode") == "down":
            self.runs_down -= 1
            if self.runs_down <= 0:
                await self.set_fault(None)

    def take_fault(self):
        fault = self.fault
        if fault is None:
            return None
        if self.remaining is not None:
            self.remaining -= 1
            if self.remaining <= 0:
                self.fault = None
                self.remaining = None
        return fault

    @staticmethod
    def hard_close(writer):
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        writer.close()

    async def handle(self, reader, writer):
        fault = self.take_fault()
        mode = fault["mode"] if fault else "pass"
        entry = {"time": time.time(), "mode": mode}
        self.log.append(entry)
        task = asyncio.current_task()
        self.tasks.add(task)
        try:
            if mode == "http_error":
                await self.http_error(reader, writer, fault)
                return
            if mode == "throttle":
                await self.http_error(reader, writer, self.throttle_answer(fault))
                return
            if mode in ("stall", "blackhole"):
                while await reader.read(65536):
                    pass
                writer.close()
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.target)
            except OSError:
                self.hard_close(writer)
                entry["error"] = "target unreachable"
                return
            limit = fault.get("after") if mode in ("reset", "cut") else None
            rate = fault.get("rate") if mode == "trickle" else None
            if mode == "delay":
                up = asyncio.create_task(self.pipe_delayed(reader, up_writer, fault.get("ms", 0) / 1000, entry))
            elif mode == "flaky":
                up = asyncio.create_task(self.pipe_flaky(reader, writer, up_writer, entry))
            else:
                up = asyncio.create_task(self.pipe(reader, up_writer, limit))
            down = asyncio.create_task(self.pipe(up_reader, writer, None, rate))
            done, pending = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if mode == "reset" and up in done:
                self.hard_close(writer)
                self.hard_close(up_writer)
            elif (mode == "cut" and up in done) or (mode == "flaky" and up in done and up.result() == "close"):
                writer.close()
                up_writer.close()
            else:
                await asyncio.wait(pending, timeout=None if mode in ("pass", "trickle", "delay", "flaky") else 0)
            for t in pending:
                t.cancel()
            for w in (writer, up_writer):
                try:
                    w.close()
                except Exception:
                    pass
        except Exception as error:  # a test tool: report, never crash
            entry["error"] = repr(error)
        finally:
            self.tasks.discard(task)

    async def pipe(self, reader, writer, limit=None, rate=None):
        sent = 0
        try:
            while True:
                want = 65536 if limit is None else min(65536, limit - sent)
                if rate:
                    want = min(want, max(1, rate // 10))
                if want <= 0:
                    return "limit"
                data = await reader.read(want)
                if not data:
                    break
                if self.blackhole:
                    continue  # cut off: dropped, never answered
                writer.write(data)
                await writer.drain()
                sent += len(data)
                if rate:
                    await asyncio.sleep(len(data) / rate)
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            pass
        return "eof"

    async def pipe_delayed(self, reader, writer, seconds, entry):
        """Forwards HTTP/1.1 requests, each held `seconds` before its head goes on; the body follows as it comes
        (Content-Length or chunked), so `Expect: 100-continue` still works. Not HTTP: the rest is forwarded as is."""
        requests = RequestStream(reader)
        send = writer_sink(writer)
        entry["requests"] = 0
        try:
            while (request := await requests.next()) is not None:
                await asyncio.sleep(seconds)
                entry["requests"] += 1
                await send(request.head)
                if not await requests.body(request, send):
                    break
            await send(requests.rest())  # the end of the stream, or not HTTP: as is
            return await self.pipe(reader, writer)
        except (ConnectionError, OSError, ValueError):
            pass
        return "eof"

    async def pipe_flaky(self, reader, writer, up_writer, entry):
        """Reads the client's HTTP/1.1 requests one by one (`reader`) and, as ``flaky_answer`` decides for each,
        forwards it to the target (`up_writer`) or answers it on the client's connection (`writer`) with a server
        error, after reading and dropping its body. The target's answers flow back on their own (``pipe``); a
        client that waits for each answer before its next request (every client this proxy serves) never sees
        the two interleave. Returns "close" when an error answer closed the connection."""
        requests = RequestStream(reader)
        forward = writer_sink(up_writer)
        entry["failed"] = entry["forwarded"] = 0
        try:
            while (request := await requests.next()) is not None:
                answer = self.flaky_answer()
                if answer is None:
                    entry["forwarded"] += 1
                    await forward(request.head)
                    if not await requests.body(request, forward):
                        break
                    continue
                entry["failed"] += 1
                if request.expects_continue and request.has_body:  # the body is wanted: read, then answered
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await writer.drain()
                if not await requests.body(request, discard):
                    return "close"
                keep_alive = not request.wants_close
                writer.write(http_answer(answer, keep_alive=keep_alive, head_only=request.method == b"HEAD"))
                await writer.drain()
                if not keep_alive:
                    return "close"
            await forward(requests.rest())  # the end of the stream, or not HTTP: as is
            return await self.pipe(reader, up_writer)
        except ValueError:  # a request this proxy cannot follow (a bad Content-Length or chunk size)
            return "close"
        except (ConnectionError, OSError):
            pass
        return "eof"

    def flaky_answer(self):
        """For the next request: None to forward it, or the error to answer it with, as the current fault says (not
        `flaky` any more: forward). One decision is drawn per request while `flaky` is set, in arrival order."""
        fault = self.fault
        if not fault or fault.get("mode") != "flaky":
            return None
        if self.flaky_random.random() >= float(fault.get("fraction", 0)):
            return None
        return self.flaky_error(fault)

    @staticmethod
    def flaky_error(fault):
        """The answer of a server failing inside, as its API documents it: S3's 500 InternalError (503:
        ServiceUnavailable), or Google's 500 INTERNAL (503: UNAVAILABLE) for the "sheets" flavor."""
        status = int(fault.get("status", 500))
        if fault.get("flavor") == "sheets":
            state, message = ("UNAVAILABLE", "The service is currently unavailable.") if status == 503 \
                else ("INTERNAL", "Internal error encountered.")
            answer = {"status": status, "content_type": "application/json; charset=UTF-8",
                      "body": json.dumps({"error": {"code": status, "status": state, "message": message}})}
        else:
            code, message = ("ServiceUnavailable", "Service is unable to handle request.") if status == 503 \
                else ("InternalError", "We encountered an internal error. Please try again.")
            answer = {"status": status, "content_type": "application/xml",
                      "body": "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                              f"<Error><Code>{code}</Code><Message>{message}</Message>"
                              "<RequestId>FAULTPROXY</RequestId><HostId>FAULTPROXY</HostId></Error>"}
        if "retry_after" in fault:
            answer["retry_after"] = fault["retry_after"]
        return answer

    @staticmethod
    def throttle_answer(fault):
        """The answer a throttling server gives, as its API documents it."""
        answer = {"status": 503, "content_type": "application/xml",
                  "body": "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                          "<Message>Please reduce your request rate.</Message><RequestId>FAULTPROXY</RequestId></Error>"}
        if fault.get("flavor") == "sheets":
            answer = {"status": 429, "content_type": "application/json; charset=UTF-8",
                      "body": json.dumps({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                                                    "message": "Quota exceeded for quota metric 'Write requests' and limit "
                                                               "'Write requests per minute per user'"}})}
        if "retry_after" in fault:
            answer["retry_after"] = fault["retry_after"]
        return answer

    async def http_error(self, reader, writer, fault):
        """Reads one HTTP request (its body dropped) and answers it with `fault`'s answer (Connection: close)."""
        requests = RequestStream(reader)
        request = await requests.next()
        if request is not None:
            await requests.body(request, discard)
        writer.write(http_answer(fault))
        await writer.drain()
        writer.close()


async def control(proxy, reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line = head.split(b"\r\n")[0].decode()
        method, path = request_line.split(" ")[:2]
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1].strip())
        body = await reader.readexactly(length) if length else b""
        if method == "POST" and path == "/fault":
            await proxy.set_fault(json.loads(body or b"{}"))
            answer = b"{}"
        elif method == "POST" and path == "/pass":
            await proxy.set_fault(None)
            answer = b"{}"
        elif method == "POST" and path == "/run-ended":
            await proxy.run_ended()
            answer = b"{}"
        elif method == "GET" and path == "/log":
            answer = "\n".join(json.dumps(e) for e in proxy.log).encode()
        else:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(answer) + answer)
        await writer.drain()
    finally:
        writer.close()


async def main():
    # Started from a test runner's worker thread, this process may inherit SIGTERM and SIGINT blocked.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--control", type=int, required=True)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("fault_proxy: the target must be on loopback")
    proxy = Proxy(args.listen, host, int(port))
    await proxy.start()
    control_server = await asyncio.start_server(lambda r, w: control(proxy, r, w), "127.0.0.1", args.control)
    print(f"fault_proxy listening on {args.listen} -> {args.target}, control on {args.control}", flush=True)
    async with control_server:
        await control_server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
