#!/usr/bin/env python3
"""A hostile S3 server for syncgate's tests: loopback only, standard library only (plus `cryptography`, which moto
brings, for --tls), and bounded in time (it exits after --max-seconds whatever happens).

    s3_hostile_server.py --port PORT --mode MODE [--max-seconds 300] [--status 503 --code SlowDown --retry-after 2]
                         [--bucket-region eu-west-1] [--body-mib 256] [--page-names 1000]

Modes (every request is logged to stdout as `METHOD PATH?QUERY`):
  corrupt       an object store that keeps every PUT body (and every part) with its first byte flipped and answers,
                truthfully, the MD5 of what it kept as the ETag; HEAD echoes the x-amz-meta-* headers it was sent,
                so the client's own metadata claims the right content. Listing, DeleteObjects and multipart work.
  endless-list  ListObjectsV2 answers --page-names fresh names (1,000; 0: empty pages) and a fresh continuation
                token, forever.
  repeat-token  ListObjectsV2 answers one name and the same continuation token, forever.
  huge-error    every request gets a 500 InternalError whose body is --body-mib MiB long (default 256).
  huge-answer   every request gets a 200 whose body is --body-mib MiB long.
  stall         reads the request, never answers (until the client hangs up or time runs out).
  status        every request gets --status with the S3 error --code (and Retry-After: --retry-after and
                x-amz-bucket-region: --bucket-region, if given).
  tls           --tls is implied: a TLS server with a self-signed certificate that no client trusts; it answers 200.
  echo-token    every request gets --status with an S3 error whose <Code> is --code, a dot and the request's
                X-Amz-Security-Token (the session token the client signed with), and whose <Message> holds it too
                (the log says `echoed a token of N characters`, never the token).
"""
import argparse
import base64
import datetime
import hashlib
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

ARGS = None
LOCK = threading.Lock()
OBJECTS = {}      # (bucket, key) -> {"data": bytes, "meta": {name: value}}
UPLOADS = {}      # upload id -> {"bucket", "key", "meta", "parts": {number: bytes}}
COUNTER = [0]
STORE_LIMIT = 256 << 20


def corrupt(data):
    if not data:
        return data
    return bytes([data[0] ^ 0xFF]) + data[1:]


def xml_answer(body):
    return ('<?xml version="1.0" encoding="UTF-8"?>' + body).encode()


