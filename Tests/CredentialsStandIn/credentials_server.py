#!/usr/bin/env python3
"""A loopback stand-in for the two AWS credential endpoints a machine offers, written from AWS's documentation:

- EC2 instance metadata, IMDSv2 only ("Use IMDSv2", "Retrieve security credentials from instance metadata"):
  PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (1..21600) answers a token; a GET without a valid
  X-aws-ec2-metadata-token is 401; GET /latest/meta-data/iam/security-credentials/ lists the role name;
  GET .../ROLE answers {"Code": "Success", "LastUpdated", "Type": "AWS-HMAC", "AccessKeyId", "SecretAccessKey",
  "Token", "Expiration"}. A token request carrying X-Forwarded-For is refused (403), as IMDS does.
- The container credentials endpoint ("Container credential provider"): GET on the configured path, with the
  Authorization header equal to the configured token (401 otherwise), answers {"AccessKeyId", "SecretAccessKey",
  "Token", "Expiration", "RoleArn"}.

Usage: credentials_server.py PORT. The test sets what it hands out and reads counts on /_control:
POST /_control/credentials {"AccessKeyId", "SecretAccessKey", "Token", "Expiration", "container_token",
"container_path", "failing": bool, "redirect": URL or null}; GET /_control/counts -> {"token": n, "list": n,
"credentials": n, "container": n, "refused": n, "redirected": n, "sts": n}.

Hostile answers, for the tests of what a client must refuse: with "redirect" set, the role listing, a role's
credentials and the container endpoint answer 302 to that URL plus the path (a client must not follow it: the
IMDS token or the container's authorization would go to that host); POST / plays an STS that refuses
AssumeRoleWithWebIdentity with an error whose <Code> and <Message> echo the web identity token.
"""
import urllib.parse
import json
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROLE = "syncgate-instance-role"
state = {"credentials": {}, "container_token": None, "container_path": "/v2/credentials/syncgate", "failing": False, "redirect": None}
counts = {"token": 0, "list": 0, "credentials": 0, "container": 0, "refused": 0, "redirected": 0, "sts": 0}
tokens = set()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))

    def answer(self, status, body, content_type="text/plain", headers=None):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def count(self, name):
        with lock:
            counts[name] += 1

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_PUT(self):
        self.body()
        if self.path != "/latest/api/token":
            return self.answer(404, "Not Found")
        if self.headers.get("X-Forwarded-For"):
            self.count("refused")
            return self.answer(403, "Forbidden")
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if ttl is None or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self.count("refused")
            return self.answer(400, "Bad Request")
        self.count("token")
        token = secrets.token_urlsafe(32)
        with lock:
            tokens.add(token)
        self.answer(200, token, headers={"X-aws-ec2-metadata-token-ttl-seconds": ttl})

    def do_POST(self):
        body = self.body()
        if self.path == "/_control/credentials":
            settings = json.loads(body or b"{}")
            with lock:
                state["credentials"] = {k: settings[k] for k in ("AccessKeyId", "SecretAccessKey", "Token", "Expiration") if k in settings}
                for key in ("container_token", "container_path", "failing", "redirect"):
                    if key in settings:
                        state[key] = settings[key]
            return self.answer(200, "{}", "application/json")
        if self.path == "/":
            self.count("sts")
            form = urllib.parse.parse_qs(body.decode())
            token = (form.get("WebIdentityToken") or [""])[0]
            xml = ("<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken.%s</Code>"
                   "<Message>token %s is not valid</Message></Error></ErrorResponse>" % (token, token))
            return self.answer(403, xml, "text/xml")
        self.answer(404, "Not Found")

    def redirected(self):
        """Answers 302 when a redirect is set (after the request was found valid); False otherwise."""
        with lock:
            target = state["redirect"]
        if not target:
            return False
        self.count("redirected")
        self.answer(302, "", headers={"Location": target + self.path})
        return True

    def do_GET(self):
        if self.path == "/_control/counts":
            with lock:
                return self.answer(200, json.dumps(counts), "application/json")
        if self.path == state["container_path"]:
            expected = state["container_token"]
            if expected is not None and self.headers.get("Authorization") != expected:
                self.count("refused")
                return self.answer(401, json.dumps({"code": "AccessDenied", "message": "Unauthorized"}), "application/json")
            if self.redirected():
                return
            self.count("container")
            if state["failing"]:
                return self.answer(500, "Internal Server Error")
            c = dict(state["credentials"])
            c["RoleArn"] = "arn:aws:iam::123456789012:role/" + ROLE
            return self.answer(200, json.dumps(c), "application/json")
        if self.path.startswith("/latest/meta-data/"):
            with lock:
                valid = self.headers.get("X-aws-ec2-metadata-token") in tokens
            if not valid:
                self.count("refused")
                return self.answer(401, "Unauthorized")
            if self.redirected():
                return
            if self.path == "/latest/meta-data/iam/security-credentials/":
                self.count("list")
                return self.answer(200, ROLE)
            if self.path == "/latest/meta-data/iam/security-credentials/" + ROLE:
                self.count("credentials")
                if state["failing"]:
                    return self.answer(500, "Internal Server Error")
                c = dict(state["credentials"])
                c.update({"Code": "Success", "LastUpdated": "2026-11-24T00:00:00Z", "Type": "AWS-HMAC"})
                return self.answer(200, json.dumps(c), "text/plain")
        self.answer(404, "Not Found")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
