#!/usr/bin/env python3
"""A loopback stand-in for the Google Sheets API v4, Google's OAuth2 token endpoint and an Apps Script web app,
for syncgate's tests and examples. Standard library plus `cryptography` (RS256 verification, test key generation).

    python3 Tests/SheetsServer/sheets_server.py --port 8089 --write-key /tmp/sheets-key.json

It generates a throwaway RSA service-account key at start (written to --write-key; the server keeps only the
public half to verify JWT signatures), and with --write-adc a throwaway gcloud application-default file
(`"type": "authorized_user"`: client_id, client_secret, refresh_token, quota_project_id, and token_uri pointing
here), and with --write-impersonated a gcloud application-default file of `"type": "impersonated_service_account"`
(those authorized_user credentials as `source_credentials`, acting as --impersonable through IAM here), and serves,
on 127.0.0.1 only:

  POST /token                                              OAuth2 JWT-bearer grant (RFC 7523), RS256 verified; and
                                                           the refresh-token grant (RFC 6749 section 6) of the
                                                           generated authorized_user credentials (--write-adc)
  POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken
                                                           IAM Service Account Credentials API: a token of the
                                                           service account, for a bearer token with the
                                                           cloud-platform (or iam) scope whose holder may act as it
  GET  /computeMetadata/v1/instance/service-accounts/default/token
                                                           a GCE metadata server stand-in: `Metadata-Flavor: Google`
                                                           required on the request and sent on every answer
  POST /v4/spreadsheets/{id}/values/{range}:append         spreadsheets.values.append
  GET  /v4/spreadsheets/{id}/values/{range}                spreadsheets.values.get
  GET  /v4/spreadsheets/{id}                               spreadsheets.get (with the `fields` mask)
  POST /macros/s/{deployment}/exec                         Apps Script doPost -> 302 to /macros/echo
  GET  /macros/echo?user_content_key=...                   the script's output (JSON)
  /_control/...                                            test control: faults, sheet contents, request logs
  anything else                                            404, recorded in /_control/received (every request
                                                           is: method, path, headers, body)

Requests and answers follow the shapes of Google's discovery document (ValueRange, AppendValuesResponse,
UpdateValuesResponse) and Google's error format {"error": {"code", "message", "status"}}.
"""
import argparse
import base64
import html
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.exceptions import InvalidSignature

SCOPE = "https://www.googleapis.com/auth/spreadsheets"

# What the server accepts, per method: kept beside the discovery document's declarations (a test compares them).
PARAMS = {
    "sheets.spreadsheets.values.append": {
        "path": ["spreadsheetId", "range"],
        "query": {
            "valueInputOption": ["RAW", "USER_ENTERED"],
            "insertDataOption": ["OVERWRITE", "INSERT_ROWS"],
            "includeValuesInResponse": ["true", "false"],
            "responseValueRenderOption": ["FORMATTED_VALUE", "UNFORMATTED_VALUE", "FORMULA"],
            "responseDateTimeRenderOption": ["SERIAL_NUMBER", "FORMATTED_STRING"],
        },
        # The discovery document marks no query parameter required, but says "The caller must specify the
        # spreadsheet ID, range, and a valueInputOption"; the real API answers 400 without it.
        "required_query": ["valueInputOption"],
    },
    "sheets.spreadsheets.values.get": {
        "path": ["spreadsheetId", "range"],
        "query": {
            "majorDimension": ["ROWS", "COLUMNS"],
            "valueRenderOption": ["FORMATTED_VALUE", "UNFORMATTED_VALUE", "FORMULA"],
            "dateTimeRenderOption": ["SERIAL_NUMBER", "FORMATTED_STRING"],
        },
        "required_query": [],
    },
    "sheets.spreadsheets.get": {
        "path": ["spreadsheetId"],
        # None: any text (the discovery document gives no enum).
        "query": {
            "includeGridData": ["true", "false"],
            "excludeTablesInBandedRanges": ["true", "false"],
            "ranges": None,
            "commentsViewMode": ["COMMENTS_VIEW_MODE_UNSPECIFIED", "COMMENTS_VIEW_MODE_DEFAULT_FOR_CURRENT_ACCESS",
                                 "COMMENTS_VIEW_MODE_OMITTED", "COMMENTS_VIEW_MODE_INCLUDED"],
        },
        "required_query": [],
    },
}
# The fields of a Spreadsheet resource a `fields` mask may name, as the discovery document's schemas declare them
# (a test checks every one against the document). None: a field whose own fields the server does not model (a
# mask may name them; they are never present).
SHEET_PROPERTIES = {"sheetId": None, "title": None, "index": None, "sheetType": None, "hidden": None,
                    "rightToLeft": None, "tabColor": None, "tabColorStyle": None, "dataSourceSheetProperties": None,
                    "gridProperties": {"rowCount": None, "columnCount": None, "frozenRowCount": None,
                                       "frozenColumnCount": None, "hideGridlines": None, "rowGroupControlAfter": None,
                                       "columnGroupControlAfter": None}}
SPREADSHEET_FIELDS = {
    "spreadsheetId": None,
    "spreadsheetUrl": None,
    "properties": {"title": None, "locale": None, "autoRecalc": None, "timeZone": None, "defaultFormat": None,
                   "iterativeCalculationSettings": None, "spreadsheetTheme": None,
                   "importFunctionsExternalUrlAccessAllowed": None},
    "sheets": {"properties": SHEET_PROPERTIES, "data": None, "merges": None, "conditionalFormats": None,
               "filterViews": None, "protectedRanges": None, "basicFilter": None, "charts": None,
               "bandedRanges": None, "developerMetadata": None, "rowGroups": None, "columnGroups": None,
               "slicers": None, "tables": None},
    "namedRanges": None,
    "developerMetadata": None,
    "dataSources": None,
    "dataSourceSchedules": None,
}


