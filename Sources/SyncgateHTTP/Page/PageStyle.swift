/// The status page's stylesheet: light and dark, readable on a phone (one column below 640 px).
enum PageStyle {
    static let text = #"""
        :root {
          --bg: #f4f6f9; --panel: #ffffff; --text: #1b2330; --muted: #5d6878; --line: #e2e7ee;
          --accent: #2563eb; --accent-text: #ffffff;
          --green: #16a34a; --green-bg: #e7f6ec; --amber: #d97706; --amber-bg: #fdf3e1; --red: #dc2626; --red-bg: #fdeaea;
          --track: #e8ecf2; --shadow: 0 1px 2px rgba(16, 24, 40, .06), 0 1px 3px rgba(16, 24, 40, .08);
          --mono: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
        }
        @media (prefers-color-scheme: dark) {
          :root {
            --bg: #0f141b; --panel: #18202b; --text: #e6ebf2; --muted: #97a3b4; --line: #2a3441;
            --green-bg: #123222; --amber-bg: #3a2a10; --red-bg: #3d1618; --track: #2a3441; --shadow: none;
          }
        }
        * { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; }
        body {
          margin: 0; background: var(--bg); color: var(--text);
          font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
        }
        a { color: var(--accent); }
        h1 { font-size: 20px; margin: 0; letter-spacing: -.01em; }
        h2 { font-size: 16px; margin: 0 0 12px; }
        [hidden] { display: none !important; }

        .top {
          display: flex; align-items: center; gap: 16px; flex-wrap: wrap;
          padding: 14px 24px; background: var(--panel); border-bottom: 1px solid var(--line);
          position: sticky; top: 0; z-index: 2;
        }
        .brand { display: flex; align-items: center; gap: 10px; }
        .summary { flex: 1; min-width: 200px; color: var(--muted); }
        .summary strong { color: var(--text); }
        .summary .bad { color: var(--red); font-weight: 600; }
        .summary .ok { color: var(--green); font-weight: 600; }
        .live { display: flex; align-items: center; gap: 6px; font-size: 13px; color: var(--muted); }
        .live .dot { width: 9px; height: 9px; border-radius: 50%; background: var(--amber); }
        .live.on .dot { background: var(--green); box-shadow: 0 0 0 3px var(--green-bg); }
        .live.off .dot { background: var(--red); }

        main { max-width: 1180px; margin: 0 auto; padding: 20px 24px 8px; }
        section { margin-bottom: 28px; }

        .token { max-width: 560px; margin: 20px auto 0; background: var(--panel); border: 1px solid var(--line);
                 border-radius: 10px; padding: 16px; box-shadow: var(--shadow); }
        .token label { display: block; font-weight: 600; margin-bottom: 8px; }
        .token-row { display: flex; gap: 8px; }
        .token input { flex: 1; min-width: 0; }
        .hint { color: var(--muted); font-size: 13px; margin: 8px 0 0; }

        .error-banner { background: var(--red-bg); color: var(--red); border-radius: 8px; padding: 10px 14px; margin: 0 0 16px; }

