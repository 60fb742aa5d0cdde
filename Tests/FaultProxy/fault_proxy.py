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
"""
import argparse
import asyncio
import json
import signal
import socket
import struct
import sys
import time


class Proxy:
    def __init__(self, listen_port, target_host, target_port):
        self.listen_port = listen_port
        self.target = (target_host, target_port)
        self.fault = None
        self.remaining = None
        self.server = None
        self.log = []
        self.tasks = set()
        self.runs_down = 0

    async def start(self):
        if self.server is None:
            self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.listen_port, reuse_address=True)

    async def stop_listening(self):
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None

    async def set_fault(self, fault):
        self.fault = fault
        self.remaining = fault.get("count") if fault else None
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
            if mode == "stall":
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
            else:
                up = asyncio.create_task(self.pipe(reader, up_writer, limit))
            down = asyncio.create_task(self.pipe(up_reader, writer, None, rate))
            done, pending = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if mode == "reset" and up in done:
                self.hard_close(writer)
                self.hard_close(up_writer)
            elif mode == "cut" and up in done:
                writer.close()
                up_writer.close()
            else:
                await asyncio.wait(pending, timeout=None if mode in ("pass", "trickle", "delay") else 0)
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
        buffer = bytearray()
        entry["requests"] = 0

        async def fill():
            data = await reader.read(65536)
            buffer.extend(data)
            return bool(data)

        async def forward(count):  # `count` bytes of the body: what is buffered first, then as they come
            while count > 0:
                if not buffer and not await fill():
                    return False
                take = min(count, len(buffer))
                writer.write(bytes(buffer[:take]))
                del buffer[:take]
                count -= take
                await writer.drain()
            return True

        async def line():  # one CRLF-ended line (a chunk's size, a trailer), forwarded; None at the end
            while b"\r\n" not in buffer:
                if not await fill():
                    return None
            cut = buffer.index(b"\r\n") + 2
            text = bytes(buffer[:cut])
            writer.write(text)
            del buffer[:cut]
            return text

        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    if len(buffer) > 65536 or not await fill():
                        break
                cut = buffer.find(b"\r\n\r\n")
                lines = bytes(buffer[:max(cut, 0)]).split(b"\r\n")
                if cut < 0 or len(lines[0].split(b" ")) != 3 or not lines[0].endswith((b"HTTP/1.1", b"HTTP/1.0")):
                    writer.write(bytes(buffer))  # the end of the stream, or not HTTP: as is
                    buffer.clear()
                    await writer.drain()
                    return await self.pipe(reader, writer)
                length, chunked = 0, False
                for header in lines[1:]:
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                    elif name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                        chunked = True
                await asyncio.sleep(seconds)
                entry["requests"] += 1
                writer.write(bytes(buffer[:cut + 4]))
                del buffer[:cut + 4]
                await writer.drain()
                if not chunked:
                    if not await forward(length):
                        break
                    continue
                while True:  # chunks, then the trailers up to an empty line
                    size_line = await line()
                    if size_line is None:
                        break
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while (trailer := await line()) not in (None, b"\r\n"):
                            pass
                        break
                    if not await forward(size + 2):
                        break
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError, ValueError):
            pass
        return "eof"

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
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1].strip())
        remaining = length
        while remaining > 0:
            chunk = await reader.read(min(65536, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
        status = int(fault.get("status", 503))
        reason = {500: "Internal Server Error", 503: "Service Unavailable", 429: "Too Many Requests",
                  403: "Forbidden", 400: "Bad Request"}.get(status, "Error")
        body = fault.get("body", "").encode()
        headers = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
        if "content_type" in fault:
            headers.append(f"Content-Type: {fault['content_type']}")
        if "retry_after" in fault:
            headers.append(f"Retry-After: {fault['retry_after']}")
        writer.write(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
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