class FieldMaskError(Exception):
    pass


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def parse_field_mask(text):
    """A `fields` value (the JSON encoding of a FieldMask, with parentheses for sub-selections:
    `spreadsheetId,sheets.properties(sheetId,title)`) -> a tree {name: subtree or None (the whole field)}."""
    pos = 0

    def merge(tree, path, sub):
        node = tree
        for name in path[:-1]:
            child = node.get(name, {})
            if child is None:
                return
            node[name] = child
            node = child
        last = path[-1]
        if sub is None or node.get(last, {}) is None:
            node[last] = None
        else:
            existing = node.setdefault(last, {})
            for key, value in sub.items():
                merge(existing, [key], value)

    def mask():
        nonlocal pos
        tree = {}
        while True:
            path = []
            while True:
                start = pos
                while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
                    pos += 1
                if pos == start:
                    raise FieldMaskError(text)
                path.append(camel(text[start:pos]))
                if pos < len(text) and text[pos] == ".":
                    pos += 1
                    continue
                break
            sub = None
            if pos < len(text) and text[pos] == "(":
                pos += 1
                sub = mask()
                if pos >= len(text) or text[pos] != ")":
                    raise FieldMaskError(text)
                pos += 1
            merge(tree, path, sub)
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            return tree

    tree = mask()
    if pos != len(text):
        raise FieldMaskError(text)
    return tree


def check_mask(tree, known, prefix=""):
    """The first path of `tree` that is not a field of `known`, or None."""
    for name, sub in tree.items():
        path = prefix + name
        if known is not None and name not in known:
            return path
        if sub is not None and known is not None and known[name] is not None:
            bad = check_mask(sub, known[name], path + ".")
            if bad:
                return bad
    return None


def apply_mask(value, tree):
    if tree is None:
        return value
    if isinstance(value, list):
        return [apply_mask(v, tree) for v in value]
    if isinstance(value, dict):
        out = {}
        for name, sub in tree.items():
            if name in value:
                picked = apply_mask(value[name], sub)
                if picked not in ({}, []):
                    out[name] = picked
        return out
    return value


# Standard query parameters every Google API method accepts (the discovery document's top-level "parameters").
GLOBAL_QUERY = {"$.xgafv": ["1", "2"], "alt": ["json"], "fields": None, "key": None, "prettyPrint": ["true", "false"],
                "quotaUser": None, "access_token": None, "oauth_token": None, "callback": None, "uploadType": None,
                "upload_protocol": None}

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def b64url_decode(text):
    text += "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(text.encode("ascii"))


def column_index(letters):
    value = 0
    for ch in letters.upper():
        value = value * 26 + (ord(ch) - 64)
    return value - 1


def column_letters(index):
    n = index + 1
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


class RangeError(Exception):
    pass


def parse_range(text, default_sheet):
    """A1 range -> (sheet, first_col, first_row, last_col, last_row); None for unbounded ends (0-based)."""
    sheet = None
    cells = text
    if text.startswith("'"):
        i = 1
        name = ""
        while i < len(text):
            if text[i] == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    name += "'"
                    i += 2
                    continue
                break
            name += text[i]
            i += 1
        else:
            raise RangeError(text)
        sheet = name
        rest = text[i + 1:]
        if rest == "":
            cells = ""
        elif rest.startswith("!"):
            cells = rest[1:]
        else:
            raise RangeError(text)
    elif "!" in text:
        sheet, cells = text.split("!", 1)
    elif ":" in text:
        cells = text
    else:
        sheet, cells = text, ""
    if sheet is None:
        sheet = default_sheet
    if cells == "":
        return sheet, 0, 0, None, None
    m = re.fullmatch(r"([A-Za-z]{0,3})(\d*)(?::([A-Za-z]{0,3})(\d*))?", cells)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        raise RangeError(text)
    c1 = column_index(m.group(1)) if m.group(1) else 0
    r1 = int(m.group(2)) - 1 if m.group(2) else 0
    if m.group(3) is None and m.group(4) is None:
        return sheet, c1, r1, c1, r1
    c2 = column_index(m.group(3)) if m.group(3) else None
    r2 = int(m.group(4)) - 1 if m.group(4) else None
    return sheet, c1, r1, c2, r2


def quote_sheet(name):
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return name
    return "'" + name.replace("'", "''") + "'"


def entered(cell):
    """A cell as Sheets stores what a user typed (USER_ENTERED, and an Apps Script's setValues): a leading
    apostrophe forces text and is not kept; a text starting with '=' becomes a formula, stored here as
    {"formula": text} (the server does not evaluate formulas)."""
    if isinstance(cell, str):
        if cell.startswith("'"):
            return cell[1:]
        if cell.startswith("="):
            return {"formula": cell}
    return cell


def formatted(value):
    """FORMATTED_VALUE rendering of a stored cell (a formula shows as Sheets shows one it cannot evaluate)."""
    if isinstance(value, dict) and "formula" in value:
        return "#NAME?"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class State:
    def __init__(self, args, public_key, key_id, client_email):
        self.lock = threading.Lock()
        self.args = args
        self.public_key = public_key
        self.key_id = key_id
        self.client_email = client_email
        self.token_uri = f"http://127.0.0.1:{args.port}/token"
        self.spreadsheets = {sid: {} for sid in args.spreadsheet}  # id -> sheet -> list of rows
        self.forbidden = set(args.forbidden)
        self.tokens = {}  # token -> expiry (epoch seconds)
        self.faults = []  # list of dicts
        self.log = []
        self.write_times = []
        self.max_writes_in_window = 0
        # tokens: access tokens issued by any flow; token_requests: every request for one (/token and the metadata
        # server's token path), refused ones included.
        self.counters = {"appends": 0, "gets": 0, "tokens": 0, "rejected_tokens": 0, "unauthorized": 0,
                         "quota_429": 0, "injected": 0, "dropped": 0, "apps_script_posts": 0,
                         "metadata_reads": 0, "token_requests": 0, "jwt_grants": 0, "refresh_grants": 0,
                         "metadata_tokens": 0, "metadata_refused": 0, "requests_begun": 0, "impersonations": 0,
                         "impersonations_refused": 0}
        # Per append applied, in order, the number its request got when its head was read (requests_begun then).
        self.append_begun = []
        # The authorized_user credentials (--write-adc): the OAuth client and the refresh tokens still valid.
        self.oauth_client_id = "32555940559.apps.googleusercontent.com"
        self.oauth_client_secret = "test-client-secret-" + secrets.token_urlsafe(12)
        self.refresh_tokens = {"1//test-refresh-" + secrets.token_urlsafe(32)}
        # What a user's login granted, and the instance's service account scopes (metadata server).
        self.granted_scopes = {SCOPE, "https://www.googleapis.com/auth/cloud-platform"}
        # The scopes each access token was issued with, and the service accounts the user may act as (IAM's
        # roles/iam.serviceAccountTokenCreator); tokens issued by impersonation, by account.
        self.token_scopes = {}
        self.impersonable = set(args.impersonable)
        self.impersonated_tokens = {}
        self.echo = {}  # user_content_key -> (status, content_type, body)
        self.received = []  # every request but /_control: method, path, headers, body
        self.token_ttl = args.token_ttl

    def sheet(self, spreadsheet_id, name):
        return self.spreadsheets[spreadsheet_id].setdefault(name, [])

    def take_fault(self, kind, method=None, path=""):
        for fault in self.faults:
            if fault["kind"] != kind or fault.get("count", 1) <= 0:
                continue
            if fault.get("method") and method and fault["method"] != method:
                continue
            if fault.get("match") and fault["match"] not in path:
                continue
            if fault.get("skip", 0) > 0:
                fault["skip"] -= 1
                return None
            fault["count"] = fault.get("count", 1) - 1
            self.counters["injected"] += 1
            return fault
        return None