def error_xml(code, message):
    return xml_answer("<Error><Code>%s</Code><Message>%s</Message><RequestId>HOSTILE</RequestId></Error>" % (code, message))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "HostileS3"

    def log_message(self, *args):
        pass

    def parts(self):
        split = urlsplit(self.path)
        segments = split.path.lstrip("/").split("/", 1)
        bucket = unquote(segments[0]) if segments and segments[0] else ""
        key = unquote(segments[1]) if len(segments) > 1 else None
        return bucket, key, parse_qs(split.query, keep_blank_values=True)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        data = b""
        while len(data) < length:
            chunk = self.rfile.read(min(1 << 20, length - len(data)))
            if not chunk:
                break
            data += chunk
        return data

    def send(self, status, body=b"", headers=None, head_only=False):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head_only and body:
            self.wfile.write(body)

    def handle_any(self):
        print("%s %s" % (self.command, self.path), flush=True)
        mode = ARGS.mode
        if mode == "stall":
            return self.stall()
        if self.command in ("PUT", "POST"):
            data = self.body()
        else:
            data = b""
        if mode == "status":
            headers = {"Content-Type": "application/xml"}
            if ARGS.retry_after is not None:
                headers["Retry-After"] = str(ARGS.retry_after)
            if ARGS.bucket_region:
                headers["x-amz-bucket-region"] = ARGS.bucket_region
            return self.send(ARGS.status, error_xml(ARGS.code, "hostile answer"), headers, head_only=self.command == "HEAD")
        if mode == "echo-token":
            token = self.headers.get("X-Amz-Security-Token") or ""
            print("echoed a token of %d characters" % len(token), flush=True)
            return self.send(ARGS.status, error_xml("%s.%s" % (ARGS.code, token), "the token %s is not valid" % token),
                             {"Content-Type": "application/xml"}, head_only=self.command == "HEAD")
        if mode in ("huge-error", "huge-answer"):
            return self.huge(500 if mode == "huge-error" else 200)
        if mode == "endless-list" or mode == "repeat-token":
            return self.endless(mode)
        if mode == "tls":
            return self.send(200, b"", {})
        return self.store(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

    def stall(self):
        # Read the request (headers, and a body if announced), then say nothing until the client hangs up.
        self.connection.settimeout(1)
        deadline = time.time() + ARGS.max_seconds
        while time.time() < deadline:
            try:
                if not self.connection.recv(1 << 16):
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        self.close_connection = True

    def huge(self, status):
        total = ARGS.body_mib << 20
        head = error_xml("InternalError", "We encountered an internal error. Please try again.") if status == 500 else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(total))
        self.end_headers()
        if self.command == "HEAD":
            return
        sent = 0
        block = b" " * (1 << 20)
        try:
            self.wfile.write(head)
            sent = len(head)
            while sent < total:
                piece = block[: min(len(block), total - sent)]
                self.wfile.write(piece)
                sent += len(piece)
        except OSError:
            pass
        print("huge answer: %d of %d bytes sent" % (sent, total), flush=True)
        self.close_connection = True

    def endless(self, mode):
        bucket, key, query = self.parts()
        if "list-type" not in query:
            return self.send(200, b"", {})
        with LOCK:
            COUNTER[0] += 1
            page = COUNTER[0]
        if mode == "repeat-token":
            names = ["outbox-again-%06d.bin" % page]
            token = "the-same-token"
        else:
            names = ["outbox-endless/page-%07d/object-%04d.bin" % (page, i) for i in range(ARGS.page_names)]
            token = "token-%d-%s" % (page, uuid.uuid4().hex)
        contents = "".join("<Contents><Key>%s</Key><Size>4096</Size><ETag>&quot;%s&quot;</ETag></Contents>"
                           % (quote(n, safe="/"), "0" * 32) for n in names)
        body = xml_answer('<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>%s</Name>'
                          '<Prefix></Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType>'
                          '<IsTruncated>true</IsTruncated>%s<NextContinuationToken>%s</NextContinuationToken>'
                          '</ListBucketResult>' % (bucket, len(names), contents, token))
        self.send(200, body, {"Content-Type": "application/xml"})

    # The corrupting object store.
    def store(self, data):
        bucket, key, query = self.parts()
        meta = {k: v for k, v in self.headers.items() if k.lower().startswith("x-amz-meta-")}
        method = self.command
        if key is None:
            if method == "GET":
                with LOCK:
                    names = sorted(k for (b, k) in OBJECTS if b == bucket)
                contents = "".join("<Contents><Key>%s</Key><Size>%d</Size></Contents>"
                                   % (quote(n, safe="/"), len(OBJECTS[(bucket, n)]["data"])) for n in names)
                return self.send(200, xml_answer('<ListBucketResult><Name>%s</Name><EncodingType>url</EncodingType>'
                                                 '<IsTruncated>false</IsTruncated>%s</ListBucketResult>' % (bucket, contents)),
                                 {"Content-Type": "application/xml"})
            if method == "POST" and "delete" in query:
                with LOCK:
                    for (b, k) in list(OBJECTS):
                        if b == bucket and ("<Key>%s</Key>" % k).encode() in data:
                            del OBJECTS[(b, k)]
                return self.send(200, xml_answer("<DeleteResult></DeleteResult>"), {"Content-Type": "application/xml"})
            return self.send(200)
        if "uploads" in query and method == "POST":
            upload = uuid.uuid4().hex
            with LOCK:
                UPLOADS[upload] = {"bucket": bucket, "key": key, "meta": meta, "parts": {}}
            return self.send(200, xml_answer("<InitiateMultipartUploadResult><UploadId>%s</UploadId>"
                                             "</InitiateMultipartUploadResult>" % upload))
        if "uploadId" in query:
            upload = query["uploadId"][0]
            with LOCK:
                pending = UPLOADS.get(upload)
            if pending is None:
                return self.send(404, error_xml("NoSuchUpload", "no such upload"), head_only=method == "HEAD")
            if method == "PUT":
                stored = corrupt(data)
                with LOCK:
                    pending["parts"][int(query["partNumber"][0])] = stored
                return self.send(200, b"", {"ETag": '"%s"' % hashlib.md5(stored).hexdigest()})
            if method == "POST":
                with LOCK:
                    parts = [pending["parts"][n] for n in sorted(pending["parts"])]
                    whole = b"".join(parts)
                    OBJECTS[(bucket, key)] = {"data": whole, "meta": pending["meta"],
                                              "etag": "%s-%d" % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(), len(parts))}
                    del UPLOADS[upload]
                return self.send(200, xml_answer("<CompleteMultipartUploadResult><ETag>&quot;%s&quot;</ETag>"
                                                 "</CompleteMultipartUploadResult>" % OBJECTS[(bucket, key)]["etag"]))
            if method == "DELETE":
                with LOCK:
                    UPLOADS.pop(upload, None)
                return self.send(204)
        if method == "PUT":
            stored = corrupt(data)
            with LOCK:
                if sum(len(o["data"]) for o in OBJECTS.values()) + len(stored) > STORE_LIMIT:
                    return self.send(507, error_xml("InsufficientStorage", "the test server is full"))
                OBJECTS[(bucket, key)] = {"data": stored, "meta": meta, "etag": hashlib.md5(stored).hexdigest()}
            return self.send(200, b"", {"ETag": '"%s"' % hashlib.md5(stored).hexdigest()})
        with LOCK:
            entry = OBJECTS.get((bucket, key))
        if entry is None:
            return self.send(404, error_xml("NoSuchKey", "no such key"), {"Content-Type": "application/xml"},
                             head_only=method == "HEAD")
        if method == "DELETE":
            with LOCK:
                OBJECTS.pop((bucket, key), None)
            return self.send(204)
        headers = dict(entry["meta"])
        headers["ETag"] = '"%s"' % entry["etag"]
        headers["Content-Length"] = str(len(entry["data"]))
        if method == "HEAD":
            return self.send(200, b"", headers, head_only=True)
        return self.send(200, entry["data"], headers)


def self_signed_context(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path = os.path.join(directory, "cert.pem")
    key_path = os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up (or fails the TLS handshake) is expected here


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", required=True,
                        choices=["corrupt", "endless-list", "repeat-token", "huge-error", "huge-answer", "stall", "status", "tls", "echo-token"])
    parser.add_argument("--max-seconds", type=float, default=300)
    parser.add_argument("--status", type=int, default=503)
    parser.add_argument("--code", default="SlowDown")
    parser.add_argument("--retry-after", type=int)
    parser.add_argument("--bucket-region")
    parser.add_argument("--body-mib", type=int, default=256)
    parser.add_argument("--page-names", type=int, default=1000)
    ARGS = parser.parse_args()
    server = Server(("127.0.0.1", ARGS.port), Handler)
    if ARGS.mode == "tls":
        with tempfile.TemporaryDirectory() as directory:
            context = self_signed_context(directory)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    # Bounded in time, whatever the tests do.
    threading.Timer(ARGS.max_seconds, lambda: os._exit(0)).start()
    print("listening on 127.0.0.1:%d, mode %s" % (ARGS.port, ARGS.mode), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
