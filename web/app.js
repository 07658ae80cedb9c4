/* gpuward dashboard: state, the API, the live event stream, sign-in, the router and the GPU
 * and queue views.  The job page, the calendar and usage are in views.js; charts in charts.js.
 * Text from the API is only ever put in the page as text (textContent), never as HTML. */
'use strict';
(function () {
  const GW = window.GW = window.GW || {};
  const $ = id => document.getElementById(id);
  GW.$ = $;

  const ACTIVE = new Set(['PENDING', 'HELD', 'RUNNING']);
  const HISTORY_S = 15 * 60;
  const S = GW.state = {
    me: { user: '', role: 'guest', signed_in: false, csrf: null },
    gpus: null,            /* the latest GET /api/v1/gpus (or "gpus" event) */
    nodes: null,           /* --backend slurm: the nodes' GPUs (GET /api/v1/gpus's "nodes") */
    hist: [],              /* per GPU: [[t, util, mem], ...] of the last 15 minutes */
    gpuEvents: [],         /* the GPUs' latest events, newest first (GET /api/v1/gpus/events) */
    gpuEventsKey: '',      /* what of the GPUs those events explain, when they were fetched */
    jobs: new Map(),       /* active jobs by id */
    finished: null,        /* finished jobs for the queue's "finished" filter, newest first */
    loaded: false,
    interval: 2,
  };

  /* ---- DOM and formatting helpers ---- */

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined && kid !== false)
      el.append(kid instanceof Node ? kid : String(kid));
    return el;
  }
  GW.h = h;

  /* Every time on the page goes through here: 24-hour and ISO-like ("2026-11-27 14:02"), in
   * the viewer's zone, as the CLI writes them, whatever the browser's locale (a 12-hour
   * locale would otherwise make the page and the terminal disagree).  part: 'clock' for
   * "14:02" (chart axes), 'tick' for "11-27 14:00" (the calendar), 'sec' for
   * "2026-11-27 14:02:11" (events, where the order of a few seconds matters), else the whole. */
  GW.fmtTime = function (t, part) {
    if (!t) return '—';
    const d = new Date(t * 1000), p = v => String(v).padStart(2, '0');
    const clock = `${p(d.getHours())}:${p(d.getMinutes())}` + (part === 'sec' ? `:${p(d.getSeconds())}` : '');
    if (part === 'clock') return clock;
    const day = `${p(d.getMonth() + 1)}-${p(d.getDate())}`;
    return part === 'tick' ? `${day} ${clock}` : `${d.getFullYear()}-${day} ${clock}`;
  };
  GW.now = () => Date.now() / 1000;
  GW.fmtDur = function (s) {
    if (s === null || s === undefined || !isFinite(s)) return '—';
    s = Math.max(0, Math.round(s));
    const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return `${d}d ${hh}h`;
    if (hh) return `${hh}h ${String(m).padStart(2, '0')}m`;
    if (m) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
    return `${s}s`;
  };
  /* A queued job's place as `gpuward queue` writes it: "0.42" (its user's fair-share factor),
   * "5/0.42" with a priority, the priority alone with fair share off; "—" once it runs. */
  GW.prioText = function (j) {
    if (j.state !== 'PENDING' && j.state !== 'HELD') return '—';
    const fs = typeof j.fairshare === 'number' ? j.fairshare.toFixed(2) : null;
    return fs === null ? String(j.priority || 0) : j.priority ? `${j.priority}/${fs}` : fs;
  };
  /* GPU-hours: two significant digits below one ("0.03", not "0.0"), one decimal above. */
  GW.fmtGpuHours = v => (!v ? '0' : v < 1 ? String(Number(v.toPrecision(2))) : v.toFixed(1));
  GW.fmtBytes = function (b) {
    if (b === null || b === undefined) return '—';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(b < 10 ? 1 : 0) : b) + ' ' + u[i];
  };
  /* ETA as the API gives it (a number of Unix seconds, or an object with its basis), or null. */
  GW.etaOf = function (eta) {
    if (eta === null || eta === undefined) return null;
    if (typeof eta === 'number') return eta;
    return eta.end ?? eta.end_time ?? null;
  };

  let toastTimer = 0;
  GW.toast = function (msg) {
    const t = $('toast');
    t.textContent = msg;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
  };

  /* ---- the API ---- */

  let sessionLoad = null;   /* the session's fetch in flight: the CSRF value comes with it */

  GW.api = async function (method, path, body) {
    /* Signed in as the page was served, the CSRF value is not in the page: wait for it. */
    if (method !== 'GET' && S.me.signed_in && !S.me.csrf && sessionLoad) await sessionLoad;
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (method !== 'GET' && S.me.csrf) headers['X-Gpuward-CSRF'] = S.me.csrf;
    let r;
    try {
      r = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store',
                              body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      return { status: 0, data: { error: 'the daemon cannot be reached' }, headers: new Headers() };
    }
    const type = r.headers.get('Content-Type') || '';
    const data = type.startsWith('application/json') ? await r.json().catch(() => ({})) : await r.text();
    return { status: r.status, data, headers: r.headers };
  };
  GW.errText = res => (res.data && res.data.error) || `HTTP ${res.status}`;

  GW.canTouch = j => S.me.signed_in && (S.me.role === 'admin' || S.me.user === j.user);

  /* Cancel, hold, release: the API decides; the buttons are only offered to who may. */
  GW.jobAction = async function (j, action) {
    if (action === 'cancel' && !window.confirm(`Cancel job ${j.id} (${j.name})?`)) return;
    const res = action === 'cancel' ? await GW.api('DELETE', `/api/v1/jobs/${j.id}`)
                                    : await GW.api('POST', `/api/v1/jobs/${j.id}/${action}`);
    if (res.status >= 300) GW.toast(`${action} job ${j.id}: ${GW.errText(res)}`);
    else GW.toast(`job ${j.id}: ${action === 'cancel' ? 'cancelling' : action === 'hold' ? 'held' : 'released'}`);
  };

  GW.actionButtons = function (j) {
    if (!GW.canTouch(j) || !ACTIVE.has(j.state)) return [];
    const b = [];
    if (j.state === 'PENDING') b.push(h('button', { type: 'button', 'data-key': `hold-${j.id}`, onclick: () => GW.jobAction(j, 'hold') }, 'Hold'));
    if (j.state === 'HELD') b.push(h('button', { type: 'button', 'data-key': `release-${j.id}`, onclick: () => GW.jobAction(j, 'release') }, 'Release'));
    b.push(h('button', { type: 'button', class: 'danger', 'data-key': `cancel-${j.id}`, 'aria-label': `Cancel job ${j.id}`,
                         onclick: () => GW.jobAction(j, 'cancel') }, 'Cancel'));
    return b;
  };

  /* Re-renders without losing the keyboard focus: the focused element's data-key is found
   * again in the new content. */
  GW.keepFocus = function (fn) {
    const key = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
    fn();
    if (key) { const el = document.querySelector(`[data-key="${CSS.escape(key)}"]`); if (el) el.focus(); }
  };

  /* ---- session ---- */

  function loadSession() {
    sessionLoad = (async () => {
      const res = await GW.api('GET', '/api/v1/session');
      if (res.status === 200) S.me = Object.assign({ csrf: null }, res.data);
      renderWho();
    })();
    return sessionLoad;
  }

  function renderWho() {
    $('whoami').textContent = S.me.signed_in ? `${S.me.user}${S.me.role === 'admin' ? ' (admin)' : ''}` : 'guest (read-only)';
    $('whoami').title = S.me.signed_in ? '' : 'Signed out: the command lines, directories and log evidence of jobs are hidden';
    $('signin-open').hidden = S.me.signed_in;
    $('signout').hidden = !S.me.signed_in;
  }

  function setupSignin() {
    const dlg = $('signin');
    $('signin-open').addEventListener('click', () => { $('signin-error').textContent = ''; dlg.showModal(); $('signin-token').focus(); });
    $('signin-cancel').addEventListener('click', () => dlg.close());
    $('signin-form').addEventListener('submit', async ev => {
      ev.preventDefault();
      const token = $('signin-token').value.trim();
      const res = await GW.api('POST', '/api/v1/session', { token });
      if (res.status !== 200) { $('signin-error').textContent = GW.errText(res); return; }
      $('signin-token').value = '';
      dlg.close();
      await loadSession();
      GW.toast(`signed in as ${S.me.user}`);
      /* What was read as a guest hides command lines and directories: read it all again as
       * the one signed in, the open job's page included. */
      await resync();
    });
    $('signout').addEventListener('click', async () => {
      await GW.api('DELETE', '/api/v1/session');
      S.me = { user: '', role: 'guest', signed_in: false, csrf: null };
      renderWho();
      await resync();
      $('signin-open').focus();
    });
  }

  /* ---- data ---- */

  /* What the daemon wrote into the page as it served it (the replies of GET /api/v1/gpus,
   * /api/v1/jobs and /api/v1/session for this reader): the first paint needs no round trip,
   * and the fetches below bring it up to date.  The plain tables beside it are for readers
   * without JavaScript. */
  function loadInitial() {
    const fp = $('firstpaint'), el = $('gw-state');
    if (fp) fp.remove();
    if (!el) return;
    let st;
    try { st = JSON.parse(el.textContent); } catch (e) { return; }
    if (st.gpus && Array.isArray(st.gpus.gpus)) {
      S.gpus = st.gpus;
      S.nodes = st.gpus.nodes || null;
      for (const g of st.gpus.gpus) pushHistory(g);
    }
    if (st.jobs && Array.isArray(st.jobs.jobs)) {
      S.jobs = new Map(st.jobs.jobs.map(j => [j.id, j]));
      S.loaded = true;
    }
    if (st.session) S.me = Object.assign({ csrf: null }, st.session, { csrf: null });
  }

  function pushHistory(g) {
    const arr = S.hist[g.index] || (S.hist[g.index] = []);
    const t = g.sampled_at;
    if (t && (!arr.length || arr[arr.length - 1][0] < t)) arr.push([t, g.util ?? 0, g.mem_used ?? 0]);
    const cut = GW.now() - HISTORY_S;
    while (arr.length && arr[0][0] < cut) arr.shift();
  }

  /* The GPUs' own events (drains, Xids, rogue processes) are fetched at start and again when
   * a snapshot changes what they explain (health, drain reason, rogue count): not with every
   * sample. */
  async function loadGpuEvents() {
    const r = await GW.api('GET', '/api/v1/gpus/events?limit=50');
    if (r.status === 200) { S.gpuEvents = r.data.events; GW.render('gpus'); }
  }

  function noteGpus(gs) {
    const key = JSON.stringify([gs.rogue_processes, gs.gpus.map(g => [g.health, g.drain_reason])]);
    if (key !== S.gpuEventsKey) { S.gpuEventsKey = key; loadGpuEvents(); }
  }

  /* GPUs need no ordering with the stream (every "gpus" event is a whole snapshot): they are
   * fetched at once, for a fast first paint. */
  async function loadGpus() {
    const [g, hist] = await Promise.all([GW.api('GET', '/api/v1/gpus'), GW.api('GET', '/api/v1/gpus/history?minutes=15')]);
    if (g.status === 200 && !S.gpus) S.gpus = g.data;
    if (g.status === 200 && g.data.nodes) S.nodes = g.data.nodes_next ? (await allNodes()) || g.data.nodes : g.data.nodes;
    if (hist.status === 200) {
      const live = S.hist;
      S.hist = [];
      for (const gh of hist.data.gpus) S.hist[gh.index] = gh.points.slice();
      S.interval = hist.data.interval || 2;
      live.forEach((arr, i) => { for (const p of arr || []) if (S.hist[i] && p[0] > (S.hist[i].at(-1) || [0])[0]) S.hist[i].push(p); });
    }
    if (S.gpus) for (const gg of S.gpus.gpus) pushHistory(gg);
    if (S.gpus) noteGpus(S.gpus);
    $('driver').textContent = !S.gpus ? '' : S.gpus.driver
      ? `driver ${S.gpus.driver}${S.gpus.simulated ? ' (simulated GPUs)' : ''}` : 'no NVIDIA driver found';
    GW.render('gpus');
  }

  async function loadSnapshot() {
    const jobs = await GW.api('GET', '/api/v1/jobs');
    if (jobs.status === 200) { S.jobs = new Map(); for (const j of jobs.data.jobs) S.jobs.set(j.id, j); }
    S.loaded = true;
  }

  /* ---- the live event stream ---- */

  let es = null, buffering = true, buffered = [];

  /* An array's row is re-read (its task counts) at most twice a second, however many of its
   * tasks start or end. */
  const arraysToRead = new Set();
  let arrayTimer = 0;
  function refreshArray(id) {
    arraysToRead.add(id);
    if (arrayTimer) return;
    arrayTimer = setTimeout(async () => {
      arrayTimer = 0;
      const ids = [...arraysToRead];
      arraysToRead.clear();
      for (const id of ids) {
        const res = await GW.api('GET', `/api/v1/jobs/${id}`);
        if (res.status === 200 && ACTIVE.has(res.data.state) && S.jobs.has(id)) S.jobs.set(id, res.data);
      }
      GW.render('job');
    }, 500);
  }

  /* A job array's waiting tasks are folded on its row; a task that started is a job of its own
   * with a row of its own ("8_0", as gpuward queue lists it), so that a RUNNING filter or a
   * GPU's card finds it.  Tasks that ended are not in the live list. */
  function foldArrays(list) {
    return list;
  }
  GW.foldArrays = foldArrays;

  /* "4 running · 45 waiting · 1 completed of 50": the live tasks from the queue, the rest
   * from the array's counts. */
  function arrayCounts(j, jobs) {
    const t = j.array_tasks || {};
    const running = [...jobs.values()].filter(x => x.array_job_id === j.id && x.state === 'RUNNING').length;
    const parts = [`${running} running`];
    if (t.PENDING) parts.push(`${t.PENDING} waiting`);
    for (const s of ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'RECLAIMED'])
      if (t[s]) parts.push(`${t[s]} ${s.toLowerCase()}`);
    return parts.join(' · ') + (t.total ? ` of ${t.total}` : '');
  }
  GW.arrayCounts = arrayCounts;

  /* The ID cell: 17, a task's 17_3, an array's 17_[0-49%4]. */
  const jobLabel = j => j.array && ACTIVE.has(j.state) ? j.array_waiting || `${j.id}_[${j.array}]`
    : j.display_id || (j.array_job_id != null ? `${j.array_job_id}_${j.array_index}` : String(j.id));
  GW.jobLabel = jobLabel;

  function setLive(state) {
    const el = $('live');
    if (el.dataset.state === state) return;
    el.dataset.state = state;
    el.textContent = state === 'live' ? 'live' : state === 'down' ? 'offline' : 'reconnecting';
  }

  function onEvent(type, data) {
    if (type === 'gpus') {
      S.gpus = data;
      for (const g of data.gpus) pushHistory(g);
      noteGpus(data);
    } else if (type === 'job') {
      const j = data.job;
      /* A task started or ended: its array's counts (which the stream does not carry) again. */
      if (j.array_job_id && S.jobs.has(j.array_job_id)) refreshArray(j.array_job_id);
      const was = S.jobs.get(j.id);
      if (was && was.array_tasks && !j.array_tasks) { j.array_tasks = was.array_tasks; j.array_waiting = was.array_waiting; }
      if (ACTIVE.has(j.state)) S.jobs.set(j.id, j);
      else {
        S.jobs.delete(j.id);
        if (S.finished && !S.finished.some(f => f.id === j.id)) S.finished.unshift(j);
      }
    } else if (type === 'predictions') {
      /* Predicted starts moved (a job ended early, an ETA changed): [[id, start|null], ...]. */
      for (const [id, start] of data.jobs) { const j = S.jobs.get(id); if (j) j.predicted_start = start; }
      type = 'job';
    }
    if (GW.onLiveEvent) GW.onLiveEvent(type, data);
    GW.render(type);
  }

  /* A snapshot is taken after the stream said hello (or reset), and events that arrive
   * while it loads are applied after it: nothing between the two is lost. */
  async function resync() {
    buffering = true;
    buffered = [];
    await loadSnapshot();
    buffering = false;
    for (const [t, d] of buffered) onEvent(t, d);
    buffered = [];
    if (GW.onResync) GW.onResync();
    GW.render();
  }

  function connect() {
    es = new EventSource('/api/v1/events');
    es.onopen = () => setLive('live');
    es.onerror = () => {
      setLive(es.readyState === EventSource.CLOSED ? 'down' : 'connecting');
      if (es.readyState === EventSource.CLOSED) setTimeout(connect, 5000);
    };
    for (const type of ['hello', 'reset']) es.addEventListener(type, e => {
      const d = JSON.parse(e.data);
      S.interval = d.sample_interval || S.interval;
      setLive('live');
      if (type === 'reset') { S.gpus = null; loadGpus(); }
      resync();
    });
    for (const type of ['gpus', 'job', 'job_event', 'booking', 'predictions']) es.addEventListener(type, e => {
      const d = JSON.parse(e.data);
      if (buffering && type !== 'gpus') buffered.push([type, d]);
      else onEvent(type, d);
    });
  }

  /* ---- GPUs view ---- */

  function gpuCard(g, jobsById) {
    const now = GW.now(), t0 = now - HISTORY_S;
    const hist = S.hist[g.index] || [];
    const spark = what => GW.svg('svg', { class: 'spark', role: 'img', 'aria-label': `GPU ${g.index} ${what}, last 15 minutes` });
    const su = spark('utilisation'), sm = spark('memory');
    GW.sparkline(su, hist.map(p => [p[0], p[1]]), t0, now, 100, 'util');
    GW.sparkline(sm, hist.map(p => [p[0], p[2]]), t0, now, g.mem_total, 'mem');
    const health = g.health || 'ok';
    const ji = g.job_info;
    let jobLine;
    if (ji) {
      const full = jobsById.get(ji.id);
      const eta = GW.etaOf(ji.eta ?? (full && full.eta));
      const who = `${ji.user} · running ${GW.fmtDur(now - ji.start_time)}` + (eta ? ` · ETA ${GW.fmtTime(eta, 'tick')}` : '');
      /* Two lines of fixed height, each cut with "…" and whole in its title: a long name never
       * pushes the rest of the card down. */
      jobLine = h('div', { class: 'job' },
        h('div', { title: `job ${ji.display_id || ji.id} ${ji.name || ''}` }, h('a', { href: `#/job/${ji.id}`, 'data-key': `gpu-job-${g.index}` }, `job ${ji.display_id || ji.id}`),
          ' ', ji.name || ''),
        h('div', { title: who }, who));
    } else jobLine = h('div', { class: 'job idle' }, health === 'ok' ? 'free' : 'no job');
    /* A guest gets them without the message (it may name another user's command). */
    /* This host's GPU: a cluster node's GPU of the same index (e.node) is another card. */
    const evs = S.gpuEvents.filter(e => e.gpu === g.index && !e.node).slice(0, 3);
    const evText = e => `${GW.fmtTime(e.time, 'sec')} ${e.kind}${e.xid !== null ? ` ${e.xid}` : ''}` +
      `${e.job ? ` (job ${e.job})` : ''}${e.message ? `: ${e.message}` : ''}`;
    const pct = g.mem_total ? Math.round((100 * (g.mem_used || 0)) / g.mem_total) : 0;
    return h('article', { class: `card ${health}`, 'aria-label': `GPU ${g.index}`, 'data-gpu': g.index },
      h('div', { class: 'card-head' }, h('h2', {}, `GPU ${g.index}`),
        h('span', { class: `badge ${health}`, title: g.drain_reason || '' }, health === 'ok' ? 'healthy' : health)),
      h('div', { class: 'model', title: g.uuid }, g.name),
      h('div', { class: 'metric' }, h('span', {}, 'Utilisation'), su, h('span', { class: 'v' }, g.util === null ? 'n/a' : `${g.util}%`)),
      h('div', { class: 'metric' }, h('span', {}, 'Memory'), sm, h('span', { class: 'v' }, g.mem_used === null ? 'n/a' : `${GW.fmtBytes(g.mem_used)}`)),
      h('div', { class: 'facts' }, h('span', {}, g.temp === null ? 'temp n/a' : `${g.temp} °C`),
        h('span', {}, g.power_w === null ? '' : `${Math.round(g.power_w)} W`), h('span', {}, `${pct}% of ${GW.fmtBytes(g.mem_total)}`)),
      g.drain_reason ? h('div', { class: 'error', title: `drained: ${g.drain_reason}` }, `drained: ${g.drain_reason}`) : null,
      jobLine,
      GW.cardAlerts ? GW.cardAlerts(g) : null,
      GW.cardProcs ? GW.cardProcs(g) : null,
      evs.length ? h('ul', { class: 'gpu-events', 'aria-label': `GPU ${g.index}'s latest events`, tabindex: '0' },
        evs.map(e => h('li', { title: evText(e) }, evText(e)))) : null);
  }

  /* A cluster's controller (--backend slurm): its nodes' GPUs as their agents report them.  The
   * "gpus" events carry this host's GPUs only, so the nodes are fetched again every 5 s. */
  async function loadNodes() {
    if (!S.nodes) return;
    const nodes = await allNodes();
    if (nodes) { S.nodes = nodes; if (current === 'gpus') GW.render('gpus'); }
  }

  /* Every node: the controller answers a page at a time ("nodes_next" names the last node of a
   * page when more follow).  null when a page could not be had. */
  async function allNodes() {
    let nodes = [], after = null;
    for (let page = 0; page < 64; page++) {
      const q = after === null ? '' : `&after=${encodeURIComponent(after)}`;
      const r = await GW.api('GET', `/api/v1/gpus?limit=256${q}`);
      if (r.status !== 200 || !Array.isArray(r.data.nodes)) return null;
      nodes = nodes.concat(r.data.nodes);
      after = typeof r.data.nodes_next === 'string' ? r.data.nodes_next : null;
      if (after === null) return nodes;
    }
    return nodes;
  }

  function slurmJobText(j) {
    const who = j.user ? ` (${j.user})` : '';
    if (j.gpuward_job) return `${j.id}${who} = job ${j.gpuward_job}`;
    if (j.foreign && j.idle_for != null) return `${j.id}${who}, not gpuward's: idle ${GW.fmtDur(j.idle_for)}${j.idle_action ? `, ${j.idle_action}` : ''}`;
    return `${j.id}${who}`;
  }

  function renderNodes() {
    let box = $('node-gpus');
    if (!box) {
      box = h('div', { id: 'node-gpus' });
      $('gpu-cards').after(box);
    }
    const nodes = S.nodes || [];
    box.hidden = !nodes.length;
    if (!nodes.length) return;
    const rows = [];
    for (const n of nodes) for (const g of n.gpus) rows.push(h('tr', {},
      h('td', {}, n.node), h('td', {}, n.stale ? `stale ${Math.round(n.age)}s` : g.health),
      h('td', {}, String(g.index)), h('td', {}, g.util == null ? '—' : `${g.util}%`),
      h('td', {}, `${GW.fmtBytes(g.mem_used)} / ${GW.fmtBytes(g.mem_total)}`),
      h('td', {}, g.slurm_jobs.length ? g.slurm_jobs.map(slurmJobText).join(', ') : '—')));
    box.replaceChildren(h('h2', {}, 'Cluster nodes'), h('table', { 'aria-label': "the cluster nodes' GPUs" },
      h('thead', {}, h('tr', {}, ['Node', 'State', 'GPU', 'Util', 'Memory', 'Slurm jobs'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)));
  }

  function renderGpus() {
    renderNodes();
    const box = $('gpu-cards');
    if (!S.gpus) { box.replaceChildren(h('p', { class: 'empty' }, 'Loading…')); return; }
    const gpus = S.gpus.gpus;
    $('gpus-sub').textContent = gpus.length ? `${gpus.length} GPU${gpus.length === 1 ? '' : 's'}` +
      (S.gpus.rogue_processes ? ` · ${S.gpus.rogue_processes} rogue process${S.gpus.rogue_processes === 1 ? '' : 'es'}` : '') : '';
    if (!gpus.length) {
      box.replaceChildren(h('p', { class: 'empty' }, 'No GPUs: the daemon found no NVIDIA GPU on this host ' +
        '(its log says why).'));
      return;
    }
    GW.keepFocus(() => box.replaceChildren(...gpus.map(g => gpuCard(g, S.jobs))));
  }

  /* ---- Queue view ---- */

  function queueFilter() {
    const q = new URLSearchParams(location.hash.split('?')[1] || '');
    return { user: q.get('user') || '', state: q.get('state') || '' };
  }

  function setQueueFilter(f) {
    const q = new URLSearchParams();
    if (f.user) q.set('user', f.user);
    if (f.state) q.set('state', f.state);
    const s = q.toString();
    history.replaceState(null, '', '#/queue' + (s ? '?' + s : ''));
    GW.render();
  }

  async function loadFinished() {
    const res = await GW.api('GET', '/api/v1/jobs?state=COMPLETED,FAILED,CANCELLED,TIMEOUT,RECLAIMED&limit=200');
    S.finished = res.status === 200 ? res.data.jobs : [];
    GW.render();
  }

  function whyWhen(j) {
    const eta = GW.etaOf(j.eta);
    if (j.state === 'RUNNING') return eta ? `ends ~${GW.fmtTime(eta)}` : j.reason || '';
    if (j.state === 'PENDING' || j.state === 'HELD') {
      const start = j.predicted_start ?? (j.eta && j.eta.start);
      return (j.reason || '') + (start ? ` · starts ~${GW.fmtTime(start)}` : '') +
             (j.not_before ? ` · not before ${GW.fmtTime(j.not_before)}` : '');
    }
    return j.reason || '';
  }

  /* One line per job (style.css: fixed heights); what does not fit is in the cell's title. */
  function jobRow(j, now) {
    const run = j.start_time ? (j.end_time || now) - j.start_time : null;
    const array = j.array && ACTIVE.has(j.state);
    const why = array ? `array ${j.array}: ${arrayCounts(j, S.jobs)}` : whyWhen(j);
    const label = jobLabel(j);
    return h('tr', { 'data-job': j.id },
      h('td', { title: label }, h('a', { href: `#/job/${j.id}`, 'data-key': `job-link-${j.id}` }, label)),
      h('td', { title: j.name }, j.name),
      h('td', { class: 'hide-narrow' }, j.user),
      h('td', {}, h('span', { class: `state ${j.state}` }, j.state)),
      h('td', { class: 'msg', title: why || null }, why),
      h('td', { class: 'hide-narrow' }, j.gpus && j.gpus.length ? j.gpus.join(',') : `${j.ngpus} wanted`),
      h('td', { class: 'num hide-narrow', title: j.priority_why || null }, GW.prioText(j)),
      h('td', { class: 'hide-narrow' }, GW.fmtTime(j.submit_time)),
      h('td', { class: 'num' }, run === null ? '—' : GW.fmtDur(run)),
      h('td', { class: 'actions' }, GW.actionButtons(j)));
  }

  function renderQueue() {
    const f = queueFilter();
    const fu = $('f-user'), fs = $('f-state');
    if (document.activeElement !== fu) fu.value = f.user;
    fs.value = f.state;
    let list;
    if (f.state === 'finished') {
      if (!S.finished) { loadFinished(); list = []; }
      else list = S.finished;
    } else {
      list = foldArrays([...S.jobs.values()]);
      /* The daemon's own order: priority, then the user's fair-share factor, then submission. */
      list.sort((a, b) => (b.state === 'RUNNING') - (a.state === 'RUNNING') || (b.priority - a.priority) ||
        ((b.fairshare ?? 0) - (a.fairshare ?? 0)) || a.id - b.id);
      if (f.state) list = list.filter(j => j.state === f.state);
    }
    const users = new Set([...S.jobs.values()].map(j => j.user));
    $('f-users').replaceChildren(...[...users].sort().map(u => h('option', { value: u })));
    if (f.user) list = list.filter(j => j.user === f.user);
    if (GW.onlyMine) list = GW.onlyMine(list);
    const now = GW.now();
    GW.keepFocus(() => $('queue-body').replaceChildren(...list.map(j => jobRow(j, now))));
    $('queue-count').textContent = `${list.length} job${list.length === 1 ? '' : 's'}`;
    const empty = $('queue-empty');
    empty.hidden = list.length > 0 || !S.loaded;
    $('queue-table').parentElement.hidden = !list.length && S.loaded;
    if (S.jobs.size === 0 && f.state !== 'finished')
      empty.replaceChildren('No jobs waiting or running. Submit one with ',
        h('code', {}, 'gpuward submit --gpus 1 -- python3 train.py'), '; ended jobs are under State: finished.');
    else empty.textContent = f.state === 'finished' && S.finished && !S.finished.length && !f.user
      ? 'No job has finished yet.' : 'No job matches these filters.';
  }

  /* A waiting job's fair-share factor moves at every scheduling pass, which publishes no
   * event: while the queue is shown, its queued jobs' places are read again now and then. */
  async function refreshPlaces() {
    const queued = [...S.jobs.values()].some(j => j.state === 'PENDING' || j.state === 'HELD');
    if (current !== 'queue' || !queued || document.hidden) return;
    const res = await GW.api('GET', '/api/v1/jobs?state=PENDING,HELD&fields=id,priority,fairshare,priority_why');
    if (res.status !== 200) return;
    for (const p of res.data.jobs || []) {
      const j = S.jobs.get(p.id);
      if (j) Object.assign(j, p);
    }
    GW.render('queue');
  }

  function setupQueue() {
    $('queue-filter').addEventListener('submit', e => e.preventDefault());
    $('f-user').addEventListener('change', () => setQueueFilter({ user: $('f-user').value.trim(), state: $('f-state').value }));
    $('f-state').addEventListener('change', () => {
      if ($('f-state').value === 'finished') S.finished = null;
      setQueueFilter({ user: $('f-user').value.trim(), state: $('f-state').value });
    });
  }

  /* ---- router and rendering ---- */

  const VIEWS = ['gpus', 'queue', 'job', 'calendar', 'usage', 'models'];
  let current = null, frame = 0, pendingType = null;

  function route() {
    const path = (location.hash.replace(/^#\/?/, '').split('?')[0] || 'gpus').split('/');
    const view = VIEWS.includes(path[0]) ? path[0] : 'gpus';
    const changed = view !== current || (view === 'job' && GW.jobId !== Number(path[1])) || view === 'models';
    current = view;
    for (const v of VIEWS) $('view-' + v).hidden = v !== view;
    for (const a of document.querySelectorAll('[data-nav]'))
      if (a.dataset.nav === view) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    if (changed && GW.enterView) GW.enterView(view, path);
    document.title = `gpuward · ${view === 'job' ? 'job ' + path[1] : view}`;
    GW.render();
    if (changed) $('main').focus({ preventScroll: true });
  }
  GW.view = () => current;

  /* Renders the visible view at most once a frame, however many events arrive. */
  GW.render = function (type) {
    pendingType = pendingType && pendingType !== type ? 'all' : type || 'all';
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const t = pendingType;
      pendingType = null;
      if (current === 'gpus') { renderGpus(); if (GW.renderLanding) GW.renderLanding(t); }
      else if (current === 'queue' && t !== 'gpus') renderQueue();
      else if (GW.renderView) GW.renderView(current, t);
    });
  };

  document.addEventListener('DOMContentLoaded', () => {
    $('tz').textContent = `times in ${Intl.DateTimeFormat().resolvedOptions().timeZone}`;
    loadInitial();
    renderWho();
    $('live').hidden = false;
    setupSignin();
    setupQueue();
    if (GW.setupViews) GW.setupViews();
    window.addEventListener('hashchange', route);
    route();
    loadGpus();
    setInterval(loadNodes, 5000);
    loadSession().then(() => GW.render());
    connect();
    /* Runtimes tick even when nothing is published. */
    setInterval(() => { if (current === 'queue' || current === 'gpus') GW.render('tick'); }, 10000);
    setInterval(refreshPlaces, 10000);
  });
})();
