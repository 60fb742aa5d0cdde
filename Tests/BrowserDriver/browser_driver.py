#!/usr/bin/env python3
"""Drives Debian's headless chromium through its DevTools protocol, one JSON command a line on standard input, one
JSON answer a line on standard output (Tests/SyncgateTestSupport/BrowserSession.swift speaks it):

  {"cmd": "open", "url": U, "width": W, "height": H, "mobile": false}   load a page, wait for its load event
  {"cmd": "eval", "expr": JS}                                            -> {"value": ...} (promises awaited)
  {"cmd": "wait", "expr": JS, "timeout": S}                              -> {"value": ...} once truthy, else error
  {"cmd": "click", "selector": CSS}                                      a real mouse click at the element's centre
  {"cmd": "screenshot", "path": P, "full": true}                         a PNG of the page
  {"cmd": "colors", "scheme": "dark"}                                    prefers-color-scheme as given ("" resets)
  {"cmd": "log"}                                                         -> {"value": [console lines, exceptions]}
  {"cmd": "quit"}

Every answer is {"ok": true, ...} or {"ok": false, "error": text}. The browser runs in a profile folder of its own,
removed at the end, and talks only to the loopback addresses the test gives it."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="sg-chromium-")
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if not binary:
            raise RuntimeError("chromium is not installed (scripts/test-deps.d/http.sh)")
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--metrics-recording-only", "--mute-audio",
             "--hide-scrollbars", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             "--user-data-dir=" + self.profile, "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            match = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if match:
                port = int(match.group(1))
                break
        if port is None:
            raise RuntimeError("chromium did not open its DevTools port")
        # Keep reading its standard error so that it never blocks on a full pipe.
        import threading
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events = []
        self.log = []
        for method in ["Page.enable", "Runtime.enable"]:
            self.call(method)

    def call(self, method, params=None, timeout=60):
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        while time.time() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            self.event(message)
        raise RuntimeError(f"{method}: no answer")

    def event(self, message):
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.log.append(f"console.{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.log.append("exception: " + str(details.get("exception", {}).get("description", details.get("text"))))
        elif method == "Page.javascriptDialogOpening":
            self.log.append("dialog: " + params.get("message", ""))
            self.ws.send(json.dumps({"id": 0, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}))
        else:
            self.events.append(method)

    def wait_event(self, name, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if name in self.events:
                self.events.remove(name)
                return
            self.ws.settimeout(max(0.1, deadline - time.time()))
            self.event(json.loads(self.ws.recv()))
        raise RuntimeError(f"no {name}")

    def viewport(self, width, height, mobile):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 2 if mobile else 1, "mobile": mobile})

    def evaluate(self, expr):
        result = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError("script error: " + str(details.get("exception", {}).get("description", details.get("text"))))
        return result.get("result", {}).get("value")

    def handle(self, command):
        cmd = command["cmd"]
        if cmd == "open":
            self.viewport(command.get("width", 1280), command.get("height", 900), command.get("mobile", False))
            self.events.clear()
            self.call("Page.navigate", {"url": command["url"]})
            self.wait_event("Page.loadEventFired")
            return {}
        if cmd == "eval":
            return {"value": self.evaluate(command["expr"])}
        if cmd == "wait":
            deadline = time.time() + command.get("timeout", 60)
            value = None
            while time.time() < deadline:
                value = self.evaluate(command["expr"])
                if value:
                    return {"value": value}
                time.sleep(0.1)
            raise RuntimeError(f"still false after {command.get('timeout', 60)} s: {command['expr']} (last: {value!r})")
        if cmd == "click":
            selector = json.dumps(command["selector"])
            box = self.evaluate(
                f"(() => {{ const e = document.querySelector({selector}); if (!e) return null;"
                f" e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();"
                f" return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}}; }})()")
            if not box or box["w"] == 0 or box["h"] == 0:
                raise RuntimeError(f"nothing visible to click at {command['selector']}")
            for kind in ["mouseMoved", "mousePressed", "mouseReleased"]:
                self.call("Input.dispatchMouseEvent",
                          {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1})
            return {}
        if cmd == "screenshot":
            params = {"format": "png"}
            if command.get("full"):
                size = self.evaluate("({w: document.documentElement.clientWidth, h: document.documentElement.scrollHeight})")
                params.update({"captureBeyondViewport": True,
                               "clip": {"x": 0, "y": 0, "width": size["w"], "height": size["h"], "scale": 1}})
            data = self.call("Page.captureScreenshot", params)["data"]
            with open(command["path"], "wb") as f:
                f.write(base64.b64decode(data))
            return {}
        if cmd == "colors":
            scheme = command.get("scheme", "")
            features = [{"name": "prefers-color-scheme", "value": scheme}] if scheme else []
            self.call("Emulation.setEmulatedMedia", {"features": features})
            return {}
        if cmd == "log":
            return {"value": self.log}
        raise RuntimeError(f"unknown command {cmd}")

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def answer(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def main():
    try:
        browser = Browser()
    except Exception as error:
        answer({"ok": False, "error": f"cannot start chromium: {error}"})
        return 1
    answer({"ok": True, "ready": True})
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            if command.get("cmd") == "quit":
                answer({"ok": True})
                break
            try:
                result = browser.handle(command)
                answer(dict(ok=True, **result))
            except Exception as error:
                answer({"ok": False, "error": str(error)})
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
