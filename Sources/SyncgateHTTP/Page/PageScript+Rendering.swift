/// The status page script's rendering: destination cards and the list of files not synced, built as DOM nodes
/// whose texts are set with `textContent`.
extension PageScript {
    static let rendering = #"""
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
            // A source held back from deletions: said above the cards until a walk no longer finds why.
            $("held-back").replaceChildren(...(report.held_back || []).map((h) => {
              const item = el("p", "held");
              item.dataset.source = h.source;
              item.append(el("strong", null, "Source " + h.source + " held back: "),
                          document.createTextNode(h.reason + "; " + h.gone + " of its files are gone, none of its copies is deleted. If that is meant, stop the gateway and run syncgate sync --accept-source-changes once."));
              return item;
            }));
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
            const v = d.verification;
            meta.dataset.verification = v ? "verified" : "unverified";
            if (v) {
              const found = [["missing", v.missing], ["different", v.different], ["extra", v.extra], ["unreadable", v.errors]]
                .filter(([, n]) => n > 0).map(([label, n]) => n + " " + label);
              meta.append(document.createTextNode(" · Verified "), timeNode("span", null, v.verified_at),
                          document.createTextNode(" (" + v.checked + " checked" + (found.length ? ", " + found.join(", ") : ", all there") + ")"));
            } else {
              meta.append(document.createTextNode(" · Unverified (syncgate check)"));
            }
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

        """#
}
