// The inspector's styles, inside its shadow root: the page's CSS does not reach in and these do
// not reach out. Light or dark as the system prefers (`theme="light"` or `"dark"` on the
// element forces one); colours keep text at 4.5:1 or more against its background. Sizes are
// in rem and em and the layout follows the element's own width (a container query), so it
// reads at 200% zoom: one column when narrow, tables that scroll sideways rather than overflow.

const DARK = `
  --bg: #16181d; --panel: #1e2128; --line: #343a46; --text: #e6e9ef; --dim: #a7afbd; --accent: #a5b4fc; --accent-text: #16181d;
  --green: #86efac; --green-bg: #173a26; --blue: #93c5fd; --blue-bg: #1e2f55; --amber: #fcd34d; --amber-bg: #3f3212;
  --red: #fca5a5; --red-bg: #4a1c1c; --violet: #c4b5fd; --violet-bg: #33265a; --teal: #5eead4; --teal-bg: #0f3835;
  --orange: #fdba74; --orange-bg: #45260f; --grey-bg: #2a2e37; --focus: #fbbf24;`;

export const STYLE = `
:host {
  --bg: #fff; --panel: #f6f7f9; --line: #dde1e7; --text: #1d2330; --dim: #566072; --accent: #4338ca; --accent-text: #fff;
  --green: #166534; --green-bg: #dcfce7; --blue: #1e40af; --blue-bg: #dbeafe; --amber: #854d0e; --amber-bg: #fef3c7;
  --red: #b91c1c; --red-bg: #fee2e2; --violet: #5b21b6; --violet-bg: #ede9fe; --teal: #115e59; --teal-bg: #ccfbf1;
  --orange: #9a3412; --orange-bg: #ffedd5; --grey-bg: #eef0f3; --focus: #2563eb;
  display: block; container-type: inline-size; color-scheme: light;
  font: 0.875rem/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  color: var(--text); background: var(--bg); border: 1px solid var(--line); border-radius: 0.6em;
}
@media (prefers-color-scheme: dark) { :host(:not([theme='light'])) { ${DARK} color-scheme: dark; } }
:host([theme='dark']) { ${DARK} color-scheme: dark; }
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
code, pre { font: 0.92em ui-monospace, 'SF Mono', Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.25em 0 0.6em; padding: 0.5em; background: var(--panel); border-radius: 0.4em; max-height: 18em; overflow: auto; }
h2, h3 { margin: 0; }
h2 { font-size: 1.05em; display: flex; gap: 0.5em; align-items: center; flex-wrap: wrap; }
h2 code { overflow-wrap: anywhere; }
h3 { font-size: 0.8em; text-transform: uppercase; letter-spacing: 0.04em; color: var(--dim); margin: 1.1em 0 0.4em; }
small { font-weight: normal; text-transform: none; letter-spacing: 0; font-size: 0.95em; }
.dim, .meta, .legend { color: var(--dim); }
.meta { margin: 0.2em 0 0.6em; }
.legend { margin: 0 0 0.6em; font-size: 0.92em; }
.empty { color: var(--dim); font-style: italic; }
.bad { color: var(--red); font-weight: 600; }
button, input, select, textarea { font: inherit; color: inherit; }
button { border: 1px solid var(--accent); background: var(--accent); color: var(--accent-text); padding: 0.3em 0.8em; border-radius: 0.4em; cursor: pointer; font-weight: 600; }
button.small { padding: 0 0.6em; font-size: 0.9em; }
button.link { background: none; border: 0; padding: 0; color: var(--accent); font-weight: inherit; text-align: left; text-decoration: underline; text-underline-offset: 2px; }
input, select, textarea { background: var(--bg); border: 1px solid var(--line); border-radius: 0.4em; padding: 0.2em 0.4em; min-width: 0; }
:focus-visible { outline: 2px solid var(--focus); outline-offset: 2px; }
.top { display: flex; flex-wrap: wrap; gap: 0.4em 1em; align-items: center; padding: 0.5em 0.75em; border-bottom: 1px solid var(--line); background: var(--panel); border-radius: 0.6em 0.6em 0 0; }
.top .name { font-weight: 700; }
.live { color: var(--dim); font-size: 0.9em; }
.live::before { content: ''; display: inline-block; width: 0.55em; height: 0.55em; border-radius: 50%; background: var(--green); margin-right: 0.35em; }
.live.off::before { background: var(--dim); }
[role='tablist'] { display: flex; flex-wrap: wrap; gap: 0.25em; }
[role='tab'] { background: transparent; color: var(--text); border: 1px solid transparent; font-weight: 500; padding: 0.2em 0.6em; }
[role='tab'][aria-selected='true'] { background: var(--bg); border-color: var(--line); font-weight: 700; }
[role='tab'] b { color: var(--dim); font-weight: 600; margin-left: 0.2em; }
.panel { padding: 0.75em; min-width: 0; }
.toast { margin: 0; padding: 0 0.75em; min-height: 0; }
.toast:not(:empty) { padding: 0.4em 0.75em; background: var(--green-bg); color: var(--green); }
.toast.error:not(:empty) { background: var(--red-bg); color: var(--red); }
.workflows { display: grid; grid-template-columns: minmax(0, 1fr); gap: 1em; }
@container (min-width: 56rem) { .workflows { grid-template-columns: minmax(18rem, 26rem) minmax(0, 1fr); } }
.filters .fields { display: flex; flex-wrap: wrap; gap: 0.4em 0.8em; align-items: center; margin: 0.4em 0; }
.filters label { display: inline-flex; gap: 0.3em; align-items: center; color: var(--dim); }
.filters .grow { flex: 1 1 14em; }
.filters .grow input { flex: 1; }
.chips { display: flex; flex-wrap: wrap; gap: 0.3em; margin-bottom: 0.5em; }
.chip { background: var(--bg); color: var(--text); border: 1px solid var(--line); font-weight: 500; padding: 0.1em 0.55em; text-transform: none; }
.chip[aria-pressed='true'] { background: var(--text); color: var(--bg); border-color: var(--text); }
.chip b { font-weight: 700; margin-left: 0.2em; }
.line { margin: 0.2em 0 0.4em; color: var(--dim); }
.vlist { position: relative; height: min(65vh, 40rem); min-height: 12rem; overflow: auto; border: 1px solid var(--line); border-radius: 0.4em; }
.vwindow { position: absolute; top: 0; left: 0; right: 0; will-change: transform; }
.row { height: 3.4em; padding: 0.3em 0.6em; border-bottom: 1px solid var(--line); cursor: pointer; overflow: hidden; }
.row .l1, .row .l2 { display: flex; gap: 0.5em; align-items: center; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; height: 1.4em; }
.row .l2 { color: var(--dim); display: block; }
.row .id { overflow: hidden; text-overflow: ellipsis; min-width: 0; }
.row .when { margin-left: auto; color: var(--dim); font-size: 0.9em; }
.row.loading { color: var(--dim); font-style: italic; }
.row:hover { background: var(--panel); }
.row.selected { background: var(--blue-bg); }
.vlist:focus-visible .row.active { outline: 2px solid var(--focus); outline-offset: -2px; }
.pill, .kind, .badge { display: inline-block; border-radius: 999px; padding: 0 0.55em; font-size: 0.82em; font-weight: 700; background: var(--grey-bg); color: var(--dim); white-space: nowrap; }
.kind { border-radius: 0.3em; text-transform: uppercase; font-size: 0.72em; letter-spacing: 0.03em; }
.pill.running, .pill.started, .pill.claimed, .kind.retry, .kind.child { background: var(--blue-bg); color: var(--blue); }
.pill.completed, .pill.done, .pill.synced, .kind.lifecycle { background: var(--green-bg); color: var(--green); }
.pill.failed, .pill.blocked, .pill.error, .kind.failed { background: var(--red-bg); color: var(--red); }
.pill.retrying, .pill.waiting, .pill.pending, .pill.prepared, .pill.due, .kind.timer, .kind.sleep { background: var(--amber-bg); color: var(--amber); }
.pill.outcomeUnknown, .pill.offline, .kind.recovered { background: var(--orange-bg); color: var(--orange); }
.kind.step { background: var(--violet-bg); color: var(--violet); }
.kind.signal, .kind.wait { background: var(--teal-bg); color: var(--teal); }
.pill.cancelled, .pill.timedOut { color: var(--text); }
.run-head { display: flex; flex-wrap: wrap; gap: 0.5em 1em; align-items: center; justify-content: space-between; }
.actions { display: flex; flex-wrap: wrap; gap: 0.4em; }
.scroll-x { overflow-x: auto; max-width: 100%; }
table { width: 100%; border-collapse: collapse; }
th, td { padding: 0.25em 0.45em; border-top: 1px solid var(--line); vertical-align: top; text-align: left; }
th { font-size: 0.85em; color: var(--dim); font-weight: 600; border-top: 0; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.key { overflow-wrap: anywhere; min-width: 8em; }
td.wrap, td.what { overflow-wrap: anywhere; }
tr.unknown td, tr.dead td, tr.ev.recovered td { background: var(--orange-bg); }
tr.ev.failed td { background: var(--red-bg); }
td pre { max-height: 8em; }
.spans { list-style: none; margin: 0; padding: 0; container-type: inline-size; }
.span-row { display: grid; grid-template-columns: minmax(8em, 14em) minmax(6em, 1fr); gap: 0.1em 0.6em; align-items: center; padding: 0.15em 0; border-top: 1px solid var(--line); }
.span-row .span-words { grid-column: 2; color: var(--dim); font-size: 0.85em; }
.span-name { overflow-wrap: anywhere; }
.track, .ticks { position: relative; height: 1.1em; background: var(--panel); border-radius: 0.2em; }
.ticks { background: none; height: 1.2em; font-size: 0.75em; color: var(--dim); }
.ticks span { position: absolute; transform: translateX(-50%); white-space: nowrap; }
.ticks span:first-child { transform: none; }
.ticks span:last-child { transform: translateX(-100%); }
.span-row.axis { border-top: 0; }
/* The axis's five times need the room of a wide timeline (its last one is right-aligned): on a
   narrower one the quarters go, on a narrow one the middle too, rather than overlap. */
@container (max-width: 40rem) { .ticks span:nth-child(2n) { display: none; } }
@container (max-width: 28rem) { .ticks span:nth-child(3) { display: none; } }
.span-row.axis .ticks { grid-column: 2; }
.bar { position: absolute; top: 0.15em; bottom: 0.15em; border-radius: 0.2em; background: var(--blue); min-width: 2px; }
.bar.done, .bar.attempt.done, .bar.run.completed { background: var(--green); }
.bar.failed, .bar.attempt.failed, .bar.run.failed, .bar.run.cancelled { background: var(--red); }
.bar.attempt.unknown, .bar.attempt.cut-off, .bar.outcomeUnknown { background: var(--orange); }
.bar.backoff { background: repeating-linear-gradient(45deg, var(--amber) 0 3px, transparent 3px 6px); }
.bar.sleep, .bar.waiting { background: var(--amber); }
.bar.wait { background: var(--teal); }
.bar.timedOut { background: var(--dim); }
.bar.running { background: var(--blue); }
.mark { position: absolute; top: -0.1em; bottom: -0.1em; width: 2px; background: var(--text); }
.mark.signal { background: var(--teal); width: 3px; }
.mark.cancel { background: var(--red); width: 3px; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0 1.2em; }
@container (min-width: 40rem) { .pair { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); } .pair.wide-right { grid-template-columns: minmax(0, 1fr) minmax(0, 2fr); } }
.artifact { margin-bottom: 0.6em; }
ul.plain { list-style: none; margin: 0; padding: 0; }
ul.plain li { padding: 0.15em 0; overflow-wrap: anywhere; }
ul.diff { margin: 0; padding-left: 1.2em; }
ul.diff .added { color: var(--green); } ul.diff .removed { color: var(--red); }
.lookup { display: flex; flex-wrap: wrap; gap: 0.4em; align-items: center; margin-bottom: 0.6em; }
.kv { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: 0.2em 0.8em; margin: 0 0 0.6em; }
.kv dt { color: var(--dim); }
.kv dd { margin: 0; overflow-wrap: anywhere; }
dialog { color: var(--text); background: var(--bg); border: 1px solid var(--line); border-radius: 0.6em; padding: 1em 1.2em; width: min(36rem, 92vw); max-height: 90vh; overflow: auto; }
dialog::backdrop { background: rgba(0, 0, 0, 0.45); }
dialog h2 { margin-bottom: 0.5em; }
dialog label { display: grid; gap: 0.2em; margin: 0.5em 0; color: var(--dim); }
dialog textarea { min-height: 5em; }
dialog .buttons { display: flex; justify-content: flex-end; gap: 0.5em; margin-top: 1em; }
dialog button[value='cancel'] { background: var(--bg); color: var(--accent); }
dialog .error:not(:empty) { color: var(--red); font-weight: 600; }
`;
