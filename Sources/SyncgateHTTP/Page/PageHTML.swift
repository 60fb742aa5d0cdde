/// The status page's HTML: the frame that `app.js` fills in. Holds no data.
enum PageHTML {
    static let text = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <meta name="syncgate-token-required" content="{{token-required}}">
        <title>syncgate</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/app.css">
        <script src="/app.js" defer></script>
        </head>
        <body>
        <header class="top">
          <div class="brand"><img src="/favicon.svg" alt="" width="26" height="26"><h1>syncgate</h1></div>
          <div class="summary" id="summary" role="status" aria-live="polite">Loading…</div>
          <div class="live" id="live" title="Live updates from /api/events"><span class="dot"></span><span id="live-text">connecting</span></div>
        </header>

        <form class="token" id="token-form" hidden>
          <label for="token-input">This gateway needs its access token (http.token in the config).</label>
          <div class="token-row">
            <input id="token-input" type="password" autocomplete="current-password" spellcheck="false" placeholder="token">
            <button type="submit" class="primary">Use token</button>
          </div>
          <p class="hint">It is kept in this tab only (sessionStorage) and sent as a bearer token.</p>
        </form>

        <main>
          <p class="error-banner" id="error" hidden></p>

          <section aria-labelledby="destinations-title">
            <h2 id="destinations-title">Destinations</h2>
            <div id="held-back"></div>
            <div class="cards" id="cards"></div>
          </section>

          <section aria-labelledby="files-title" class="files">
            <div class="files-head">
              <h2 id="files-title">Files not synced <span class="count" id="files-count"></span></h2>
              <div class="actions">
                <button type="button" id="retry-all" class="primary">Retry all</button>
                <button type="button" id="forget-failed" class="danger">Forget failed</button>
              </div>
            </div>
            <div class="filters" role="toolbar" aria-label="Filter files">
              <div class="chips" id="status-filter">
                <button type="button" data-status="all" aria-pressed="true">All <span></span></button>
                <button type="button" data-status="failed" aria-pressed="false">Failed <span></span></button>
                <button type="button" data-status="pending" aria-pressed="false">Pending <span></span></button>
                <button type="button" data-status="uploading" aria-pressed="false">Uploading <span></span></button>
              </div>
              <select id="destination-filter" aria-label="Destination"><option value="">Every destination</option></select>
              <input id="text-filter" type="search" placeholder="Filter by path" aria-label="Filter by path">
            </div>
            <ul class="file-list" id="files"></ul>
            <p class="empty" id="files-empty" hidden></p>
          </section>
        </main>
        <footer>
          <span id="generated"></span>
          <span><a href="/api/status">status JSON</a> · <a href="/metrics">metrics</a></span>
        </footer>
        <div class="toast" id="toast" role="status" aria-live="polite" hidden></div>
        </body>
        </html>
        """#

    static let favicon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2563eb"/><path d="M9 12h11l-3-3M23 20H12l3 3" fill="none" stroke="#fff" stroke-width="2.6" stroke-linecap="round" stroke-linejoin="round"/></svg>
        """#
}
