/// The status page's script: reads `/api/status` and `/api/operations`, follows `/api/events` (with `fetch`, so
/// that the bearer token can go in a header, which `EventSource` cannot send), and asks for retries. Every text
/// from the gateway goes into the page as text (`textContent`), never as markup.
enum PageScript {
    /// The whole script, as served.
    static let text = [setup, rendering, controls].joined(separator: "\n")

    /// State, the API, reading and the live events.
    static let setup = #"""
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
              case "synced": case "failed": case "waiting": case "gone":
                state.live.delete(key(e));
                state.settled.set(key(e), Date.now());
                if (state.settled.size > 5000) state.settled.clear();
                renderInFlight(e.destination);
                scheduleRefresh();
                break;
              case "queued":
              case "dropped":   // events were lost for this page (it read too slowly): read the status again
              case "recorded":  // the ledger has written outcomes: the counts changed
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

        """#

    /// The buttons and filters.
    static let controls = #"""
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