STATE = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sheets-loopback/1"

    def log_message(self, fmt, *args):
        if STATE.args.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    # --- plumbing

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, body, content_type="application/json; charset=UTF-8", headers=None, record=None):
        data = body if isinstance(body, bytes) else json.dumps(body, indent=2).encode("utf-8")
        # Logged before the answer goes out: a client that asks for the log as soon as it has the answer finds it.
        if record is not None:
            record["status"] = status
            record["response"] = body if not isinstance(body, bytes) else None
            with STATE.lock:
                STATE.log.append(record)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def google_error(self, status, message, record=None, headers=None):
        self.send(status, {"error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}},
                  headers=headers, record=record)

    def drop(self):
        """Close the connection without answering."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- routing

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PUT(self):
        self.route("PUT")

    def do_HEAD(self):
        with STATE.lock:
            STATE.received.append({"method": "HEAD", "path": self.path, "headers": dict(self.headers.items()), "body": ""})
        self.send_response(200 if urlsplit(self.path).path == "/" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def route(self, method):
        split = urlsplit(self.path)
        path = split.path
        query = parse_qs(split.query, keep_blank_values=True)
        # Numbered once its head is read, before its body: a test that reads the count while a client is frozen
        # tells the requests that client began before it woke from those it began after.
        with STATE.lock:
            STATE.counters["requests_begun"] += 1
            self.begun = STATE.counters["requests_begun"]
        body = self.read_body() if method != "GET" or self.headers.get("Content-Length") else b""
        try:
            if path.startswith("/_control/"):
                return self.control(method, path, query, body)
            with STATE.lock:
                STATE.received.append({"method": method, "path": self.path, "headers": dict(self.headers.items()),
                                       "body": body.decode("utf-8", "replace")})
            if path == "/token" and method == "POST":
                return self.token(body)
            m = re.fullmatch(r"/v1/projects/-/serviceAccounts/([^/:]+):generateAccessToken", path)
            if m and method == "POST":
                return self.generate_access_token(unquote(m.group(1)), body)
            if path.startswith("/computeMetadata/"):
                return self.metadata(method, path, query)
            if path.startswith("/macros/"):
                return self.apps_script(method, path, query, body)
            m = re.fullmatch(r"/v4/spreadsheets/([^/]+)/values/([^/]+?)(:append)?", path)
            if m:
                return self.values(method, unquote(m.group(1)), unquote(m.group(2)), bool(m.group(3)), query, body)
            m = re.fullmatch(r"/v4/spreadsheets/([^/:]+)", path)
            if m:
                return self.spreadsheet(method, unquote(m.group(1)), query)
            self.google_error(404, f"Method not found: {method} {path}")
        except (BrokenPipeError, ConnectionResetError):
            pass

    # --- OAuth2 token endpoint

    def token(self, body):
        form = parse_qs(body.decode("utf-8", "replace"))
        grant = form.get("grant_type", [""])[0]
        assertion = form.get("assertion", [""])[0]

        def refuse(error, description):
            with STATE.lock:
                STATE.counters["rejected_tokens"] += 1
            self.send(400, {"error": error, "error_description": description})

        with STATE.lock:
            STATE.counters["token_requests"] += 1
            fault = STATE.take_fault("token")
        if fault:
            status = fault.get("status", 503)
            headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else None
            return self.send(status, {"error": fault.get("error", "internal_failure"),
                                      "error_description": fault.get("message", "Backend error")}, headers=headers)
        if grant == "refresh_token":
            return self.refresh_grant(form, refuse)
        if grant != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return refuse("unsupported_grant_type", "Invalid grant_type: " + grant)
        parts = assertion.split(".")
        if len(parts) != 3:
            return refuse("invalid_request", "Invalid JWT: not three segments")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except Exception:
            return refuse("invalid_request", "Invalid JWT: bad encoding")
        if header.get("alg") != "RS256":
            return refuse("invalid_grant", "Invalid JWT: alg must be RS256")
        if header.get("kid") not in (None, STATE.key_id):
            return refuse("invalid_grant", "Invalid JWT Signature.")
        try:
            STATE.public_key.verify(signature, (parts[0] + "." + parts[1]).encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return refuse("invalid_grant", "Invalid JWT Signature.")
        now = time.time()
        if claims.get("iss") != STATE.client_email:
            return refuse("invalid_grant", "Invalid JWT: iss is not a known service account")
        if claims.get("aud") != STATE.token_uri:
            return refuse("invalid_grant", "Invalid JWT: Failed audience check.")
        requested = set(str(claims.get("scope", "")).split(" ")) - {""}
        if not requested or not requested <= STATE.granted_scopes | {"https://www.googleapis.com/auth/iam"}:
            return refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            return refuse("invalid_grant", "Invalid JWT: iat and exp must be integers")
        if iat > now + 300 or exp < now - 300 or exp - iat > 3600:
            return refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        token = self.issue("jwt_grants", requested)
        self.send(200, {"access_token": token, "expires_in": STATE.token_ttl, "token_type": "Bearer"})

    def issue(self, counter, scopes=None):
        """A new access token, valid for --token-ttl seconds, with `scopes` (the Sheets scope when not said)."""
        token = "ya29.test-" + secrets.token_urlsafe(24)
        with STATE.lock:
            STATE.tokens[token] = time.time() + STATE.token_ttl
            STATE.token_scopes[token] = set(scopes or {SCOPE})
            STATE.counters["tokens"] += 1
            STATE.counters[counter] += 1
        return token

    def refresh_grant(self, form, refuse):
        """The refresh-token grant as Google's token endpoint answers it: a client it does not know is 401
        invalid_client; a refresh token it does not know (or revoked) is 400 invalid_grant "Token has been expired or
        revoked."; a scope the login did not grant is 400 invalid_scope."""
        def one(name):
            values = form.get(name, [])
            return values[0] if len(values) == 1 else None

        client_id, client_secret, refresh_token = one("client_id"), one("client_secret"), one("refresh_token")
        if refresh_token is None:
            return refuse("invalid_request", "Missing required parameter: refresh_token")
        if client_id != STATE.oauth_client_id or client_secret != STATE.oauth_client_secret:
            with STATE.lock:
                STATE.counters["rejected_tokens"] += 1
            return self.send(401, {"error": "invalid_client", "error_description": "Unauthorized"})
        with STATE.lock:
            known = refresh_token in STATE.refresh_tokens
        if not known:
            return refuse("invalid_grant", "Token has been expired or revoked.")
        requested = set(one("scope").split(" ")) if one("scope") else set()
        if not requested <= STATE.granted_scopes:
            return refuse("invalid_scope", "Bad Request")
        token = self.issue("refresh_grants", requested or STATE.granted_scopes)
        scope = " ".join(sorted(requested or STATE.granted_scopes))
        self.send(200, {"access_token": token, "expires_in": STATE.token_ttl, "scope": scope, "token_type": "Bearer"})

    # --- IAM Service Account Credentials API

    def generate_access_token(self, account, body):
        """projects.serviceAccounts.generateAccessToken as IAM answers it: the caller's bearer token must be valid
        (else 401 UNAUTHENTICATED) and carry the cloud-platform or iam scope (else 403 PERMISSION_DENIED, insufficient
        scopes); the caller must be allowed to act as the account (else 403 PERMISSION_DENIED, as for an account that
        does not exist); the body needs `scope` (else 400 INVALID_ARGUMENT). The answer: {accessToken, expireTime}."""
        def refuse(status, message):
            with STATE.lock:
                STATE.counters["impersonations_refused"] += 1
            self.google_error(status, message)

        with STATE.lock:
            fault = STATE.take_fault("impersonate")
        if fault:
            status = fault.get("status", 503)
            headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else None
            return self.google_error(status, fault.get("message", "The service is currently unavailable."), headers=headers)
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        with STATE.lock:
            expiry = STATE.tokens.get(token)
            scopes = STATE.token_scopes.get(token, set())
        if expiry is None or expiry <= time.time():
            return refuse(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        if not scopes & {"https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/iam"}:
            return refuse(403, "Request had insufficient authentication scopes.")
        if account not in STATE.impersonable:
            return refuse(403, f"Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).")
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return refuse(400, "Invalid JSON payload received.")
        requested = request.get("scope") if isinstance(request, dict) else None
        if not isinstance(requested, list) or not requested:
            return refuse(400, "Request contains an invalid argument.")
        issued = self.issue("impersonations", set(requested))
        with STATE.lock:
            STATE.impersonated_tokens.setdefault(account, []).append(issued)
        expires = time.gmtime(time.time() + STATE.token_ttl)
        self.send(200, {"accessToken": issued, "expireTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", expires)})

    # --- GCE metadata server

    def metadata(self, method, path, query):
        """What Compute Engine's metadata server answers (cloud.google.com/compute/docs/metadata): a request without
        `Metadata-Flavor: Google`, or with `X-Forwarded-For`, is refused with 403; every answer carries
        `Metadata-Flavor: Google`; the default service account's token is {"access_token", "expires_in",
        "token_type"}."""
        flavor = {"Metadata-Flavor": "Google"}
        token_path = "/computeMetadata/v1/instance/service-accounts/default/token"
        if path == token_path:
            with STATE.lock:
                STATE.counters["token_requests"] += 1
        if self.headers.get("Metadata-Flavor") != "Google" or self.headers.get("X-Forwarded-For") is not None:
            with STATE.lock:
                STATE.counters["metadata_refused"] += 1
            return self.send(403, b"Missing required header \"Metadata-Flavor\": \"Google\"\n",
                             content_type="text/html; charset=UTF-8", headers=flavor)
        if method != "GET":
            return self.send(405, b"Method not allowed\n", content_type="text/html; charset=UTF-8", headers=flavor)
        if path == token_path:
            requested = {s for part in query.get("scopes", []) for s in part.split(",") if s}
            if requested and not requested <= STATE.granted_scopes:
                return self.send(400, b"Scopes not granted to this instance\n", content_type="text/html; charset=UTF-8",
                                 headers=flavor)
            token = self.issue("metadata_tokens")
            return self.send(200, {"access_token": token, "expires_in": STATE.token_ttl, "token_type": "Bearer"},
                             headers=flavor)
        if path == "/computeMetadata/v1/instance/service-accounts/default/email":
            return self.send(200, STATE.client_email.encode("utf-8"), content_type="application/text", headers=flavor)
        self.send(404, b"Not Found\n", content_type="text/html; charset=UTF-8", headers=flavor)

    def authorised(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return False
        token = auth[len("Bearer "):]
        with STATE.lock:
            expiry = STATE.tokens.get(token)
        return expiry is not None and expiry > time.time()

    def sheets_scoped(self):
        """Whether the (valid) bearer token carries the Sheets scope: a token for another API (a source token for
        IAM, cloud-platform only) is answered 403 insufficient scopes, as Google does."""
        token = self.headers.get("Authorization", "")[len("Bearer "):]
        with STATE.lock:
            return SCOPE in STATE.token_scopes.get(token, {SCOPE})

    # --- Sheets API

    def values(self, method, spreadsheet_id, range_text, is_append, query, body):
        method_id = "sheets.spreadsheets.values.append" if is_append else "sheets.spreadsheets.values.get"
        record = {"method": method, "methodId": method_id, "path": self.path, "spreadsheetId": spreadsheet_id,
                  "range": range_text, "query": {k: v[-1] for k, v in query.items()}, "request": None}
        if (is_append and method != "POST") or (not is_append and method != "GET"):
            return self.google_error(404, f"Method not found: {method}", record=record)
        if not self.authorised():
            with STATE.lock:
                STATE.counters["unauthorized"] += 1
            return self.google_error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                record=record)
        if not self.sheets_scoped():
            return self.google_error(403, "Request had insufficient authentication scopes.", record=record)
        if self.refused(method_id, method, query, body, record):
            return
        if spreadsheet_id in STATE.forbidden:
            return self.google_error(403, "The caller does not have permission", record=record)
        if spreadsheet_id not in STATE.spreadsheets:
            return self.google_error(404, "Requested entity was not found.", record=record)
        try:
            sheet_name, c1, r1, c2, r2 = parse_range(range_text, "Sheet1")
        except RangeError:
            return self.google_error(400, f"Unable to parse range: {range_text}", record=record)
        if is_append:
            return self.append(spreadsheet_id, range_text, sheet_name, c1, query, body, record)
        return self.get(spreadsheet_id, range_text, sheet_name, c1, r1, c2, r2, query, record)

    def refused(self, method_id, method, query, body, record):
        """Answers a request whose query is invalid, or that a queued `status` fault hits; False when it may go on."""
        spec = PARAMS[method_id]
        for name, values in query.items():
            if name in spec["query"]:
                allowed = spec["query"][name]
            elif name in GLOBAL_QUERY:
                allowed = GLOBAL_QUERY[name]
            else:
                self.google_error(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot bind query parameter. Field \'{name}\' could not be found in request message.', record=record)
                return True
            if allowed is not None and values[-1] not in allowed:
                self.google_error(400, f'Invalid value at \'{name}\', "{values[-1]}"', record=record)
                return True
        for name in spec["required_query"]:
            if name not in query:
                self.google_error(400, f"'{name}' is required but not specified", record=record)
                return True
        with STATE.lock:
            fault = STATE.take_fault("status", method, self.path)
        if fault:
            self.fault_answer(fault, body, record)
            return True
        return False

    def fault_answer(self, fault, body, record=None):
        """A queued fault's answer: `status` (503), with `retry_after`, `location`, and as body Google's error
        format with `message`, or `huge` bytes of an HTML page (streamed), or the request's body echoed
        (`echo`: raw, json (inside Google's error format), base64, base64url, percent, html) after `pad`
        characters."""
        status = fault.get("status", 503)
        headers = {}
        if "retry_after" in fault:
            headers["Retry-After"] = str(fault["retry_after"])
        if "location" in fault:
            headers["Location"] = fault["location"]
        if "huge" in fault:
            size = int(fault["huge"])
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(size))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if record is not None:
                record["status"] = status
                with STATE.lock:
                    STATE.log.append(record)
            chunk = (b"<html><body>" + b"overloaded " * 6000)[:65536]
            sent = 0
            while sent < size:
                piece = chunk[:min(len(chunk), size - sent)]
                self.wfile.write(piece)
                sent += len(piece)
            return
        if "echo" in fault:
            text = body.decode("utf-8", "replace")
            kind = fault["echo"]
            pad = "x" * int(fault.get("pad", 0))
            if kind == "json":
                return self.send(status, {"error": {"code": status, "message": pad + "bad request: " + text,
                                                    "status": STATUS_NAMES.get(status, "UNKNOWN")}},
                                 headers=headers, record=record)
            encoded = {
                "raw": lambda: text,
                "base64": lambda: base64.b64encode(body).decode("ascii"),
                "base64url": lambda: base64.urlsafe_b64encode(body).decode("ascii"),
                "percent": lambda: quote(text, safe=""),
                "html": lambda: html.escape(text),
            }[kind]()
            return self.send(status, (pad + encoded).encode("utf-8"), content_type="text/plain; charset=utf-8",
                             headers=headers, record=record)
        if status in (301, 302, 303, 307, 308):
            return self.send(status, b"<HTML><HEAD><TITLE>Moved</TITLE></HEAD><BODY>The document has moved.</BODY></HTML>",
                             content_type="text/html; charset=UTF-8", headers=headers, record=record)
        return self.google_error(status, fault.get("message", "The service is currently unavailable."), record=record,
                                 headers=headers or None)

    def spreadsheet(self, method, spreadsheet_id, query):
        """spreadsheets.get: the Spreadsheet resource without grid data, cut down to the `fields` mask."""
        method_id = "sheets.spreadsheets.get"
        record = {"method": method, "methodId": method_id, "path": self.path, "spreadsheetId": spreadsheet_id,
                  "query": {k: v[-1] for k, v in query.items()}, "request": None}
        if method != "GET":
            return self.google_error(404, f"Method not found: {method}", record=record)
        if not self.authorised():
            with STATE.lock:
                STATE.counters["unauthorized"] += 1
            return self.google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", record=record)
        if not self.sheets_scoped():
            return self.google_error(403, "Request had insufficient authentication scopes.", record=record)
        if self.refused(method_id, method, query, b"", record):
            return
        mask = None
        if "fields" in query:
            try:
                mask = parse_field_mask(query["fields"][-1])
            except FieldMaskError:
                return self.google_error(400, f"Invalid field selection {query['fields'][-1]}", record=record)
            bad = check_mask(mask, SPREADSHEET_FIELDS)
            if bad:
                return self.google_error(400, f"Error expanding 'fields' parameter. Cannot find matching fields for path '{bad}'.", record=record)
        if spreadsheet_id in STATE.forbidden:
            return self.google_error(403, "The caller does not have permission", record=record)
        if spreadsheet_id not in STATE.spreadsheets:
            return self.google_error(404, "Requested entity was not found.", record=record)
        with STATE.lock:
            STATE.counters["metadata_reads"] += 1
            tabs = dict(STATE.spreadsheets[spreadsheet_id])
        names = ["Sheet1"] + sorted(name for name in tabs if name != "Sheet1")
        sheets = []
        for index, name in enumerate(names):
            rows = tabs.get(name, [])
            sheets.append({"properties": {
                "sheetId": 0 if name == "Sheet1" else (int.from_bytes(name.encode("utf-8")[:4].ljust(4, b"\0"), "big") % 2000000000) + 1,
                "title": name, "index": index, "sheetType": "GRID",
                "gridProperties": {"rowCount": max(1000, len(rows)), "columnCount": max([26] + [len(r) for r in rows])}}})
        resource = {
            "spreadsheetId": spreadsheet_id,
            "properties": {"title": f"syncgate test {spreadsheet_id}", "locale": "en_US", "autoRecalc": "ON_CHANGE",
                           "timeZone": "Etc/GMT"},
            "sheets": sheets,
            "spreadsheetUrl": f"https://docs.google.com/spreadsheets/d/{spreadsheet_id}/edit",
        }
        self.send(200, apply_mask(resource, mask), record=record)

    def append(self, spreadsheet_id, range_text, sheet_name, c1, query, body, record):
        try:
            payload = json.loads(body.decode("utf-8")) if body else {}
        except ValueError as e:
            return self.google_error(400, f"Invalid JSON payload received. {e}", record=record)
        record["request"] = payload
        if not isinstance(payload, dict):
            return self.google_error(400, "Invalid JSON payload received. Expected an object.", record=record)
        for name in payload:
            if name not in ("range", "majorDimension", "values"):
                return self.google_error(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.', record=record)
        if "range" in payload and payload["range"] != range_text:
            return self.google_error(400, f"Requested writing within range [{range_text}], but tried writing to [{payload['range']}]", record=record)
        if payload.get("majorDimension", "ROWS") != "ROWS":
            return self.google_error(400, "syncgate's test server supports majorDimension ROWS only", record=record)
        rows = payload.get("values", [])
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            return self.google_error(400, "Invalid JSON payload received. 'values' must be an array of arrays.", record=record)
        for i, row in enumerate(rows):
            for j, cell in enumerate(row):
                if cell is not None and not isinstance(cell, (str, int, float, bool)):
                    return self.google_error(400, f"Invalid values[{i}][{j}]: {json.dumps(cell)}", record=record)
        with STATE.lock:
            now = time.monotonic()
            window = STATE.args.quota_window
            STATE.write_times = [t for t in STATE.write_times if t > now - window]
            if STATE.args.write_quota and len(STATE.write_times) >= STATE.args.write_quota:
                STATE.counters["quota_429"] += 1
                quota_exceeded = True
            else:
                quota_exceeded = False
                STATE.write_times.append(now)
                STATE.max_writes_in_window = max(STATE.max_writes_in_window, len(STATE.write_times))
        if quota_exceeded:
            return self.google_error(
                429, "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:000000000000'.",
                record=record, headers={"Retry-After": str(STATE.args.retry_after)} if STATE.args.retry_after else None)
        user_entered = query.get("valueInputOption", [""])[-1] == "USER_ENTERED"
        with STATE.lock:
            sheet = STATE.sheet(spreadsheet_id, sheet_name)
            table_end = len(sheet)
            while table_end > 0 and not any(v not in (None, "") for v in sheet[table_end - 1]):
                table_end -= 1
            start_row = table_end
            width = max((len(r) for r in rows), default=0)
            for offset, row in enumerate(rows):
                target = start_row + offset
                while len(sheet) <= target:
                    sheet.append([])
                line = sheet[target]
                while len(line) < c1 + len(row):
                    line.append("")
                for j, cell in enumerate(row):
                    if cell is not None:
                        # As Sheets does with USER_ENTERED: a leading apostrophe forces text and is not kept,
                        # '=' starts a formula.
                        line[c1 + j] = entered(cell) if user_entered else cell
            STATE.counters["appends"] += 1
            STATE.append_begun.append(self.begun)
            drop = STATE.take_fault("drop_after_append", "POST", self.path)
        q = quote_sheet(sheet_name)
        updates = {"spreadsheetId": spreadsheet_id}
        if rows:
            updates.update({
                "updatedRange": f"{q}!{column_letters(c1)}{start_row + 1}:{column_letters(c1 + max(width, 1) - 1)}{start_row + len(rows)}",
                "updatedRows": len(rows),
                "updatedColumns": width,
                "updatedCells": sum(len(r) for r in rows),
            })
        answer = {"spreadsheetId": spreadsheet_id, "updates": updates}
        if table_end > 0:
            answer["tableRange"] = f"{q}!A1:{column_letters(max(len(r) for r in sheet[:table_end]) - 1)}{table_end}"
        if query.get("includeValuesInResponse", ["false"])[-1] == "true":
            updates["updatedData"] = {"range": updates.get("updatedRange", range_text), "majorDimension": "ROWS", "values": rows}
        with STATE.lock:
            delay = STATE.take_fault("delay_after_append", "POST", self.path)
        if delay:
            time.sleep(delay.get("seconds", 2))
        if drop:
            with STATE.lock:
                STATE.counters["dropped"] += 1
                record["status"] = None
                record["response"] = None
                record["dropped"] = True
                STATE.log.append(record)
            return self.drop()
        self.send(200, answer, record=record)

    def get(self, spreadsheet_id, range_text, sheet_name, c1, r1, c2, r2, query, record):
        with STATE.lock:
            STATE.counters["gets"] += 1
            sheet = [list(r) for r in STATE.spreadsheets[spreadsheet_id].get(sheet_name, [])]
        render = query.get("valueRenderOption", ["FORMATTED_VALUE"])[-1]
        major = query.get("majorDimension", ["ROWS"])[-1]
        last_row = len(sheet) - 1 if r2 is None else min(r2, len(sheet) - 1)
        width = max((len(r) for r in sheet), default=0)
        last_col = width - 1 if c2 is None else c2
        grid = []
        for r in range(r1, last_row + 1):
            line = sheet[r]
            cells = [line[c] if c < len(line) else "" for c in range(c1, last_col + 1)]
            cells = [formatted(v) if render == "FORMATTED_VALUE" else v for v in cells]
            while cells and cells[-1] in ("", None):
                cells.pop()
            grid.append(cells)
        while grid and not grid[-1]:
            grid.pop()
        if major == "COLUMNS":
            cols = max((len(r) for r in grid), default=0)
            grid = [[row[c] if c < len(row) else "" for row in grid] for c in range(cols)]
            for col in grid:
                while col and col[-1] in ("", None):
                    col.pop()
        q = quote_sheet(sheet_name)
        end_row = (r2 + 1) if r2 is not None else max(1000, len(sheet))
        end_col = column_letters(c2 if c2 is not None else max(c1, 25))
        answer = {"range": f"{q}!{column_letters(c1)}{r1 + 1}:{end_col}{end_row}", "majorDimension": major}
        if grid:
            answer["values"] = grid
        self.send(200, answer, record=record)

    # --- Apps Script web app

    def apps_script(self, method, path, query, body):
        m = re.fullmatch(r"/macros/s/([^/]+)/exec", path)
        if m and method == "POST":
            return self.apps_script_post(m.group(1), body)
        if path == "/macros/echo":
            if method != "GET":
                return self.send(405, b"<!DOCTYPE html><html><head><title>Error</title></head><body>Method Not Allowed</body></html>",
                                 content_type="text/html; charset=utf-8")
            key = query.get("user_content_key", [""])[0]
            with STATE.lock:
                stored = STATE.echo.pop(key, None)
            if stored is None:
                return self.send(404, b"<!DOCTYPE html><html><head><title>Error</title></head><body>Sorry, unable to open the file at this time.</body></html>",
                                 content_type="text/html; charset=utf-8")
            status, content_type, data = stored
            with STATE.lock:
                drop = STATE.take_fault("drop_echo", "GET", self.path)
            if drop:
                return self.drop()
            return self.send(status, data, content_type=content_type)
        self.send(404, b"<!DOCTYPE html><html><head><title>Error</title></head><body>Not found</body></html>", content_type="text/html")

    def apps_script_post(self, deployment, body):
        with STATE.lock:
            STATE.counters["apps_script_posts"] += 1
            answer = STATE.take_fault("apps_script_answer")
        if answer:
            return self.fault_answer(answer, body)
        with STATE.lock:
            html_fault = STATE.take_fault("apps_script_html")
            not_ok = STATE.take_fault("apps_script_not_ok")
        if html_fault:
            output = (200, "text/html; charset=utf-8",
                      b'<!DOCTYPE html><html><head><title>Error</title></head><body><div style="text-align:center;font-family:monospace;margin:50px auto 0;max-width:600px">TypeError: Cannot read properties of undefined (reading \'getRange\') (line 12, file &quot;Code&quot;)</div></body></html>')
        else:
            if not_ok:
                result = {"ok": False, "error": not_ok.get("message", "the script refused the rows")}
            else:
                result = self.run_script(deployment, body)
            output = (200, "application/json; charset=utf-8", json.dumps(result).encode("utf-8"))
        key = secrets.token_urlsafe(16)
        with STATE.lock:
            STATE.echo[key] = output
        location = f"http://{STATE.args.echo_host}:{STATE.args.port}/macros/echo?user_content_key={key}&lib=M{deployment[:8]}"
        self.send(302, b"<HTML><HEAD><TITLE>Moved Temporarily</TITLE></HEAD><BODY>The document has moved.</BODY></HTML>",
                  content_type="text/html; charset=UTF-8", headers={"Location": location})

    def run_script(self, deployment, body):
        """What the example doPost in docs/sheets.md does: check the secret, skip rows whose key is known."""
        try:
            payload = json.loads(body.decode("utf-8"))
        except ValueError:
            return {"ok": False, "error": "body is not JSON"}
        if STATE.args.apps_script_secret and payload.get("secret") != STATE.args.apps_script_secret:
            return {"ok": False, "error": "bad secret"}
        rows = payload.get("rows")
        key_index = payload.get("key_index", 0)
        columns = payload.get("columns")
        if not isinstance(rows, list):
            return {"ok": False, "error": "rows missing"}

        def text(cell):
            # What getDisplayValues shows for a sent cell (a leading apostrophe is not kept).
            return formatted(entered(cell))

        with STATE.lock:
            sheet = STATE.spreadsheets.setdefault("apps-script-" + deployment, {}).setdefault("Sheet1", [])
            first_data = 0
            positions = None
            if isinstance(columns, list) and columns:
                # The header: written when the sheet is empty, else the sent columns mapped onto it by name.
                if not sheet:
                    sheet.append([entered(c) for c in columns])
                header = [formatted(c).strip() for c in sheet[0]]
                positions = []
                for name in columns:
                    if str(name).strip() not in header:
                        return {"ok": False, "code": "missing-column",
                                "error": f"the sheet's header ({', '.join(h for h in header if h)}) has no column '{name}'"}
                    positions.append(header.index(str(name).strip()))
                first_data = 1
            key_col = positions[key_index] if positions else key_index
            known = {formatted(r[key_col]) for r in sheet[first_data:] if len(r) > key_col}
            appended = 0
            skipped = 0
            start = len(sheet)
            for row in rows:
                key = text(row[key_index]) if len(row) > key_index else ""
                if key in known:
                    skipped += 1
                    continue
                known.add(key)
                if positions:
                    placed = [""] * (max(positions) + 1)
                    for j, cell in enumerate(row):
                        placed[positions[j]] = entered(cell)
                    sheet.append(placed)
                else:
                    sheet.append([entered(c) for c in row])
                appended += 1
        result = {"ok": True, "appended": appended, "skipped": skipped}
        if appended:
            width = max(len(r) for r in sheet[start:])
            result["range"] = f"Sheet1!A{start + 1}:{column_letters(width - 1)}{start + appended}"
        return result

    # --- control

    def control(self, method, path, query, body):
        name = path[len("/_control/"):]
        payload = json.loads(body.decode("utf-8")) if body else {}
        with STATE.lock:
            if name == "fault" and method == "POST":
                STATE.faults.append(payload)
                answer = {"ok": True}
            elif name == "clear-faults" and method == "POST":
                STATE.faults.clear()
                answer = {"ok": True}
            elif name == "expire-tokens" and method == "POST":
                STATE.tokens.clear()
                answer = {"ok": True}
            elif name == "revoke-refresh-tokens" and method == "POST":
                STATE.refresh_tokens.clear()
                answer = {"ok": True}
            elif name == "sheet" and method == "POST":
                # Sets a tab's rows (a header typed by hand, rows already there): {"spreadsheet", "sheet", "values"}.
                sid = payload.get("spreadsheet", "test-spreadsheet")
                STATE.spreadsheets.setdefault(sid, {})[payload.get("sheet", "Sheet1")] = [list(r) for r in payload.get("values", [])]
                answer = {"ok": True}
            elif name == "sheet" and method == "GET":
                sid = query.get("spreadsheet", [""])[0]
                sheet = query.get("sheet", ["Sheet1"])[0]
                answer = {"values": STATE.spreadsheets.get(sid, {}).get(sheet, [])}
            elif name == "stats" and method == "GET":
                answer = dict(STATE.counters)
                answer["max_writes_in_window"] = STATE.max_writes_in_window
            elif name == "appends" and method == "GET":
                answer = {"begun": STATE.append_begun}
            elif name == "log" and method == "GET":
                answer = {"requests": STATE.log}
            elif name == "spec" and method == "GET":
                answer = {"methods": PARAMS, "global": sorted(GLOBAL_QUERY), "spreadsheet_fields": SPREADSHEET_FIELDS}
            elif name == "received" and method == "GET":
                answer = {"requests": STATE.received}
            elif name == "health":
                answer = {"ok": True}
            else:
                answer = None
        if answer is None:
            return self.send(404, {"error": "unknown control " + name})
        self.send(200, answer)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--write-key", required=True, help="where to write the generated service-account key JSON")
    parser.add_argument("--write-adc", default="",
                        help="where to write generated authorized_user credentials (gcloud's application-default file)")
    parser.add_argument("--client-email", default="syncgate-test@syncgate-test.iam.gserviceaccount.com")
    parser.add_argument("--write-impersonated", default="",
                        help="where to write gcloud application-default credentials of type impersonated_service_account")
    parser.add_argument("--impersonable", action="append", default=[],
                        help="a service account the authorized_user may act as (repeatable)")
    parser.add_argument("--spreadsheet", action="append", default=[], help="a spreadsheet id that exists (repeatable)")
    parser.add_argument("--forbidden", action="append", default=[], help="a spreadsheet id answered with 403")
    parser.add_argument("--token-ttl", type=int, default=3600, help="access token lifetime in seconds")
    parser.add_argument("--write-quota", type=int, default=60, help="writes allowed per --quota-window (0: none)")
    parser.add_argument("--quota-window", type=float, default=60.0, help="quota window in seconds")
    parser.add_argument("--retry-after", type=int, default=0, help="Retry-After seconds on a quota 429 (0: none)")
    parser.add_argument("--apps-script-secret", default="", help="the secret the Apps Script expects")
    parser.add_argument("--echo-host", default="127.0.0.1",
                        help="host name of the Apps Script output URL (localhost: another origin, as Google's is)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    # Stop at once on SIGTERM/SIGINT, even when started with those signals blocked (as some launchers do).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if not args.spreadsheet:
        args.spreadsheet = ["test-spreadsheet"]

    global STATE
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_id = uuid.uuid4().hex
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode("ascii")
    key_file = {
        "type": "service_account",
        "project_id": "syncgate-test",
        "private_key_id": key_id,
        "private_key": pem,
        "client_email": args.client_email,
        "client_id": "100000000000000000000",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": f"http://127.0.0.1:{args.port}/token",
    }
    STATE = State(args, private_key.public_key(), key_id, args.client_email)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    tmp = args.write_key + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(key_file, f, indent=2)
    if args.write_adc:
        adc = {
            "account": "",
            "client_id": STATE.oauth_client_id,
            "client_secret": STATE.oauth_client_secret,
            "quota_project_id": "syncgate-test-quota",
            "refresh_token": next(iter(STATE.refresh_tokens)),
            "token_uri": f"http://127.0.0.1:{args.port}/token",
            "type": "authorized_user",
            "universe_domain": "googleapis.com",
        }
        fd = os.open(args.write_adc + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(adc, f, indent=2)
        os.replace(args.write_adc + ".tmp", args.write_adc)
        if args.write_impersonated:
            target = (args.impersonable or ["sheets-writer@syncgate-test.iam.gserviceaccount.com"])[0]
            impersonated = {
                "delegates": [],
                "service_account_impersonation_url":
                    f"http://127.0.0.1:{args.port}/v1/projects/-/serviceAccounts/{target}:generateAccessToken",
                "source_credentials": {k: v for k, v in adc.items() if k not in ("account", "universe_domain")},
                "type": "impersonated_service_account",
            }
            fd = os.open(args.write_impersonated + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(impersonated, f, indent=2)
            os.replace(args.write_impersonated + ".tmp", args.write_impersonated)
    # The key file last: the client waits for it to know the server is ready.
    os.replace(tmp, args.write_key)
    del private_key, pem, key_file
    print(f"sheets loopback server on http://127.0.0.1:{args.port} (key: {args.write_key})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