        .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 16px; }
        .card { background: var(--panel); border: 1px solid var(--line); border-radius: 12px; padding: 16px;
                box-shadow: var(--shadow); border-top: 4px solid var(--green); min-width: 0; }
        .card.unavailable { border-top-color: var(--amber); }
        .card.blocked { border-top-color: var(--red); }
        .held { margin: 0 0 12px; font-size: 13px; padding: 10px 12px; border-radius: 8px; background: var(--red-bg); overflow-wrap: anywhere; }
        .card-head { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
        .card-head h3 { margin: 0; font-size: 17px; overflow-wrap: anywhere; }
        .type { font-size: 12px; color: var(--muted); border: 1px solid var(--line); border-radius: 999px; padding: 1px 8px; }
        .state { margin-left: auto; font-size: 12px; font-weight: 600; border-radius: 999px; padding: 2px 10px; text-transform: uppercase; letter-spacing: .03em; }
        .state.available { background: var(--green-bg); color: var(--green); }
        .state.unavailable { background: var(--amber-bg); color: var(--amber); }
        .state.blocked { background: var(--red-bg); color: var(--red); }
        .why { margin: 10px 0 0; font-size: 13px; padding: 10px 12px; border-radius: 8px; background: var(--amber-bg); overflow-wrap: anywhere; }
        .card.blocked .why { background: var(--red-bg); }
        .why p { margin: 0; }
        .why-head { color: var(--amber); }
        .card.blocked .why-head { color: var(--red); }
        .why code { display: block; font-family: var(--mono); font-size: 12px; margin: 4px 0; }
        .why-hint { color: var(--muted); font-size: 12px; margin-top: 4px !important; }
        .counts { display: grid; grid-template-columns: repeat(4, 1fr); gap: 6px; margin: 14px 0 6px; }
        .counts div { text-align: center; background: var(--bg); border-radius: 8px; padding: 6px 2px; }
        .counts b { display: block; font-size: 20px; font-variant-numeric: tabular-nums; }
        .counts span { font-size: 12px; color: var(--muted); }
        .counts .failed b { color: var(--red); }
        .counts .pending b { color: var(--amber); }
        .counts .synced b { color: var(--green); }
        .meta { font-size: 13px; color: var(--muted); margin: 6px 0 0; }
        .sub { margin-top: 12px; }
        .sub h4 { margin: 0 0 6px; font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
        .sub ul { list-style: none; margin: 0; padding: 0; }
        .sub li { font-size: 13px; padding: 3px 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
        .sub li:first-child { border-top: none; }
        .sub .err { display: block; color: var(--red); font-family: var(--mono); font-size: 12px; }
        .sub .when { color: var(--muted); float: right; margin-left: 8px; }
        .progress { display: grid; grid-template-columns: 1fr auto; gap: 2px 8px; align-items: center; }
        .bar { grid-column: 1 / -1; height: 6px; background: var(--track); border-radius: 3px; overflow: hidden; }
        .bar i { display: block; height: 100%; width: 0; background: var(--accent); transition: width .3s ease; }
        .pct { font-variant-numeric: tabular-nums; color: var(--muted); }

        .files { background: var(--panel); border: 1px solid var(--line); border-radius: 12px; padding: 16px; box-shadow: var(--shadow); }
        .files-head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
        .files-head h2 { margin: 0; flex: 1; }
        .count { color: var(--muted); font-weight: 400; }
        .actions { display: flex; gap: 8px; }
        .filters { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin: 14px 0 10px; }
        .chips { display: flex; gap: 4px; flex-wrap: wrap; }
        .chips button { border-radius: 999px; padding: 4px 12px; }
        .chips button[aria-pressed="true"] { background: var(--text); color: var(--panel); border-color: var(--text); }
        .chips span { opacity: .7; }
        #text-filter { flex: 1; min-width: 160px; }

        button, select, input {
          font: inherit; font-size: 14px; color: var(--text); background: var(--panel);
          border: 1px solid var(--line); border-radius: 8px; padding: 6px 12px;
        }
        button { cursor: pointer; }
        button:hover { border-color: var(--muted); }
        button:disabled { opacity: .5; cursor: default; }
        button.primary { background: var(--accent); color: var(--accent-text); border-color: var(--accent); }
        button.danger { color: var(--red); }
        button.small { font-size: 13px; padding: 3px 10px; }

        .file-list { list-style: none; margin: 0; padding: 0; }
        .file { display: grid; grid-template-columns: 14px minmax(0, 1fr) auto; gap: 4px 12px; align-items: start;
                padding: 10px 4px; border-top: 1px solid var(--line); }
        .mark { width: 12px; height: 12px; border-radius: 50%; margin-top: 4px; }
        .mark.green { background: var(--green); }
        .mark.amber { background: var(--amber); }
        .mark.red { background: var(--red); }
        .path { font-family: var(--mono); font-size: 13.5px; overflow-wrap: anywhere; }
        .file .details { font-size: 13px; color: var(--muted); }
        .file .details span + span::before { content: " · "; color: var(--muted); }
        .file .details .waits { color: var(--amber); }
        .file .error { grid-column: 2 / -1; font-family: var(--mono); font-size: 12px; color: var(--red); background: var(--red-bg);
                       border-radius: 6px; padding: 6px 8px; overflow-wrap: anywhere; white-space: pre-wrap; }
        .file.amber .error { color: var(--amber); background: var(--amber-bg); }
        .empty { color: var(--muted); text-align: center; padding: 20px 0 8px; margin: 0; }

        footer { display: flex; justify-content: space-between; gap: 12px; flex-wrap: wrap; max-width: 1180px; margin: 0 auto;
                 padding: 0 24px 24px; font-size: 13px; color: var(--muted); }
        .toast { position: fixed; bottom: 18px; left: 50%; transform: translateX(-50%); background: var(--text); color: var(--panel);
                 border-radius: 8px; padding: 8px 16px; font-size: 14px; box-shadow: 0 4px 16px rgba(0, 0, 0, .2); max-width: 90vw; }

        @media (max-width: 640px) {
          .top { padding: 10px 14px; gap: 8px; }
          .summary { order: 3; flex-basis: 100%; }
          main { padding: 14px 12px 4px; }
          .cards { grid-template-columns: 1fr; }
          .files { padding: 12px; }
          .actions { width: 100%; }
          .actions button { flex: 1; }
          .file { grid-template-columns: 14px minmax(0, 1fr); }
          .file .error { grid-row: 2; }
          .file .retry { grid-column: 2; grid-row: 3; justify-self: start; }
          footer { padding: 0 12px 16px; }
        }
        """#
}
