/// The status page's script: reads `/api/status` and `/api/operations`, follows `/api/events` (with `fetch`, so
/// that the bearer token can go in a header, which `EventSource` cannot send), and asks for retries. Every text
/// from the gateway goes into the page as text (`textContent`), never as markup.
enum PageScript {
    static let text = #"""
        "use strict";
        (() => {
          const $ = (id) => document.getElementById(id);
          const tokenRequired = document.querySelector('meta[name="syncgate-token-required"]').content === "true";
          const tokenKey = "syncgate-token";
          const listLimit = 500;
          const state = {
            report: null,
            operations: { ongoing: [], recent: { completed: [], failed: [] } },
            live: new Map(),            // uploads in flight, from /api/operations and the events
            settled: new Map(),         // when an upload last ended, by file (a snapshot read before that is stale)
            status: "all", destination: "", text: "",
            connected: false,
          };

          // ---- The API ----------------------------------------------------------------------------------------
          class AuthError extends Error {}
          let tokenWaiters = [];

          function token() {
            try { return sessionStorage.getItem(tokenKey) || ""; } catch (e) { return ""; }
          }

          async function api(path, options = {}) {
            const headers = Object.assign({}, options.headers || {});
            const t = token();
            if (t) headers["Authorization"] = "Bearer " + t;
            const response = await fetch(path, Object.assign({}, options, { headers, cache: "no-store", credentials: "same-origin" }));
            if (response.status === 401) {
              try { sessionStorage.removeItem(tokenKey); } catch (e) {}
              askForToken(t ? "That token was refused. Enter the gateway's access token." : null);
              throw new AuthError("token needed");
            }
            if (!response.ok) throw new Error(await errorText(response));
            return response;
          }

          async function errorText(response) {
            try {
              const body = await response.json();
              if (body && body.error && body.error.message) return body.error.message;
            } catch (e) {}
            return "HTTP " + response.status;
          }

          function askForToken(message) {
            const form = $("token-form");
            if (message) form.querySelector("label").textContent = message;
            form.hidden = false;
            $("token-input").focus();
          }

          function tokenGiven() {
            return new Promise((resolve) => tokenWaiters.push(resolve));
          }

          $("token-form").addEventListener("submit", (event) => {
            event.preventDefault();
            const value = $("token-input").value.trim();
            if (!value) return;
            try { sessionStorage.setItem(tokenKey, value); } catch (e) {}
            $("token-input").value = "";
            $("token-form").hidden = true;
            const waiters = tokenWaiters;
            tokenWaiters = [];
            waiters.forEach((resolve) => resolve());
            refresh();
          });

          async function change(path, body) {
            if (tokenRequired && !token()) {
              askForToken(null);
              await tokenGiven();
            }
            const response = await api(path, {
              method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
            });
            return response.json();
          }

          // ---- Reading -----------------------------------------------------------------------------------------
          let refreshing = false, refreshAgain = false, refreshTimer = null, lastRefresh = 0;

          async function refresh() {
            if (refreshing) { refreshAgain = true; return; }
            refreshing = true;
            const asked = Date.now();
            try {
              const [report, operations] = await Promise.all([
                api("/api/status").then((r) => r.json()),
                api("/api/operations").then((r) => r.json()),
              ]);
              state.report = report;
              state.operations = operations;
              // An upload that ended while this was read is not in flight any more, whatever the snapshot says.
              state.live = new Map(operations.ongoing.filter((op) => !(state.settled.get(key(op)) >= asked)).map((op) => [key(op), op]));
              showError(null);
              render();
            } catch (e) {
              if (!(e instanceof AuthError)) showError("Cannot read the gateway's status: " + e.message);
            } finally {
              refreshing = false;
              lastRefresh = Date.now();
              if (refreshAgain) { refreshAgain = false; scheduleRefresh(); }
            }
          }

          /// A refresh soon, at most one a second however many files settle.
          function scheduleRefresh() {
            if (refreshTimer) return;
            const wait = Math.max(250, 1000 - (Date.now() - lastRefresh));
            refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, wait);
          }

          // ---- Live events -------------------------------------------------------------------------------------
          const key = (e) => e.destination + "\u0000" + e.source + "\u0000" + e.path;

          function onEvent(e) {
            switch (e.event) {
              case "started":
                state.settled.delete(key(e));
                state.live.set(key(e), { path: e.path, source: e.source, destination: e.destination, progress: 0, attempts: e.attempt, time: e.time });
                renderInFlight(e.destination);
                break;
              case "progress": {
                const op = state.live.get(key(e));
                if (op) { op.progress = e.fraction; updateBar(op); }
                break;
              }
              case "retrying": {
                const op = state.live.get(key(e));
                if (op) { op.progress = 0; op.error = e.error; op.attempts = e.attempt; renderInFlight(e.destination); }
                break;
              }
              case "synced": case "failed": case "waiting":
                state.live.delete(key(e));
                state.settled.set(key(e), Date.now());
                if (state.settled.size > 5000) state.settled.clear();
                renderInFlight(e.destination);
                scheduleRefresh();
                break;
              case "queued":
                scheduleRefresh();
                break;
            }
          }

          async function follow() {
            let delay = 1000;
            for (;;) {
              try {
                const response = await api("/api/events", { headers: { Accept: "text/event-stream" } });
                if (!response.body) throw new Error("no stream");
                setLive(true);
                delay = 1000;
                refresh();  // whatever happened while the stream was down
                const reader = response.body.getReader();
                const decoder = new TextDecoder();
                let buffer = "";
                for (;;) {
                  const { value, done } = await reader.read();
                  if (done) break;
                  buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
                  let cut;
                  while ((cut = buffer.indexOf("\n\n")) >= 0) {
                    const block = buffer.slice(0, cut);
                    buffer = buffer.slice(cut + 2);
                    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
                    if (data) { try { onEvent(JSON.parse(data)); } catch (err) { /* not an event */ } }
                  }
                }
              } catch (e) {
                if (e instanceof AuthError) { setLive(false); await tokenGiven(); continue; }
              }
              setLive(false);
              await new Promise((resolve) => setTimeout(resolve, delay));
              delay = Math.min(delay * 2, 30000);
            }
          }

          function setLive(on) {
            state.connected = on;
            $("live").className = "live " + (on ? "on" : "off");
            $("live-text").textContent = on ? "live" : "reconnecting";
          }

          // ---- Rendering ---------------------------------------------------------------------------------------
          function el(tag, className, text) {
            const node = document.createElement(tag);
            if (className) node.className = className;
            if (text !== undefined && text !== null) node.textContent = String(text);
            return node;
          }

          function ago(iso) {
            if (!iso) return "never";
            const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
            const future = seconds < 0;
            const s = Math.abs(seconds);
            let text;
            if (s < 5) return "just now";
            if (s < 60) text = s + " s";
            else if (s < 3600) text = Math.round(s / 60) + " min";
            else if (s < 86400) text = Math.round(s / 3600) + " h";
            else text = Math.round(s / 86400) + " d";
            return future ? "in " + text : text + " ago";
          }

          function timeNode(tag, className, iso, prefix) {
            const node = el(tag, className, (prefix || "") + ago(iso));
            if (iso) node.title = new Date(iso).toLocaleString();
            return node;
          }

          function render() {
            const report = state.report;
            if (!report) return;
            renderSummary(report);
            renderCards(report);
            renderFiles(report);
            $("generated").textContent = "Read " + new Date(report.generated_at).toLocaleTimeString() +
              (report.last_run ? " · last pass " + ago(report.last_run.finished_at || report.last_run.started_at) : " · no pass yet");
          }

          function renderSummary(report) {
            const box = $("summary");
            box.replaceChildren();
            const ds = report.destinations;
            const total = (k) => ds.reduce((n, d) => n + d[k], 0);
            const failed = total("failed"), waiting = total("pending") + total("uploading");
            const away = ds.filter((d) => d.state !== "available");
            if (report.needs_attention) box.append(el("span", "bad", "Needs attention"));
            else if (failed === 0 && waiting === 0) box.append(el("span", "ok", "Everything synced"));
            else box.append(el("span", null, "Working"));
            const parts = [ds.length + " destination" + (ds.length === 1 ? "" : "s"), total("synced") + " synced"];
            if (waiting) parts.push(waiting + " not yet sent");
            if (failed) parts.push(failed + " failed");
            if (away.length) parts.push(away.map((d) => d.name + " " + d.state).join(", "));
            box.append(document.createTextNode(" · " + parts.join(" · ")));
          }

          function renderCards(report) {
            bars.clear();
            const cards = $("cards");
            cards.replaceChildren(...report.destinations.map(card));
            const select = $("destination-filter");
            const chosen = select.value;
            select.replaceChildren(new Option("Every destination", ""), ...report.destinations.map((d) => new Option(d.name, d.name)));
            select.value = report.destinations.some((d) => d.name === chosen) ? chosen : "";
          }

          function card(d) {
            const node = el("article", "card " + d.state);
            node.dataset.destination = d.name;
            const head = el("div", "card-head");
            head.append(el("h3", null, d.name), el("span", "type", d.type), el("span", "state " + d.state, d.state));
            node.append(head);
            if (d.state !== "available") {
              const why = el("div", "why");
              const head = el("p", "why-head");
              head.append(el("strong", null, (d.state === "blocked" ? "Blocked" : "Unavailable") + " since "), timeNode("strong", null, d.since));
              why.append(head, el("code", null, d.last_error || "no error recorded"));
              const tail = [d.waiting + " file" + (d.waiting === 1 ? "" : "s") + " wait" + (d.waiting === 1 ? "s" : "") + " for it"];
              if (d.state === "unavailable") tail.push(d.next_probe_at ? "tried again " + ago(d.next_probe_at) : "tried again at the next pass");
              why.append(el("p", "why-tail", tail.join(" · ")));
              if (d.state === "blocked") why.append(el("p", "why-hint", "Fix its credentials or settings in the config, or press Retry all to try it again."));
              node.append(why);
            }
            const counts = el("div", "counts");
            for (const [label, value, cls] of [["synced", d.synced, "synced"], ["pending", d.pending, "pending"],
                                                ["uploading", d.uploading, "uploading"], ["failed", d.failed, "failed"]]) {
              const box = el("div", value > 0 ? cls : null);
              box.dataset.count = label;
              box.append(el("b", null, value), el("span", null, label));
              counts.append(box);
            }
            node.append(counts);
            const meta = el("p", "meta");
            meta.append(document.createTextNode("Last success: "), timeNode("span", null, d.last_success_at));
            node.append(meta);
            const inFlight = el("div", "sub in-flight");
            inFlight.dataset.inFlight = d.name;
            fillInFlight(inFlight, d.name);
            node.append(inFlight);
            const recent = state.report.recent;
            const done = mergeRecent(recent.completed, state.operations.recent.completed, d.name, (e) => e.synced_at || e.time);
            const failed = mergeRecent(recent.failed, state.operations.recent.failed, d.name, (e) => e.last_attempt_at || e.time);
            if (done.length) node.append(recentList("Recently completed", done.slice(0, 5), false));
            if (failed.length) node.append(recentList("Recently failed", failed.slice(0, 5), true));
            return node;
          }

          /// The ledger's recent outcomes and the gateway's own, newest first, one per file.
          function mergeRecent(fromLedger, fromGateway, destination, when) {
            const seen = new Map();
            for (const e of fromLedger.concat(fromGateway)) {
              if (e.destination !== destination) continue;
              const k = key(e), t = when(e);
              const known = seen.get(k);
              if (!known || Date.parse(t) > Date.parse(known.when)) seen.set(k, { path: e.path, when: t, error: e.last_error || e.error });
            }
            return Array.from(seen.values()).sort((a, b) => Date.parse(b.when) - Date.parse(a.when));
          }

          function recentList(title, entries, failed) {
            const box = el("div", "sub " + (failed ? "recent-failed" : "recent-completed"));
            box.append(el("h4", null, title));
            const list = el("ul");
            for (const e of entries) {
              const item = el("li");
              item.append(timeNode("span", "when", e.when), document.createTextNode(e.path));
              if (failed && e.error) item.append(el("span", "err", e.error));
              list.append(item);
            }
            box.append(list);
            return box;
          }

          const bars = new Map(), rowProgress = new Map();

          function fillInFlight(box, destination) {
            box.replaceChildren();
            const ops = Array.from(state.live.values()).filter((op) => op.destination === destination);
            if (!ops.length) return;
            box.append(el("h4", null, "Uploading now"));
            const list = el("ul");
            for (const op of ops.slice(0, 8)) {
              const item = el("li", "progress");
              const bar = el("div", "bar"), fill = el("i");
              bar.append(fill);
              const pct = el("span", "pct");
              item.append(el("span", null, op.path), pct, bar);
              if (op.error) item.append(el("span", "err", "retrying: " + op.error));
              bars.set(key(op), { fill, pct });
              setBar(fill, pct, op.progress);
              list.append(item);
            }
            if (ops.length > 8) list.append(el("li", null, "and " + (ops.length - 8) + " more"));
            box.append(list);
          }

          function setBar(fill, pct, progress) {
            const p = Math.max(0, Math.min(1, progress || 0));
            fill.style.width = (p * 100).toFixed(1) + "%";
            pct.textContent = Math.round(p * 100) + "%";
          }

          function updateBar(op) {
            const bar = bars.get(key(op));
            if (bar && bar.fill.isConnected) setBar(bar.fill, bar.pct, op.progress);
            else renderInFlight(op.destination);
            const row = rowProgress.get(key(op));
            if (row && row.isConnected) row.textContent = percent(op.progress);
          }

          function percent(progress) {
            return Math.round(Math.max(0, Math.min(1, progress || 0)) * 100) + "%";
          }

          function renderInFlight(destination) {
            const box = document.querySelector('[data-in-flight="' + CSS.escape(destination) + '"]');
            if (box) fillInFlight(box, destination);
          }

          function mark(status) {
            return status === "failed" ? "red" : status === "uploading" ? "green" : "amber";
          }

          function renderFiles(report) {
            rowProgress.clear();
            const files = report.files;
            const counts = { all: files.length, failed: 0, pending: 0, uploading: 0 };
            for (const f of files) counts[f.status] = (counts[f.status] || 0) + 1;
            for (const button of document.querySelectorAll("#status-filter button")) {
              const s = button.dataset.status;
              button.setAttribute("aria-pressed", String(s === state.status));
              button.querySelector("span").textContent = counts[s] || 0;
            }
            const text = state.text.toLowerCase();
            const chosen = files.filter((f) =>
              (state.status === "all" || f.status === state.status) &&
              (!state.destination || f.destination === state.destination) &&
              (!text || f.path.toLowerCase().includes(text)));
            $("files-count").textContent = "(" + files.length + ")";
            const list = $("files");
            list.replaceChildren(...chosen.slice(0, listLimit).map(fileRow));
            const empty = $("files-empty");
            if (!files.length) { empty.hidden = false; empty.textContent = "Every routed file is synced."; }
            else if (!chosen.length) { empty.hidden = false; empty.textContent = "No file matches the filter."; }
            else if (chosen.length > listLimit) { empty.hidden = false; empty.textContent = "Showing " + listLimit + " of " + chosen.length + ": filter to narrow."; }
            else empty.hidden = true;
            const failedCount = files.filter((f) => f.status === "failed" && (!state.destination || f.destination === state.destination)).length;
            const blocked = report.destinations.some((d) => d.state === "blocked" && (!state.destination || d.name === state.destination));
            $("retry-all").disabled = failedCount === 0 && !blocked;
            $("forget-failed").disabled = failedCount === 0;
          }

          function fileRow(f) {
            const color = mark(f.status);
            const row = el("li", "file " + color);
            row.dataset.path = f.path;
            row.dataset.destination = f.destination;
            row.dataset.status = f.status;
            const dot = el("span", "mark " + color);
            dot.title = f.status;
            const main = el("div");
            main.append(el("div", "path", f.path));
            const details = el("div", "details");
            details.append(el("span", null, f.destination), el("span", null, f.status));
            if (f.source) details.append(el("span", null, "from " + f.source));
            if (f.attempts) details.append(el("span", null, f.attempts + " attempt" + (f.attempts === 1 ? "" : "s")));
            if (f.last_attempt_at) details.append(timeNode("span", null, f.last_attempt_at, "last "));
            if (f.next_retry_at) details.append(timeNode("span", null, f.next_retry_at, "next try "));
            if (f.status === "uploading") {
              // The live progress when the upload is known to be in flight, else what the ledger last recorded.
              const op = state.live.get(key(f));
              const pct = el("span", "row-pct", percent(op ? op.progress : f.progress));
              rowProgress.set(key(f), pct);
              details.append(pct);
            }
            const away = state.report.destinations.find((d) => d.name === f.destination && d.state !== "available");
            if (away && f.status !== "failed") details.append(el("span", "waits", "waits for " + away.name + " (" + away.state + ")"));
            main.append(details);
            row.append(dot, main);
            if (f.status === "failed") {
              const button = el("button", "small retry", "Retry");
              button.type = "button";
              button.addEventListener("click", () => act(button, "/api/retry", { destination: f.destination, paths: [f.path] },
                (r) => r.retried ? "Retrying " + f.path : f.path + " is not failed any more"));
              row.append(button);
            } else {
              row.append(el("span"));
            }
            if (f.last_error) row.append(el("div", "error", f.last_error));
            return row;
          }

          async function act(button, path, body, message) {
            button.disabled = true;
            try {
              const result = await change(path, body);
              toast(message(result));
              scheduleRefresh();
            } catch (e) {
              if (!(e instanceof AuthError)) toast("Failed: " + e.message);
            } finally {
              button.disabled = false;
            }
          }

          let toastTimer = null;
          function toast(text) {
            const box = $("toast");
            box.textContent = text;
            box.hidden = false;
            clearTimeout(toastTimer);
            toastTimer = setTimeout(() => { box.hidden = true; }, 3500);
          }

          function showError(text) {
            const box = $("error");
            box.hidden = !text;
            box.textContent = text || "";
          }

          // ---- Controls ----------------------------------------------------------------------------------------
          $("status-filter").addEventListener("click", (event) => {
            const button = event.target.closest("button");
            if (!button) return;
            state.status = button.dataset.status;
            if (state.report) renderFiles(state.report);
          });
          $("destination-filter").addEventListener("change", (event) => {
            state.destination = event.target.value;
            if (state.report) renderFiles(state.report);
          });
          $("text-filter").addEventListener("input", (event) => {
            state.text = event.target.value;
            if (state.report) renderFiles(state.report);
          });
          $("retry-all").addEventListener("click", (event) => {
            const body = state.destination ? { destination: state.destination } : {};
            act(event.currentTarget, "/api/retry", body, (r) => "Retrying " + r.retried + " failed file" + (r.retried === 1 ? "" : "s"));
          });
          $("forget-failed").addEventListener("click", (event) => {
            const where = state.destination ? " at " + state.destination : "";
            if (!confirm("Forget every failed file" + where + "? They are dropped from the ledger; a file still in a source is new to the next pass.")) return;
            const body = state.destination ? { destination: state.destination } : {};
            act(event.currentTarget, "/api/forget", body, (r) => "Forgot " + r.forgotten + " failed file" + (r.forgotten === 1 ? "" : "s"));
          });

          setInterval(() => { if (state.report) render(); }, 15000);
          refresh();
          follow();
        })();
        """#
}
