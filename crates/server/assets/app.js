// Scriptorium Memory page (design section 09): Topics, Timeline, Recent and Core.
// Plain DOM, no framework. Every piece of data is inserted with textContent, except the
// server-rendered, sanitized `html` fields of the API. UI state lives in memory only.

const POLL_MS = 15000;
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

// ---- token: taken from the URL fragment once, removed from the address bar, and kept for the
// tab's life in sessionStorage (so a reload, a link within the tab and Back keep working; it is
// never a cookie, so no request carries it unless this script adds it)
const TOKEN_KEY = 'scriptorium-token';
let token = '';
{
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    try { sessionStorage.setItem(TOKEN_KEY, token); } catch { /* storage off: memory only */ }
    history.replaceState(null, '', location.pathname + location.search);
  } else {
    try { token = sessionStorage.getItem(TOKEN_KEY) || ''; } catch { token = ''; }
  }
}

// ---- deep links: the view is in the fragment (#/topic/<path>[/<block>], #/day/<date>,
// #/record/<archive>/<anchor>, #/session/<id>, #/<section>), pushed as the view changes, read on
// load and Back
let routing = false;
function setRoute(hash) {
  if (routing || location.hash === hash) return;
  history.pushState(null, '', hash);
}
function route() {
  const h = location.hash;
  routing = true;
  try {
    let m;
    if ((m = /^#\/topic\/(.+?)(?:\/\^([0-9a-z]+))?$/.exec(h))) openTopic(decodeURIComponent(m[1]), m[2]);
    else if ((m = /^#\/day\/([0-9-]+)$/.exec(h))) openDay(m[1]);
    else if ((m = /^#\/record\/(.+)\/(source-[0-9a-f]+)$/.exec(h))) openRecord(decodeURIComponent(m[1]), m[2]);
    else if ((m = /^#\/session\/(.+)$/.exec(h))) openSession(decodeURIComponent(m[1]));
    else if ((m = /^#\/(topics|timeline|recent|core|sessions)$/.exec(h))) selectSection(m[1]);
    else return false;
    return true;
  } finally {
    routing = false;
  }
}
window.addEventListener('popstate', () => route());

const state = {
  section: 'topics',
  status: null,
  topics: null, // [{path,title,type,size,mtime}]
  timeline: null, // [{date,size,mtime}]
  recent: null, // {rows, limit}
  commitDiffs: new Map(), // commit → its files' diffs, once asked for in Recent → Changes
  core: null,
  coreMode: 'preview', // 'preview' | 'source'
  current: null, // selected topic path
  doc: null, // {path, content, revision, html}
  mode: 'preview', // topic: 'preview' | 'edit'
  drafts: new Map(), // key (topic path or '#core') -> {text, base}
  diag: new Map(), // key -> {message, violations}
  conflict: new Set(), // keys whose last save hit CONCURRENT_UPDATE
  notice: null, // {key, text}
  day: null, // selected timeline date
  dayDoc: null,
  open: new Set(), // expanded folder / year / month keys
  closed: new Set(),
  query: '',
  hits: null,
  error: null, // section-level load error message
  confirmDelete: false,
  record: null, // an archived record opened from a citation: {path, anchor, doc, whole}
  sessions: null, // {sessions: [row], writer} of GET /api/memory/sessions
  session: null, // the open session's id
  thread: null, // its thread (GET /api/memory/sessions/<id>)
  written: null, // {id, ok, text}: what the last "Write now" answered
  writing: false,
  compose: null, // 'note' | 'topic': the add-note or new-topic form in the detail pane
  composeError: null,
  forget: null, // {what, label, after, plan, error, busy}: a forget being planned or confirmed
  forgotten: null, // what the last confirmed forget removed, said once above the view
};

// ---- small DOM helpers
function el(tag, attrs, ...kids) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

function chevron() {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'chev');
  svg.setAttribute('viewBox', '0 0 14 14');
  svg.setAttribute('width', '14');
  svg.setAttribute('height', '14');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', 'M5.25 3.5 8.75 7l-3.5 3.5');
  path.setAttribute('fill', 'none');
  path.setAttribute('stroke', 'currentColor');
  path.setAttribute('stroke-width', '1.5');
  path.setAttribute('stroke-linecap', 'round');
  path.setAttribute('stroke-linejoin', 'round');
  svg.append(path);
  return svg;
}

function html(node, markup) {
  // Only ever called with the server's sanitized preview HTML.
  node.innerHTML = markup || '';
  return node;
}

const fmtBytes = (n) =>
  n == null ? '' : n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
const fmtNum = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');
function fmtTime(t) {
  if (t === null || t === undefined || t === '') return '';
  let d;
  if (typeof t === 'number') d = new Date(t < 1e12 ? t * 1000 : t);
  else d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return d.toLocaleString('en-US', { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
function dateParts(date) {
  const [y, m, d] = String(date).split('-');
  return { y, m, d };
}
function weekday(date) {
  const { y, m, d } = dateParts(date);
  if (!d) return '';
  const t = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  return Number.isNaN(t.getTime()) ? '' : DAYS[t.getUTCDay()];
}
function dateTitle(date) {
  const { y, m, d } = dateParts(date);
  const month = m ? MONTHS[Number(m) - 1] || m : '';
  if (d) return `${month} ${Number(d)}, ${y}`;
  if (m) return `${month} ${y}`;
  return String(y);
}

// ---- API
class ApiError extends Error {
  constructor(status, body) {
    // Every error answer is {ok: false, error: {code, message, path, violations}}.
    const err = (body && body.error) || {};
    const message = typeof err === 'string' ? err : err.message || `HTTP ${status}`;
    super(message);
    this.status = status;
    this.code = typeof err === 'object' ? err.code : undefined;
    this.violations = (typeof err === 'object' && err.violations) || [];
    this.details = (typeof err === 'object' && err.details) || {};
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, { error: { code: 'NETWORK', message: 'The server cannot be reached. Is `scriptorium serve` still running?' } });
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (res.status === 401) gate('auth');
  if (res.status === 503 && data && data.error && data.error.code === 'MEMORY_DISABLED') gate('disabled');
  if (!res.ok || (data && data.ok === false)) throw new ApiError(res.status, data);
  return { data, headers: res.headers };
}
const enc = (p) => p.split('/').map(encodeURIComponent).join('/');
// Topic paths are kept relative to topics/ (the form the topics API takes); rows from other
// routes may carry the workspace-relative form.
const rel = (p) => String(p || '').replace(/^topics\//, '');

// ---- full-page states (bad token, memory disabled)
let gated = false;
function gate(kind) {
  if (gated) return;
  if (kind === 'auth') try { sessionStorage.removeItem(TOKEN_KEY); } catch { /* nothing kept */ }
  gated = true;
  clearInterval(pollTimer);
  const g = $('gate');
  g.replaceChildren();
  const card =
    kind === 'auth'
      ? el('div', { class: 'empty', role: 'alert' },
          el('div', { class: 'glyph', 'aria-hidden': 'true', text: '!' }),
          el('h2', { text: 'This page needs its access link' }),
          el('p', {}, 'The access token is missing or no longer valid. Open the link printed by ',
            el('code', { text: 'scriptorium serve' }), ' (it ends in ', el('code', { text: '#token=…' }), ').'))
      : el('div', { class: 'empty', role: 'alert' },
          el('div', { class: 'glyph', 'aria-hidden': 'true', text: '⊘' }),
          el('h2', { text: 'Memory is disabled' }),
          el('p', { text: 'This Scriptorium is configured without a memory backend (memory.backend = none), so there is nothing to show. Enable the backend and restart the server.' }));
  g.append(card);
  g.hidden = false;
  $('shell').hidden = true;
}

// ---- loading
async function loadStatus() {
  const { data } = await api('GET', '/api/memory/status');
  state.status = data;
}
async function loadTopics() {
  const { data } = await api('GET', '/api/memory/topics');
  state.topics = (data || []).map((t) => ({ ...t, path: rel(t.path) })).filter((t) => t.path !== 'core.md');
}
async function loadTimeline() {
  const { data } = await api('GET', '/api/memory/timeline');
  state.timeline = data || [];
}
async function loadRecent() {
  const { data, headers } = await api('GET', '/api/memory/recent');
  const limit = Number(headers.get('X-Memory-Recent-Limit'));
  state.recent = { rows: data || [], limit: Number.isFinite(limit) && limit > 0 ? limit : null };
}
async function loadCore() {
  const { data } = await api('GET', '/api/memory/core');
  state.core = data;
}
async function loadTopic(path) {
  let data;
  try {
    ({ data } = await api('GET', `/api/memory/topics/${enc(path)}`));
  } catch (e) {
    // A topic that is gone shows no stale text beside the error.
    if (e.status === 404 && state.current === path) state.doc = null;
    throw e;
  }
  if (state.current === path) state.doc = { ...data, path };
  return data;
}
async function loadDay(date) {
  const { data } = await api('GET', `/api/memory/timeline/${encodeURIComponent(date)}`);
  if (state.day === date) state.dayDoc = data;
}

// An archived record: `path` relative to sources/, `anchor` its source-… id.
async function loadRecord(path, anchor) {
  const { data } = await api('GET', `/api/memory/sources/${enc(path)}?anchor=${encodeURIComponent(anchor)}`);
  if (state.record && state.record.anchor === anchor) state.record.doc = data;
  render();
}
async function loadSessions() {
  const { data } = await api('GET', '/api/memory/sessions');
  state.sessions = data;
}
async function loadThread(id) {
  const { data } = await api('GET', `/api/memory/sessions/${encodeURIComponent(id)}`);
  if (state.session === id) state.thread = data.thread;
}
async function loadConversation(path) {
  const { data } = await api('GET', `/api/memory/sources/${enc(path)}`);
  if (state.record && state.record.path === path) state.record.whole = data;
  render();
}

// A citation's target (`…/sources/<path>#source-…`, as a topic links it), or null.
function citation(href) {
  const m = /(?:^|\/)sources\/([^#?]+\.md)#(source-[0-9a-f]+)$/.exec(href || '');
  return m ? { path: decodeURIComponent(m[1]), anchor: m[2] } : null;
}

async function guarded(fn) {
  try {
    state.error = null;
    await fn();
  } catch (e) {
    if (!gated) state.error = e.message || String(e);
  }
  render();
}

// ---- navigation
function setView(view) {
  $('app').dataset.view = view;
}
function narrow() {
  return window.matchMedia('(max-width: 719.98px)').matches;
}

function selectSection(section, detail) {
  state.compose = null;
  state.forget = null;
  state.forgotten = null;
  setRoute(`#/${section}`);
  state.section = section;
  state.record = null;
  state.error = null;
  state.confirmDelete = false;
  state.notice = null;
  if (section === 'sessions') state.session = null;
  const hasList = section === 'topics' || section === 'timeline' || section === 'sessions';
  setView(detail || !hasList ? 'detail' : 'list');
  render();
  const loaders = { topics: loadTopics, timeline: loadTimeline, recent: loadRecent, core: loadCore, sessions: loadSessions };
  guarded(loaders[section]);
  if (narrow() && !hasList) focusHead();
}

function focusHead() {
  requestAnimationFrame(() => {
    const back = $('back');
    if (narrow() && back) back.focus();
  });
}

function openTopic(raw, anchor) {
  const path = rel(raw);
  state.compose = null;
  state.forget = null;
  state.forgotten = null;
  setRoute(`#/topic/${encodeURIComponent(path)}${anchor && /^\^?[0-9a-z]+$/.test(anchor) ? `/^${anchor.replace(/^\^/, '')}` : ''}`);
  state.section = 'topics';
  state.record = null;
  if (state.current !== path) {
    state.current = path;
    state.doc = null;
    state.mode = state.drafts.has(path) ? 'edit' : 'preview';
  }
  state.confirmDelete = false;
  state.notice = null;
  setView('detail');
  render();
  focusHead();
  guarded(async () => {
    await loadTopic(path);
    if (anchor) {
      render();
      const target = document.getElementById(anchor) || document.getElementById(`^${anchor}`) || document.querySelector(`[id$="${CSS.escape(anchor)}"]`);
      if (target) target.scrollIntoView({ block: 'center' });
    }
  });
}

function openDay(date) {
  state.compose = null;
  state.forget = null;
  state.forgotten = null;
  setRoute(`#/day/${date}`);
  state.section = 'timeline';
  state.record = null;
  state.day = date;
  state.dayDoc = null;
  setView('detail');
  render();
  focusHead();
  guarded(() => loadDay(date));
}

function openCompose(kind) {
  state.compose = kind;
  state.forget = null;
  state.forgotten = null;
  state.composeError = null;
  state.record = null;
  state.section = 'topics';
  setView('detail');
  render();
  requestAnimationFrame(() => $(kind === 'note' ? 'note-text' : 'new-topic-path')?.focus());
}

function renderCompose(body) {
  const note = state.compose === 'note';
  const form = el('form', { class: 'doc compose', id: note ? 'note-form' : 'topic-form' });
  if (note) {
    setHead([el('span', { class: 't', text: 'Add a note' })], 'Remember one fact in your words: archived as your own record and cited by a new block');
    form.append(
      el('label', { for: 'note-text', text: 'The fact' }),
      el('textarea', { id: 'note-text', rows: '4', placeholder: 'Dana moved to Lisbon in May.', required: true }),
      el('label', { class: 'check' }, el('input', { type: 'checkbox', id: 'note-core' }), 'Pin it to the core (every system prompt sees it)'));
  } else {
    setHead([el('span', { class: 't', text: 'New topic' })], 'A new topic under topics/, starting with one fact in your words (every block cites its source)');
    form.append(
      el('label', { for: 'new-topic-path', text: 'Path under topics/' }),
      el('input', { id: 'new-topic-path', placeholder: 'people/ana', required: true, autocomplete: 'off', spellcheck: 'false' }),
      el('label', { for: 'note-text', text: 'Its first fact' }),
      el('textarea', { id: 'note-text', rows: '3', placeholder: 'Ana runs the Lisbon office.', required: true }));
  }
  if (state.composeError) form.append(el('p', { class: 'banner error', id: 'compose-error', role: 'alert', text: state.composeError }));
  form.append(el('div', { class: 'turns' },
    el('button', { type: 'submit', class: 'btn primary', id: 'compose-save' }, note ? 'Remember' : 'Create'),
    el('button', { type: 'button', class: 'btn', onclick: () => { state.compose = null; render(); } }, 'Cancel')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(submitNote);
  });
  body.append(form);
}

async function submitNote() {
  const text = $('note-text').value.trim();
  const topicField = $('new-topic-path');
  const topic = topicField ? rel(topicField.value.trim()).replace(/^\/+/, '').replace(/\.md$/, '') : '';
  if (!text || (topicField && !topic)) return;
  const core = !topicField && $('note-core').checked;
  try {
    const body = topic ? { text, topic } : { text, core };
    const { data } = await api('POST', '/api/memory/notes', body);
    await refreshLists();
    const where = data.topic_path || (data.changed_files || []).find((f) => f.startsWith('topics/') && f !== 'topics/core.md') || 'topics/core.md';
    if (where === 'topics/core.md') selectSection('core', true);
    else openTopic(where);
    state.notice = { key: rel(where), text: data.noop ? 'Already noted.' : 'Noted.' };
    render();
  } catch (e) {
    if (gated) return;
    state.composeError = e.message;
    render();
  }
}

function closeRecord() {
  state.record = null;
  const s = state.section;
  setRoute(s === 'topics' && state.current ? `#/topic/${encodeURIComponent(state.current)}` : s === 'timeline' && state.day ? `#/day/${state.day}` : s === 'sessions' && state.session ? `#/session/${encodeURIComponent(state.session)}` : `#/${s}`);
  render();
}

function openRecord(path, anchor) {
  state.compose = null;
  state.forget = null;
  state.forgotten = null;
  setRoute(`#/record/${encodeURIComponent(path)}/${anchor}`);
  const whole = state.record && state.record.path === path ? state.record.whole : null;
  state.record = { path, anchor, doc: null, whole };
  state.error = null;
  setView('detail');
  render();
  focusHead();
  guarded(() => loadRecord(path, anchor));
}

// ---- rendering: secondary column
function renderNav() {
  for (const b of document.querySelectorAll('.nav-item')) {
    const on = b.dataset.section === state.section;
    b.classList.toggle('active', on);
    if (on) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  $('count-topics').textContent = state.topics ? String(state.topics.length) : '';
  $('count-recent').textContent = state.recent ? String(state.recent.rows.length) : '';
  $('count-timeline').textContent = '';
  const s = state.status;
  $('top-meta').textContent = s && s.workspace ? String(s.workspace) : '';
}

function isOpen(key, byDefault) {
  if (state.open.has(key)) return true;
  if (state.closed.has(key)) return false;
  return byDefault;
}
function toggle(key, byDefault) {
  if (isOpen(key, byDefault)) {
    state.open.delete(key);
    state.closed.add(key);
  } else {
    state.closed.delete(key);
    state.open.add(key);
  }
  renderContext();
  const again = document.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (again) again.focus();
}

function folderRow(key, label, n, depth, byDefault) {
  const open = isOpen(key, byDefault);
  return el('button', { type: 'button', class: `row folder${depth ? ` d${depth}` : ''}`, 'aria-expanded': String(open), 'data-key': key, onclick: () => toggle(key, byDefault) },
    chevron(), el('span', { class: 'row-main', text: label }), el('span', { class: 'badge-n', text: String(n) }));
}

function renderContext() {
  const ctx = $('context');
  ctx.replaceChildren();
  if (state.section === 'topics') {
    const input = el('input', { type: 'search', id: 'search', placeholder: 'Search topics', 'aria-label': 'Search topics', autocomplete: 'off', spellcheck: 'false' });
    input.value = state.query;
    input.addEventListener('input', () => onSearch(input.value));
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        input.value = '';
        onSearch('');
      }
    });
    ctx.append(el('div', { class: 'search', role: 'search' }, el('span', { class: 'glyph', 'aria-hidden': 'true', text: '⌕' }), input));
    ctx.append(el('div', { class: 'list-actions' },
      el('button', { type: 'button', class: 'btn', id: 'add-note', onclick: () => openCompose('note') }, 'Add note'),
      el('button', { type: 'button', class: 'btn', id: 'new-topic', onclick: () => openCompose('topic') }, 'New topic')));
    ctx.append(state.query.trim() ? searchList() : topicList());
  } else if (state.section === 'timeline') {
    ctx.append(timelineList());
  } else if (state.section === 'sessions') {
    ctx.append(sessionList());
  } else {
    const label = state.section === 'recent' ? 'Recent memory' : 'Core memory';
    ctx.append(el('div', { class: 'list' },
      el('button', { type: 'button', class: 'row active only-narrow', onclick: () => { setView('detail'); focusHead(); } },
        el('span', { class: 'glyph', 'aria-hidden': 'true', text: state.section === 'recent' ? '⌁' : '✦' }),
        el('span', { class: 'row-main', text: label }))));
  }
}

function topicRow(t, depth) {
  const title = t.title || t.path.replace(/\.md$/, '');
  const d = state.drafts.get(t.path);
  const draft = d && d.text !== d.orig;
  return el('button', { type: 'button', class: `row topic${depth ? ` d${depth}` : ''}${state.current === t.path ? ' active' : ''}`, title: t.path, 'data-path': t.path, 'aria-current': state.current === t.path ? 'true' : null, onclick: () => openTopic(t.path) },
    el('span', { class: 'row-main', text: title }),
    el('span', { class: 'row-side', text: draft ? 'draft' : fmtBytes(t.size) }));
}

function topicList() {
  const list = el('div', { class: 'list', id: 'topic-list', 'aria-label': 'Saved topics' });
  if (!state.topics) {
    list.append(el('div', { class: 'hint', text: state.error ? 'Topics could not be loaded.' : 'Loading…' }));
    return el('div', { class: 'context' }, el('div', { class: 'label', text: 'Saved topics' }), list);
  }
  if (state.topics.length === 0) {
    list.append(el('div', { class: 'hint' }, el('strong', { text: 'No topics yet' }), el('br'), 'New durable topics appear here.'));
  }
  const groups = new Map();
  for (const t of state.topics) {
    const type = t.type || '';
    if (!groups.has(type)) groups.set(type, []);
    groups.get(type).push(t);
  }
  const byTitle = (a, b) => (a.title || a.path).localeCompare(b.title || b.path);
  for (const t of (groups.get('') || []).sort(byTitle)) list.append(topicRow(t, 0));
  for (const type of [...groups.keys()].filter((k) => k).sort()) {
    const items = groups.get(type).sort(byTitle);
    const key = `folder:${type}`;
    list.append(folderRow(key, type, items.length, 0, true));
    if (isOpen(key, true)) for (const t of items) list.append(topicRow(t, 1));
  }
  return el('div', { class: 'context' }, el('div', { class: 'label', text: 'Saved topics' }), list);
}

function searchList() {
  const list = el('div', { class: 'list', id: 'search-results', 'aria-label': 'Search results' });
  if (state.hits === null) list.append(el('div', { class: 'hint', text: 'Searching…' }));
  else if (state.hits.error) list.append(el('div', { class: 'hint', text: `Search failed: ${state.hits.error}` }));
  else if (state.hits.length === 0) list.append(el('div', { class: 'hint' }, el('strong', { text: 'Nothing recalled' }), el('br'), 'No memory matches this search.'));
  else
    for (const h of state.hits) {
      const path = String(h.path || '');
      const isTopic = h.kind !== 'source' && !path.startsWith('sources/');
      const anchor = String(h.anchor || '').replace(/^#/, '');
      const open = isTopic ? () => openTopic(path, h.anchor) : () => openRecord(path.replace(/^sources\//, ''), anchor);
      list.append(el('button', { type: 'button', class: `row hit${isTopic ? '' : ' source'}`, title: path, onclick: open },
        el('span', { class: 'row-main', text: h.origin || rel(path) }),
        h.origin ? el('span', { class: 'hit-path', text: path }) : null,
        el('span', { class: 'hit-text', text: h.content || '' })));
    }
  return el('div', { class: 'context' }, el('div', { class: 'label', text: 'Search results' }), list);
}

function timelineList() {
  const list = el('div', { class: 'list', id: 'timeline-list', 'aria-label': 'Timeline' });
  if (!state.timeline) {
    list.append(el('div', { class: 'hint', text: state.error ? 'The timeline could not be loaded.' : 'Loading…' }));
    return list;
  }
  if (state.timeline.length === 0) list.append(el('div', { class: 'hint' }, el('strong', { text: 'No dated memory yet' }), el('br'), 'Timeline days appear once topics cite dated sources.'));
  // year -> month -> entries, newest first (the API order)
  const years = new Map();
  for (const e of state.timeline) {
    const { y, m } = dateParts(e.date);
    if (!years.has(y)) years.set(y, new Map());
    const months = years.get(y);
    const mk = m || '';
    if (!months.has(mk)) months.set(mk, []);
    months.get(mk).push(e);
  }
  let first = true;
  for (const [y, months] of years) {
    const ykey = `year:${y}`;
    let n = 0;
    for (const arr of months.values()) n += arr.length;
    list.append(folderRow(ykey, y, n, 0, first));
    if (isOpen(ykey, first)) {
      let firstMonth = true;
      for (const [m, entries] of months) {
        if (!m) {
          for (const e of entries) list.append(dayRow(e, 1, `${y} · whole year`));
          continue;
        }
        const mkey = `month:${y}-${m}`;
        const openDefault = first && firstMonth;
        list.append(folderRow(mkey, MONTHS[Number(m) - 1] || m, entries.length, 1, openDefault));
        if (isOpen(mkey, openDefault))
          for (const e of entries) {
            const { d } = dateParts(e.date);
            list.append(dayRow(e, 2, d ? `${Number(d)} ${weekday(e.date)}` : `${MONTHS[Number(m) - 1] || m} · whole month`));
          }
        firstMonth = false;
      }
    }
    first = false;
  }
  return list;
}

function dayRow(e, depth, label) {
  return el('button', { type: 'button', class: `row day d${depth}${state.day === e.date ? ' active' : ''}`, 'data-date': e.date, 'aria-current': state.day === e.date ? 'true' : null, onclick: () => openDay(e.date) },
    el('span', { class: 'row-main', text: label }), el('span', { class: 'row-side', text: fmtBytes(e.size) }));
}

// ---- sessions: the imported conversations, each readable as a thread, written on request
function openSession(id) {
  state.compose = null;
  state.forget = null;
  state.forgotten = null;
  state.record = null;
  state.section = 'sessions';
  setRoute(`#/session/${encodeURIComponent(id)}`);
  if (state.session !== id) state.thread = null;
  state.session = id;
  state.error = null;
  setView('detail');
  render();
  focusHead();
  if (!state.sessions) guarded(loadSessions);
  guarded(() => loadThread(id));
}

function sessionName(s) {
  return s.title || s.id;
}
function projectName(p) {
  return p ? String(p).replace(/[\\/]+$/, '').split(/[\\/]/).pop() : '';
}

function sessionList() {
  const list = el('div', { class: 'list', id: 'session-list', 'aria-label': 'Imported sessions' });
  const rows = state.sessions && state.sessions.sessions;
  if (!rows) list.append(el('div', { class: 'hint', text: state.error ? 'Sessions could not be loaded.' : 'Loading…' }));
  else if (rows.length === 0) list.append(el('div', { class: 'hint' }, el('strong', { text: 'No sessions yet' }), el('br'), 'Conversations appear here once imported (scriptorium import) or seen by a hook.'));
  else
    for (const r of rows)
      list.append(el('button', { type: 'button', class: `row hit session${state.session === r.id ? ' active' : ''}`, 'data-session': r.id, 'aria-current': state.session === r.id ? 'true' : null, title: r.id, onclick: () => openSession(r.id) },
        el('span', { class: 'row-main', text: sessionName(r) }),
        el('span', { class: 'hit-text', text: [r.forgotten ? 'forgotten' : '', projectName(r.project), `${r.branches} branch${r.branches === 1 ? '' : 'es'}`, r.pending ? `${r.pending} to write` : 'all written', lastWrite(r) || fmtTime(r.updated_at_ms / 1000)].filter(Boolean).join(' · ') })));
  return el('div', { class: 'context' }, el('div', { class: 'label', text: 'Sessions' }), list);
}

// How a session's last write ended, in a few words (its row and its header).
function lastWrite(r) {
  const w = r && r.last_write;
  if (!w) return '';
  const when = fmtTime(Date.parse(w.at) / 1000);
  return w.outcome === 'success' ? `last write ${when}` : `last write failed (${w.reason_code || 'unknown'}) ${when}`;
}

function writerLine(w) {
  if (!w || !w.last_outcome) return 'No write has run yet.';
  if (w.last_outcome === 'success') return `The last write succeeded${w.last_success_at ? ` (${fmtTime(Date.parse(w.last_success_at) / 1000)})` : ''}.`;
  const f = w.last_failure || {};
  return `The last write failed: ${f.reason_code || 'unknown'}${f.at ? ` (${fmtTime(Date.parse(f.at) / 1000)})` : ''}.`;
}

// What the writer's model used (tokens today and this month, the cost when known) and the
// daily budget.
function usageLine(u) {
  if (!u || !u.today) return '';
  const cost = (x) => (x.cost_usd ? ` ($${x.cost_usd.toFixed(4)})` : '');
  const budget = u.max_tokens_per_day == null ? 'no daily budget'
    : u.budget_reached ? `budget of ${u.max_tokens_per_day} reached (WRITER_BUDGET_REACHED): writes wait for tomorrow (UTC)`
      : `budget ${u.max_tokens_per_day} a day`;
  return `Writer usage: ${u.today.total_tokens} tokens today${cost(u.today)}, ${u.month.total_tokens} this month${cost(u.month)}; ${budget}.`;
}

async function writeNow(id) {
  state.writing = true;
  state.written = null;
  render();
  try {
    const { data } = await api('POST', `/api/memory/sessions/${encodeURIComponent(id)}/write`);
    const fresh = data.batches.filter((b) => !b.recovered);
    const turns = fresh.reduce((n, b) => n + b.turns, 0);
    const n = data.pending;
    const left = n ? ` ${n} turn${n === 1 ? '' : 's'} still to write.` : '';
    // A recovered batch was already in memory (another write, or another clone): marked, not written again.
    const known = data.batches.length - fresh.length;
    const marked = known ? ` ${known} batch${known === 1 ? ' was' : 'es were'} already in memory and ${known === 1 ? 'is' : 'are'} now marked written.` : '';
    const text = fresh.length === 0
      ? (known ? `Nothing new to write.${marked}${left}` : n ? `Nothing was written.${left}` : 'Nothing to write: every turn of this session is already in memory.')
      : `Wrote ${turns} turn${turns === 1 ? '' : 's'} in ${fresh.length} batch${fresh.length === 1 ? '' : 'es'}.${marked}${left}`;
    state.written = { id, ok: true, text };
  } catch (e) {
    if (gated) return;
    state.written = { id, ok: false, text: `Nothing was written: ${e.message}` };
  }
  state.writing = false;
  await Promise.allSettled([loadThread(id), loadSessions()]);
  render();
}

function turnItem(t) {
  // An importer that knew no model once named the speaker "unknown": the role says more.
  const who = t.speaker && t.speaker !== 'unknown' ? t.speaker : t.role;
  const meta = [who, t.kind !== 'message' ? t.kind : '', fmtTime(Date.parse(t.created_at) / 1000)].filter(Boolean).join(' · ');
  const item = el('li', { class: `turn-item ${t.role}${t.forgotten ? ' gone' : ''}`, 'data-node': t.id },
    el('div', { class: 'rec-meta' },
      el('span', { text: meta }),
      t.forgotten ? el('span', { class: 'badge gone', text: 'forgotten' }) : null,
      t.record ? el('span', { class: `badge${t.written ? ' ok' : ''}`, text: t.written ? 'written' : 'to write' }) : null,
      t.children > 1 ? el('span', { class: 'badge fork', title: 'The conversation branches after this turn', text: `fork · ${t.children} branches` }) : null,
      t.link ? el('button', { type: 'button', class: 'link', onclick: () => { const c = citation(t.link); if (c) openRecord(c.path, c.anchor); } }, 'Record') : null),
    t.forgotten ? el('p', { class: 'hint', text: 'Forgotten: the text of this turn is gone.' }) : el('pre', { class: 'record-text', text: t.text + (t.cut ? ' …' : '') }));
  return item;
}

function renderSession(body) {
  const rows = state.sessions && state.sessions.sessions;
  if (!state.session) {
    setHead([el('span', { class: 't', text: 'Sessions' })], rows ? `${rows.length} imported conversation${rows.length === 1 ? '' : 's'}` : '');
    if (state.error) body.append(errorBanner(state.error, () => guarded(loadSessions)));
    body.append(el('p', { class: 'loading', id: 'writer-line', text: state.sessions ? writerLine(state.sessions.writer) : 'Loading…' }));
    const usage = state.sessions && usageLine(state.sessions.usage);
    if (usage) body.append(el('p', { class: 'loading', id: 'writer-usage', text: usage }));
    if (rows && rows.length) body.append(el('p', { class: 'loading', text: 'Select a session to read it as a thread.' }));
    return;
  }
  const id = state.session;
  const th = state.thread;
  const row = (th && th.session) || (rows || []).find((r) => r.id === id);
  const sub = row ? [projectName(row.project), `${row.branches} branch${row.branches === 1 ? '' : 'es'}`, row.pending ? `${row.pending} turn${row.pending === 1 ? '' : 's'} to write` : 'all written', `updated ${fmtTime(row.updated_at_ms / 1000)}`, lastWrite(row)].filter(Boolean).join(' · ') : id;
  const gone = !!(row && row.forgotten);
  setHead([el('span', { class: 't', text: row ? sessionName(row) : id }), gone ? el('span', { class: 'badge gone', text: 'forgotten' }) : null], sub,
    [el('button', { type: 'button', class: 'btn primary', id: 'write-now', disabled: state.writing || !th, onclick: () => writeNow(id) }, state.writing ? 'Writing…' : 'Write now'),
      gone ? null : el('button', { type: 'button', class: 'btn danger', id: 'forget-session', disabled: !th, title: 'Remove this conversation from memory everywhere', onclick: () => askForget({ session: id }, 'this session', () => Promise.allSettled([loadThread(id), loadSessions(), refreshLists()])) }, 'Forget')].filter(Boolean));
  if (state.written && state.written.id === id)
    body.append(el('div', { class: `banner${state.written.ok ? ' ok' : ' error'}`, role: 'status', id: 'write-result' }, el('span', { class: 'grow', text: state.written.text })));
  if (state.error) body.append(errorBanner(state.error, () => guarded(() => loadThread(id))));
  if (!th) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  const doc = el('section', { class: 'doc', id: 'session-thread', 'aria-label': 'The conversation' });
  for (const b of th.branches) {
    const label = b.head ? 'The conversation' : `Another branch${b.fork ? ', after the fork above' : ''} (${b.turns.length + b.hidden} turn${b.turns.length + b.hidden === 1 ? '' : 's'}${b.pending ? `, ${b.pending} to write` : ''})`;
    doc.append(el('div', { class: 'label', text: label }));
    if (b.hidden) doc.append(el('p', { class: 'hint', text: `${b.hidden} earlier turns are not shown.` }));
    doc.append(el('ol', { class: `thread-list${b.head ? '' : ' branch'}`, 'data-tip': b.tip }, b.turns.map(turnItem)));
  }
  body.append(doc);
}

// ---- forgetting: the plan (a dry run: nothing changes) is shown whole first; only "Forget all of
// this, everywhere" carries it out, and the view it came from is then read again
const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;

async function askForget(what, label, after) {
  const f = { what, label, after, plan: null, error: null, busy: false };
  state.forget = f;
  render();
  try {
    const { data } = await api('POST', '/api/memory/forget', what);
    f.plan = data.plan;
  } catch (e) {
    if (gated) return;
    f.error = e.message;
  }
  if (state.forget === f) render();
}

async function confirmForget() {
  const f = state.forget;
  if (!f || f.busy) return;
  f.busy = true;
  render();
  try {
    const { data } = await api('POST', '/api/memory/forget', { ...f.what, confirm: true });
    const p = data.plan;
    const remote = data.remote === 'replaced' ? " The sync remote's history was replaced." : data.remote === 'pending' ? ' The sync remote is replaced on the next sync.' : '';
    state.forgotten = `Forgotten everywhere: ${plural(p.messages, 'message')}, ${plural(p.records, 'record')}, ${plural(p.blocks.length, 'block')}; ${plural(data.commits_rewritten, 'git commit')} rewritten.${remote}`;
    state.forget = null;
    state.written = null;
    await f.after();
  } catch (e) {
    if (gated) return;
    f.busy = false;
    f.error = `Nothing was forgotten: ${e.message}`;
  }
  render();
}

function renderForget(body) {
  const f = state.forget;
  const p = f.plan;
  setHead([el('span', { class: 't', text: `Forget ${f.label}` }), el('span', { class: 'badge gone', text: 'cannot be undone' })], 'Nothing is forgotten until you confirm below');
  const close = el('button', { type: 'button', class: 'btn', id: 'forget-cancel', disabled: f.busy, onclick: () => { state.forget = null; render(); } }, p && !f.error ? 'Cancel' : 'Close');
  const box = el('section', { class: 'doc forget', id: 'forget-plan', 'aria-label': 'What this forget removes' });
  if (f.error) box.append(el('p', { class: 'banner error', role: 'alert', text: f.error }));
  if (!p) {
    if (!f.error) box.append(el('p', { class: 'loading', text: 'Working out what this removes…' }));
    box.append(el('div', { class: 'turns' }, close));
    body.append(box);
    return;
  }
  if (!p.messages && !p.records && !p.blocks.length && !p.uncited.length && !p.files.length && !p.sessions.length) {
    box.append(el('p', { class: 'lede', text: 'Nothing to forget: no session, record or block holds it.' }), el('div', { class: 'turns' }, close));
    body.append(box);
    return;
  }
  const ids = (list) => list.map((b) => `^${b}`).join(' ');
  const rows = [
    p.sessions.length && ['Sessions', p.sessions.join(', ')],
    ['Messages', `${p.messages} (their text; the conversation's shape stays)`],
    p.titles && ['Session titles', String(p.titles)],
    ['Records', `${p.records} (archived as tombstones: a citation then says "forgotten")`],
    ['Blocks', p.blocks.length ? `${p.blocks.length}: ${ids(p.blocks)}` : '0'],
    p.uncited.length && ['Citations', `dropped from ${ids(p.uncited)}`],
    ...p.files.map((file) => ['File', file]),
    ['Git commits', `${p.commits} rewritten`],
  ].filter(Boolean);
  box.append(
    el('div', { class: 'kicker', text: 'Cannot be undone' }),
    el('p', { class: 'lede', text: 'This removes, everywhere — the session store, the archive, the topics, the views, the search index, git history and the sync remote:' }),
    el('dl', { class: 'forget-list', id: 'forget-list' }, rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })])),
    el('div', { class: 'turns' },
      el('button', { type: 'button', class: 'btn danger solid', id: 'forget-confirm', disabled: f.busy, onclick: confirmForget }, f.busy ? 'Forgetting…' : 'Forget all of this, everywhere'),
      close));
  body.append(box);
}

// The topic a block was forgotten from, read again; a topic left with nothing goes with its last
// block, and the list is shown instead.
async function afterBlockForgotten(path) {
  await refreshLists();
  if ((state.topics || []).some((t) => t.path === path)) await loadTopic(path).catch(() => {});
  else if (state.current === path) {
    state.current = null;
    state.doc = null;
    setView('list');
  }
}

// A small Forget on each block of a topic's preview (the paragraph or item that ends in the
// block's invisible anchor).
function addBlockActions(article, path) {
  const done = new Set();
  for (const a of [...article.querySelectorAll('a.block-anchor')].reverse()) {
    const host = a.parentElement;
    const id = a.id.replace(/^\^/, '');
    if (done.has(host) || !/^(P|LI)$/.test(host.nodeName) || !/^[0-9A-Za-z-]+$/.test(id)) continue;
    done.add(host);
    host.append(' ', el('button', { type: 'button', class: 'forget-block', 'data-block': id, title: `Forget this block (^${id}) everywhere`,
      onclick: () => askForget({ block: id }, `block ^${id}`, () => afterBlockForgotten(path)) }, 'Forget'));
  }
}

// ---- rendering: content
function setHead(titleKids, sub, actions) {
  const t = $('head-title');
  t.replaceChildren(...titleKids.filter(Boolean));
  $('head-sub').textContent = sub || '';
  $('actions').replaceChildren(...(actions || []));
}

function segment(label, options, value, onChange) {
  return el('div', { class: 'segment', role: 'group', 'aria-label': label },
    options.map(([v, text]) => el('button', { type: 'button', 'aria-pressed': String(v === value), 'data-mode': v, onclick: () => onChange(v) }, text)));
}

function emptyCard(glyph, title, text) {
  return el('div', { class: 'empty' }, el('div', { class: 'glyph', 'aria-hidden': 'true', text: glyph }), el('h2', { text: title }), el('p', { text }));
}

function errorBanner(msg, retry) {
  return el('div', { class: 'banner error', role: 'alert' }, el('span', { class: 'grow', text: msg }), retry && el('button', { type: 'button', class: 'btn', onclick: retry, text: 'Retry' }));
}

function renderBody() {
  const body = $('body');
  body.classList.remove('editing');
  body.replaceChildren();
  if (state.forget) return renderForget(body);
  if (state.forgotten) body.append(el('div', { class: 'banner ok', role: 'status', id: 'forget-done' }, el('span', { class: 'grow', text: state.forgotten })));
  if (state.record) return renderRecord(body);
  if (state.compose) return renderCompose(body);
  ({ topics: renderTopic, timeline: renderDay, recent: renderRecent, core: renderCore, sessions: renderSession })[state.section](body);
}

function renderTopic(body) {
  if (!state.current) {
    setHead([el('span', { class: 't', text: 'Topics' })], 'Durable project, preference, and relationship memory');
    if (state.error) body.append(errorBanner(state.error, () => guarded(loadTopics)));
    if (state.topics && state.topics.length === 0)
      body.append(emptyCard('▧', 'No topics yet', 'Durable memory created by conversations and the background writer will appear here. Core rules are managed separately, in Core.'));
    else body.append(el('p', { class: 'loading', text: state.topics ? 'Select a topic to read it.' : 'Loading…' }));
    return;
  }
  const path = state.current;
  const meta = (state.topics || []).find((t) => t.path === path);
  const doc = state.doc && state.doc.path === path ? state.doc : null;
  const title = (meta && meta.title) || path;
  const sub = [`topics/${path}`, meta && fmtBytes(meta.size), meta && meta.mtime ? `modified ${fmtTime(meta.mtime)}` : ''].filter(Boolean).join(' · ');
  const editing = state.mode === 'edit';
  const actions = [segment('View', [['preview', 'Preview'], ['edit', 'Edit'], ['history', 'History']], state.mode, (m) => setTopicMode(m))];
  if (editing) {
    actions.push(el('button', { type: 'button', class: 'btn primary', id: 'save', onclick: saveTopic, disabled: !doc }, 'Save'));
    actions.push(el('button', { type: 'button', class: 'btn', id: 'cancel', onclick: cancelTopic }, 'Cancel'));
  } else if (state.confirmDelete) {
    actions.push(el('button', { type: 'button', class: 'btn danger', id: 'confirm-delete', onclick: deleteTopic }, 'Confirm delete'));
    actions.push(el('button', { type: 'button', class: 'btn', onclick: () => { state.confirmDelete = false; render(); } }, 'Keep'));
  } else {
    actions.push(el('button', { type: 'button', class: 'btn danger', id: 'delete', disabled: !doc, onclick: () => { state.confirmDelete = true; render(); } }, 'Delete'));
  }
  setHead([el('span', { class: 't', text: title }), meta && meta.type ? el('span', { class: 'badge', text: meta.type }) : null], sub, actions);
  renderNotice(body, path);
  if (state.error) body.append(errorBanner(state.error, () => guarded(() => loadTopic(path))));
  if (!doc) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  if (editing) renderEditor(body, path, doc.content, doc.revision, saveTopic);
  else if (state.mode === 'history') renderHistory(body, path);
  else {
    const article = html(el('article', { class: 'doc md', id: 'preview' }), doc.html);
    addBlockActions(article, path);
    body.append(article);
    // Blocks elsewhere that link to this topic's blocks (relations.json).
    const links = doc.backlinks || [];
    if (links.length) {
      const box = el('div', { class: 'cited', id: 'topic-backlinks' }, el('div', { class: 'label', text: 'Linked from' }));
      for (const b of links)
        box.append(b.from.path
          ? el('button', { type: 'button', class: 'row cite', title: `${b.from.path} ^${b.from.block_id} → ^${b.target}`, onclick: () => openTopic(b.from.path, b.from.block_id) },
            el('span', { class: 'row-main', text: rel(b.from.path) }), el('span', { class: 'hit-text', text: b.from.snippet }))
          : el('div', { class: 'row cite', text: `^${b.from.block_id} → ^${b.target}` }));
      article.append(box);
    }
  }
}

function renderRecord(body) {
  const r = state.record;
  const doc = r.doc;
  const rec = doc && doc.record;
  const sub = rec ? [`turn ${rec.position} of ${rec.records}`, rec.source_id, `sources/${r.path}`].join(' · ') : `sources/${r.path}`;
  const gone = !!(doc && doc.forgotten);
  setHead([el('span', { class: 't', text: 'Archived record' }), el('span', { class: `badge${gone ? ' gone' : ''}`, text: gone ? 'forgotten' : 'evidence' })], sub,
    [rec && !gone ? el('button', { type: 'button', class: 'btn danger', id: 'forget-record', title: 'Remove this message from memory everywhere', onclick: () => askForget({ record: rec.source_id }, 'this record', () => Promise.allSettled([loadRecord(r.path, r.anchor), refreshLists()])) }, 'Forget') : null,
      el('button', { type: 'button', class: 'btn', id: 'record-close', onclick: closeRecord }, 'Close')].filter(Boolean));
  if (state.error) body.append(errorBanner(state.error, () => guarded(() => loadRecord(r.path, r.anchor))));
  if (!rec) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  const article = el('article', { class: 'doc record', id: 'record' }, el('pre', { class: 'record-text', text: doc.text }));
  const turns = el('div', { class: 'turns' });
  for (const [label, turn, id] of [['← Previous turn', rec.previous, 'record-prev'], ['Next turn →', rec.next, 'record-next']])
    if (turn) turns.append(el('button', { type: 'button', class: 'btn', id, title: turn.snippet, onclick: () => openRecord(r.path, turn.anchor) }, label));
  turns.append(el('button', { type: 'button', class: 'btn', id: 'record-whole', onclick: () => guarded(() => loadConversation(r.path)) }, 'Whole conversation'));
  const session = /^openprogram\/_v2\/(.+)\.md$/.exec(r.path);
  if (session) turns.append(el('button', { type: 'button', class: 'btn', id: 'record-session', onclick: () => openSession(decodeURIComponent(session[1])) }, 'Open the session'));
  article.append(turns);
  const cited = el('div', { class: 'cited', id: 'record-cited' }, el('div', { class: 'label', text: rec.cited_by.length ? 'Cited by' : 'No block cites this record' }));
  for (const c of rec.cited_by)
    cited.append(el('button', { type: 'button', class: 'row cite', title: `${c.path} ^${c.block_id}`, onclick: () => openTopic(c.path, c.block_id) },
      el('span', { class: 'row-main', text: rel(c.path) }), el('span', { class: 'hit-text', text: c.snippet })));
  article.append(cited);
  if (r.whole) {
    const turnsOf = r.whole.turns || [];
    const more = r.whole.more_turns ? ` (the first ${turnsOf.length})` : '';
    const thread = el('div', { class: 'thread', id: 'conversation' });
    for (const t of turnsOf)
      thread.append(el('button', { type: 'button', class: `row turn${t.anchor === r.anchor ? ' active' : ''}`, onclick: () => openRecord(r.path, t.anchor) },
        el('span', { class: 'record-text', text: t.text })));
    article.append(el('div', { class: 'label', text: `The whole conversation${more}` }), thread);
  }
  body.append(article);
}

function renderNotice(body, key) {
  if (state.conflict.has(key))
    body.append(el('div', { class: 'banner', role: 'alert', id: 'conflict' },
      el('span', { class: 'grow', text: 'The memory changed since this was opened, so it was not saved. Your draft is kept. Reload to start again from the latest version (this discards the draft).' }),
      el('button', { type: 'button', class: 'btn', id: 'reload', onclick: () => reloadLatest(key) }, 'Reload latest')));
  if (state.notice && state.notice.key === key) body.append(el('div', { class: 'banner ok', role: 'status', text: state.notice.text }));
}

function renderEditor(body, key, content, revision, onSave) {
  body.classList.add('editing');
  let draft = state.drafts.get(key);
  // An untouched draft follows the latest version; a changed one is never overwritten.
  if (!draft || (draft.text === draft.orig && draft.base !== revision && !state.diag.has(key))) {
    draft = { text: content, orig: content, base: revision };
    state.drafts.set(key, draft);
  }
  const diag = state.diag.get(key);
  const ta = el('textarea', { id: 'editor', 'aria-label': 'Markdown source', spellcheck: 'false', 'aria-describedby': diag ? 'diagnostics' : null });
  ta.value = draft.text;
  ta.addEventListener('input', () => {
    draft.text = ta.value;
  });
  ta.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 's') {
      e.preventDefault();
      onSave();
    }
  });
  const wrap = el('div', { class: `editor${diag ? ' has-diag' : ''}` }, ta);
  if (diag) {
    // The paragraphs the text deletes are listed once, with a button that saves again
    // confirming them (the server deletes exactly those, in the same change).
    const deletes = diag.deletes || [];
    const shown = deletes.length ? diag.violations.filter((v) => !(v.code === 'BLOCK_ID_REMOVED' && !v.line)) : diag.violations;
    const n = deletes.length;
    const paragraphs = `${n} paragraph${n === 1 ? '' : 's'}`;
    const items = shown.length
      ? shown.map((v) => el('li', {}, el('span', { class: 'where', text: [v.code, v.line ? `line ${v.line}${v.col ? `:${v.col}` : ''}` : '', v.path].filter(Boolean).join(' · ') }), v.message || ''))
      : n ? [] : [el('li', { text: diag.message })];
    const box = n
      ? el('div', { class: 'deletes', id: 'deletes' },
          el('p', { text: `This text deletes ${paragraphs}:` }),
          el('ul', {}, deletes.map((d) => el('li', {}, el('code', { text: d.block_ids.map((id) => `^${id}`).join(' ') }), ` “${d.excerpt}”`))),
          shown.length
            ? el('p', { text: 'Fix the problems below first.' })
            : el('button', { type: 'button', class: 'btn danger', id: 'confirm-deletes', onclick: () => onSave(diag.ids) }, `Delete ${n === 1 ? 'it' : `these ${n}`} and save`))
      : null;
    const title = shown.length ? `${shown.length === 1 ? '1 problem' : `${shown.length} problems`} — not saved` : n ? `Deletes ${paragraphs} — not saved yet` : '1 problem — not saved';
    wrap.append(el('aside', { class: 'diag', id: 'diagnostics', role: 'alert', 'aria-label': 'Validation errors' },
      el('h2', { text: title }),
      shown.length ? el('p', { text: diag.message }) : null,
      box,
      items.length ? el('ol', {}, items) : null));
  }
  body.append(wrap);
}

function setTopicMode(mode) {
  state.mode = mode;
  state.confirmDelete = false;
  render();
  if (mode === 'edit') $('editor')?.focus();
  if (mode === 'history') {
    const path = state.current;
    state.history = null;
    guarded(async () => {
      const { data } = await api('GET', `/api/memory/history/${enc(path)}`);
      if (state.current === path) state.history = { path, changes: data.changes };
    });
  }
}

function restoreVersion(path, text) {
  const doc = state.doc && state.doc.path === path ? state.doc : null;
  if (!doc) return;
  state.drafts.set(path, { text, orig: doc.content, base: doc.revision });
  setTopicMode('edit');
}

// A unified diff as lines, added and removed ones coloured (text only: never parsed as HTML).
function diffBlock(text) {
  const diff = el('pre', { class: 'diff' });
  for (const line of text.split('\n')) {
    const kind = /^(\+\+\+|---) /.test(line) ? 'file' : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : line.startsWith('@@') ? 'hunk' : '';
    diff.append(el('span', { class: kind ? `dl ${kind}` : 'dl', text: line || ' ' }));
  }
  return diff;
}

// The transactions that changed a topic, newest first, each with its diff: what changed and why.
function renderHistory(body, path) {
  const h = state.history && state.history.path === path ? state.history : null;
  if (!h) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  const list = el('article', { class: 'doc history', id: 'history' });
  if (!h.changes.length) list.append(el('p', { text: 'No commit has changed this topic yet.' }));
  for (const [i, c] of h.changes.entries()) {
    const diff = diffBlock(c.diff);
    // Restoring a version is an edit like any other: its text becomes the draft, saved by
    // compare-and-set against the revision shown, validated, and it makes a new transaction.
    const restore = i > 0 && c.text !== null && c.text !== undefined
      ? el('button', { type: 'button', class: 'btn restore', title: 'Open this version in the editor; Save installs it as a new change', onclick: () => restoreVersion(path, c.text) }, 'Restore this version')
      : null;
    list.append(el('section', { class: 'change' },
      el('div', { class: 'change-head' }, el('span', { class: 'badge', text: c.change }), el('span', { class: 'change-sum', text: c.summary }), restore),
      el('div', { class: 'change-meta', text: [fmtTime(c.time), c.txn_id ? `Txn-Id ${c.txn_id}` : '', `commit ${c.commit.slice(0, 12)}`].filter(Boolean).join(' · ') }),
      diff));
  }
  body.append(list);
}

function cancelTopic() {
  const path = state.current;
  state.drafts.delete(path);
  state.diag.delete(path);
  state.conflict.delete(path);
  state.mode = 'preview';
  render();
}

async function saveOutcome(key, request, after) {
  const btn = $('save');
  if (btn) btn.disabled = true;
  try {
    await request();
    state.drafts.delete(key);
    state.diag.delete(key);
    state.conflict.delete(key);
    state.notice = { key, text: 'Saved.' };
    await after();
    await refreshLists();
  } catch (e) {
    if (gated) return;
    if (e.code === 'CONCURRENT_UPDATE' || e.status === 409) {
      state.conflict.add(key);
      state.diag.delete(key);
    } else {
      const d = e.details || {};
      state.diag.set(key, { message: e.message, violations: e.violations || [], deletes: d.paragraphs, ids: d.delete_blocks });
      state.conflict.delete(key);
    }
  }
  render();
}

// `deleteBlocks`: the block IDs the user confirmed deleting (a click passes an event: none).
function editBody(draft, deleteBlocks) {
  const body = { content: draft.text, base_revision: draft.base };
  if (Array.isArray(deleteBlocks)) body.delete_blocks = deleteBlocks;
  return body;
}

function saveTopic(deleteBlocks) {
  const path = state.current;
  const draft = state.drafts.get(path);
  if (!draft) return;
  state.notice = null;
  saveOutcome(path,
    () => api('PUT', `/api/memory/topics/${enc(path)}`, editBody(draft, deleteBlocks)),
    async () => {
      state.mode = 'preview';
      await loadTopic(path);
    });
}

async function deleteTopic() {
  const path = state.current;
  const base = state.doc && state.doc.revision;
  state.confirmDelete = false;
  try {
    await api('DELETE', `/api/memory/topics/${enc(path)}?base_revision=${encodeURIComponent(base || '')}`);
    state.current = null;
    state.doc = null;
    state.drafts.delete(path);
    setView('list');
    await loadTopics();
    refreshLists();
  } catch (e) {
    if (!gated) state.error = e.message;
  }
  render();
}

function reloadLatest(key) {
  state.drafts.delete(key);
  state.diag.delete(key);
  state.conflict.delete(key);
  if (key === '#core') guarded(loadCore);
  else guarded(() => loadTopic(key));
}

function renderDay(body) {
  if (!state.day) {
    setHead([el('span', { class: 't', text: 'Timeline' })], 'A chronological view derived from Topics');
    if (state.error) body.append(errorBanner(state.error, () => guarded(loadTimeline)));
    if (state.timeline && state.timeline.length === 0) body.append(emptyCard('◷', 'No dated memory yet', 'Timeline entries are derived from the dates cited in Topics.'));
    else body.append(el('p', { class: 'loading', text: state.timeline ? 'Select a date to read it.' : 'Loading…' }));
    return;
  }
  const e = (state.timeline || []).find((x) => x.date === state.day);
  const wd = weekday(state.day);
  setHead([el('span', { class: 't', text: dateTitle(state.day) })], [wd, e ? fmtBytes(e.size) : '', 'derived from Topics'].filter(Boolean).join(' · '));
  if (state.error) body.append(errorBanner(state.error, () => guarded(() => loadDay(state.day))));
  const doc = state.dayDoc;
  if (!doc) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  if (!doc.content && !doc.html) body.append(emptyCard('◷', 'Nothing recorded for this date', 'No topic cites this date any more.'));
  else body.append(collapseRuns(html(el('article', { class: 'doc md', id: 'day' }), doc.html)));
}

// A day row links every record its footnote cites; the journal cites every reply of a turn
// ("reply reply reply …"). A run of citation links with one label becomes its first link,
// counted ("reply ×12"); the record it opens leads to the others (Next turn).
function collapseRuns(root) {
  for (const block of root.querySelectorAll('p, li')) {
    let run = [];
    const flush = () => {
      if (run.length > 1) {
        run[0].textContent = `${run[0].textContent} ×${run.length}`;
        run[0].title = `${run.length} records; this opens the first`;
        for (const a of run.slice(1)) {
          if (a.previousSibling && a.previousSibling.nodeType === 3 && !a.previousSibling.textContent.trim()) a.previousSibling.remove();
          a.remove();
        }
      }
      run = [];
    };
    for (const node of [...block.childNodes]) {
      if (node.nodeType === 3 && !node.textContent.trim()) continue;
      const cite = node.nodeName === 'A' && citation(node.getAttribute('href'));
      if (cite && run.length && node.textContent === run[0].textContent) run.push(node);
      else {
        flush();
        if (cite) run = [node];
      }
    }
    flush();
  }
  return root;
}

function setRecentMode(mode) {
  state.recentMode = mode;
  render();
  if (mode === 'changes') {
    state.changes = null;
    guarded(async () => {
      const { data } = await api('GET', '/api/memory/history');
      state.changes = data.commits;
    });
  }
}

// The workspace's transactions, newest first: what each changed, and a way to each topic's
// history (what changed and why).
function renderChanges(body) {
  const c = state.changes;
  setHead([el('span', { class: 't', text: 'Recent changes' })], c ? `${c.length} newest transactions · newest first · from git` : '',
    [segment('Show', [['records', 'Records'], ['changes', 'Changes']], 'changes', setRecentMode)]);
  if (state.error) body.append(errorBanner(state.error, () => setRecentMode('changes')));
  if (!c) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  const list = el('section', { class: 'doc history', id: 'changes', 'aria-label': 'Recent changes' });
  for (const t of c) {
    const files = el('div', { class: 'change-files' });
    for (const f of t.files) {
      // A topic that still exists opens its history (a forget may have removed one).
      const topic = /^topics\/.+\.md$/.test(f) && f !== 'topics/core.md' && (!state.topics || state.topics.some((x) => x.path === rel(f)));
      files.append(topic
        ? el('button', { type: 'button', class: 'link', title: `History of ${f}`, onclick: () => { openTopic(f); setTopicMode('history'); } }, rel(f))
        : el('span', { class: 'change-file', text: f }));
    }
    // The whole transaction's diff (every file it changed), fetched when asked for.
    // Topics and the archive first (the API's order); the derived views, rebuilt from the
    // topics, folded away.
    const shown = state.commitDiffs.get(t.commit) || [];
    const derived = shown.filter((f) => !/^(topics|sources)\//.test(f.path));
    const diffs = el('div', { class: 'change-diffs' }, ...shown.filter((f) => !derived.includes(f)).map((f) => diffBlock(f.diff)),
      derived.length ? el('details', { class: 'derived' }, el('summary', { text: `Derived files (${derived.length}): ${derived.map((f) => f.path).join(', ')}` }), ...derived.map((f) => diffBlock(f.diff))) : null);
    const show = state.commitDiffs.has(t.commit) ? null : el('button', { type: 'button', class: 'btn show-diff', onclick: () => guarded(async () => {
      const { data } = await api('GET', `/api/memory/commits/${encodeURIComponent(t.commit)}`);
      state.commitDiffs.set(t.commit, data.commit.files);
    }) }, 'Show diff');
    list.append(el('article', { class: 'change' },
      el('div', { class: 'change-head' }, el('span', { class: 'change-sum', text: t.summary }), show),
      el('div', { class: 'change-meta', text: [fmtTime(t.time), t.txn_id ? `Txn-Id ${t.txn_id}` : '', `commit ${t.commit.slice(0, 12)}`].filter(Boolean).join(' · ') }),
      files, diffs));
  }
  body.append(list);
}

function renderRecent(body) {
  if (state.recentMode === 'changes') return renderChanges(body);
  const r = state.recent;
  const sub = r ? `${r.rows.length} / ${r.limit ?? '?'} records · newest durable records first · derived from Topics` : '';
  setHead([el('span', { class: 't', text: 'Recent memory' })], sub, [segment('Show', [['records', 'Records'], ['changes', 'Changes']], 'records', setRecentMode)]);
  if (state.error) body.append(errorBanner(state.error, () => guarded(loadRecent)));
  if (!r) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  if (r.rows.length === 0) {
    body.append(emptyCard('⌁', 'Nothing recalled yet', 'The newest durable records appear here once conversations are written to memory.'));
    return;
  }
  const doc = el('section', { class: 'doc', id: 'recent', 'aria-label': 'Recent records' });
  for (const row of r.rows) {
    const path = rel(row.topic_path);
    const type = path.includes('/') ? path.split('/')[0] : path === 'core.md' ? 'core' : '';
    const isCore = path === 'core.md';
    doc.append(el('article', { class: 'rec' },
      el('div', { class: 'rec-meta' },
        type ? el('span', { class: 'badge', text: type }) : null,
        el('span', { text: row.when ? String(row.when) : 'undated' }),
        path ? el('button', { type: 'button', class: 'link', onclick: () => (isCore ? selectSection('core', true) : openTopic(path)) }, path) : null),
      el('p', { text: row.content || '' })));
  }
  body.append(doc);
}

function renderCore(body) {
  const c = state.core;
  const mode = state.coreMode;
  const actions = [segment('Core view', [['preview', 'Prompt preview'], ['source', 'Core blocks (Markdown)']], mode, (m) => { state.coreMode = m; render(); if (m === 'source') $('editor')?.focus(); })];
  if (mode === 'source' && c) {
    actions.push(el('button', { type: 'button', class: 'btn primary', id: 'save', onclick: saveCore }, 'Save'));
    actions.push(el('button', { type: 'button', class: 'btn', id: 'cancel', onclick: () => { state.drafts.delete('#core'); state.diag.delete('#core'); state.conflict.delete('#core'); render(); } }, 'Revert'));
  }
  let sub = '';
  let dot = null;
  if (c) {
    const on = !!c.injection_enabled;
    dot = el('span', { class: `status-dot${on ? '' : ' off'}`, id: 'injection', text: on ? 'Injection enabled' : 'Injection disabled' });
    sub = `${fmtNum(c.rendered_tokens)} / ${fmtNum(c.budget_tokens)} tokens`;
  }
  setHead([el('span', { class: 't', text: 'Core memory' })], '', actions);
  const subNode = $('head-sub');
  if (dot) subNode.replaceChildren(dot, ` · ${sub}`);
  renderNotice(body, '#core');
  if (state.error) body.append(errorBanner(state.error, () => guarded(loadCore)));
  if (!c) {
    if (!state.error) body.append(el('p', { class: 'loading', text: 'Loading…' }));
    return;
  }
  if (mode === 'preview') {
    const doc = el('section', { class: 'doc', id: 'core-preview', 'aria-label': 'Read-only prompt preview' },
      el('div', { class: 'kicker', text: 'Read-only prompt preview' }),
      el('p', { class: 'lede', text: c.injection_enabled
        ? 'Generated from the core blocks (topics/core.md) and inserted into new system prompts. Edit the core blocks to change it.'
        : 'Generated from the core blocks (topics/core.md). Injection is disabled, so it is not inserted into system prompts.' }));
    if (c.rendered_html || c.rendered_content) doc.append(html(el('div', { class: 'md' }), c.rendered_html));
    else doc.append(el('p', { class: 'lede', text: 'No core memory yet. Add core blocks to create it.' }));
    body.append(doc);
  } else {
    renderEditor(body, '#core', c.content || '', c.revision, saveCore);
  }
}

function saveCore(deleteBlocks) {
  const draft = state.drafts.get('#core');
  if (!draft) return;
  state.notice = null;
  saveOutcome('#core', () => api('PUT', '/api/memory/core', editBody(draft, deleteBlocks)), loadCore);
}

function render() {
  if (gated) return;
  renderNav();
  renderContext();
  renderBody();
}

// ---- search (debounced)
let searchTimer = 0;
let searchSeq = 0;
function onSearch(q) {
  state.query = q;
  clearTimeout(searchTimer);
  if (!q.trim()) {
    state.hits = null;
    renderContext();
    $('search')?.focus();
    return;
  }
  state.hits = null;
  const seq = ++searchSeq;
  searchTimer = setTimeout(async () => {
    try {
      const { data } = await api('GET', `/api/memory/search?q=${encodeURIComponent(q.trim())}`);
      if (seq === searchSeq) state.hits = (data && data.hits) || [];
    } catch (e) {
      if (seq === searchSeq) state.hits = { error: e.message };
    }
    if (seq !== searchSeq) return;
    const list = document.querySelector('#search-results, #topic-list');
    if (list) list.parentElement.replaceWith(searchList());
  }, 200);
  const results = document.querySelector('#search-results, #topic-list');
  if (results) results.parentElement.replaceWith(searchList());
}

// ---- polling: refresh lists and previews, never a draft
let pollTimer = 0;
async function refreshLists() {
  const tasks = [loadStatus(), loadTopics(), loadTimeline(), loadRecent()];
  if (state.section === 'core') tasks.push(loadCore());
  await Promise.allSettled(tasks);
}
async function poll() {
  if (gated || document.hidden) return;
  const before = state.status && state.status.revision;
  try {
    await loadStatus();
  } catch {
    return;
  }
  if (state.status.revision === before) {
    renderNav();
    return;
  }
  await refreshLists();
  if (state.section === 'topics' && state.current) await loadTopic(state.current).catch(() => {});
  if (state.section === 'timeline' && state.day) await loadDay(state.day).catch(() => {});
  rerenderKeepingFocus();
}
function rerenderKeepingFocus() {
  // A refresh re-renders lists and previews; an open editor keeps its draft (state.drafts) and
  // its caret.
  const active = document.activeElement;
  const id = active && active.id;
  const sel = id === 'editor' || id === 'search' ? [active.selectionStart, active.selectionEnd, active.scrollTop] : null;
  render();
  if (id && $(id)) {
    const n = $(id);
    n.focus();
    if (sel) {
      n.setSelectionRange(sel[0], sel[1]);
      n.scrollTop = sel[2];
    }
  }
}

// ---- wiring
// A document's link to a topic (`../people/dana.md#^1a2b3c4d` in a topic, `../../../topics/…` in
// a timeline day), resolved against the workspace-relative file shown (`from`): the topic's path
// relative to topics/ and the block, or null when it is no topic.
function topicLink(href, from) {
  const m = /^([^#?:]+\.md)(?:#\^?([0-9a-z]+))?$/.exec(href || '');
  if (!m || m[1].startsWith('/') || !from) return null;
  const parts = from.split('/').slice(0, -1);
  for (const seg of decodeURIComponent(m[1]).split('/')) {
    if (seg === '..') { if (!parts.length) return null; parts.pop(); } else if (seg && seg !== '.') parts.push(seg);
  }
  return parts[0] === 'topics' && parts.length > 1 ? { path: parts.slice(1).join('/'), block: m[2] } : null;
}
// The workspace-relative file the detail pane shows, if it is a topic or a timeline day.
function shownFile() {
  if (state.record || state.compose) return null;
  if (state.section === 'topics' && state.current) return `topics/${state.current}`;
  if (state.section === 'timeline' && state.day) return `timeline/${state.day.split('-').join('/')}.md`;
  if (state.section === 'core') return 'topics/core.md';
  return null;
}

// Links inside rendered documents stay in the page: a citation opens its record, a topic link
// opens the topic at its block, a footnote link scrolls to its note (the view's own link stays).
$('body').addEventListener('click', (e) => {
  const a = e.target.closest('a[href]');
  if (!a) return;
  const href = a.getAttribute('href');
  const target = citation(href);
  if (target) {
    e.preventDefault();
    openRecord(target.path, target.anchor);
    return;
  }
  let topic = topicLink(href, shownFile());
  if (!topic && state.section === 'timeline') {
    // A day quotes each record as its topic wrote it, so a link inside the quote is relative to
    // that topic: the row's own [Topic] link names it.
    const own = [...(a.closest('li,p')?.querySelectorAll('a[href]') || [])].find((x) => x.textContent === 'Topic');
    const base = own && topicLink(own.getAttribute('href'), shownFile());
    if (base) topic = topicLink(href, `topics/${base.path}`);
  }
  if (topic) {
    e.preventDefault();
    state.section = 'topics';
    openTopic(topic.path, topic.block);
    return;
  }
  if (/^#fn(ref)?-/.test(href)) {
    e.preventDefault();
    document.getElementById(href.slice(1))?.scrollIntoView({ block: 'center' });
  }
});
for (const b of document.querySelectorAll('.nav-item')) b.addEventListener('click', () => selectSection(b.dataset.section));
$('back').addEventListener('click', () => {
  setView('list');
  const target = state.section === 'topics' && state.current ? document.querySelector(`.row[data-path="${CSS.escape(state.current)}"]`)
    : state.section === 'timeline' && state.day ? document.querySelector(`.row[data-date="${CSS.escape(state.day)}"]`)
    : document.querySelector('.nav-item.active');
  (target || document.querySelector('.nav-item.active'))?.focus();
});
window.addEventListener('beforeunload', (e) => {
  if ([...state.drafts.values()].some((d) => d.text !== d.orig)) e.preventDefault();
});

async function start() {
  if (!token) {
    gate('auth');
    return;
  }
  render();
  try {
    await loadStatus();
  } catch (e) {
    if (gated) return;
    state.error = e.message;
  }
  await Promise.allSettled([loadTopics(), loadRecent(), loadTimeline()]);
  if (!route()) render();
  pollTimer = setInterval(poll, POLL_MS);
}
start();
