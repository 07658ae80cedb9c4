/* gpuward dashboard: the job page, the 72-hour calendar with its booking form, and usage. */
'use strict';
(function () {
  const GW = window.GW = window.GW || {};
  const $ = id => document.getElementById(id);
  const h = (...a) => GW.h(...a);
  const S = () => GW.state;
  const FINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'RECLAIMED']);
  const LOG_KEEP = 256 * 1024;

  /* ---- job page ---- */

  const J = { id: 0, job: null, logOffset: 0, logTimer: 0, logBusy: false, seriesAt: 0, reloadTimer: 0 };

  function table(head, rows, empty) {
    if (!rows.length) return h('p', { class: 'empty' }, empty);
    return h('table', {}, h('thead', {}, h('tr', {}, head.map(c => h('th', { scope: 'col' }, c)))),
             h('tbody', {}, rows.map(r => h('tr', {}, r.map(c => (c instanceof Node ? c : h('td', {}, c ?? '—')))))));
  }

  /* Training awareness (epochs, ETA, leaks, snapshots) when the daemon has it. */
  function trainingFacts(t, ended) {
    if (!t) return [h('p', { class: 'sub' }, ended ? 'No training progress was seen.' : 'No training progress known for this job (no results.csv read).')];
    if (t.prediction) {
      const p = t.prediction, n = (p.similar_jobs || []).length;
      const basis = p.runtime_from === 'history' ? `the median of ${n} similar past job${n === 1 ? '' : 's'}`
        : 'its time limit' + (n ? ' (similar past jobs ran longer)' : ' (no similar past job)');
      return [h('p', { class: 'predicted' }, (p.predicted_start ? `Predicted start ~${GW.fmtTime(p.predicted_start)}`
        : `No predicted start: ${p.why_none || 'unknown'}`) + `; expected to run ${GW.fmtDur(p.runtime_seconds)}, ${basis}.`)];
    }
    const out = [];
    const epochs = t.epoch !== undefined && t.epoch !== null ? `epoch ${t.epoch}${t.epochs ? ' of ' + t.epochs : ''}` : '';
    const per = t.sec_per_epoch ? `, ${GW.fmtDur(t.sec_per_epoch)} per epoch` : '';
    const eta = t.eta ? `; ETA ${GW.fmtTime(t.eta)}${t.error_seconds ? ' ± ' + GW.fmtDur(t.error_seconds) : ''}` : '';
    const ends = Array.isArray(t.epoch_ends) ? t.epoch_ends.length : 0;
    const kept = !epochs && ends ? `${ends} epoch end${ends === 1 ? '' : 's'} recorded (the dashed lines on the GPU curves)` : '';
    /* A job that ended without progress will not report any: "not known yet" would promise some. */
    out.push(h('p', {}, `${epochs}${per}${eta}` || kept || (ended ? 'No training progress was seen.' : 'Training progress not known yet.')));
    if (t.leak && t.leak.detected) out.push(h('p', { class: 'error' }, `Memory leak: ${t.leak.evidence || ''}`));
    const snaps = t.snapshots || {};
    const snap = (k, s) => s ? `${k}: epoch ${s.epoch}${s.metric !== null && s.metric !== undefined ? ', mAP50-95 ' + s.metric.toFixed(3) : ''} (${GW.fmtTime(s.time)})` : null;
    const sl = [snap('best', snaps.best), snap('last', snaps.last)].filter(Boolean);
    if (sl.length) out.push(h('p', {}, 'Snapshots — ' + sl.join('; ')));
    return out;
  }

  /* Every reason it waits, one a line ("Quota: max_gpus=1 ...", "Dependency: after job 7
   * completes"), where the API gives more than the main one. */
  function whyText(j) {
    const rs = Array.isArray(j.reasons) ? j.reasons : [];
    if (rs.length < 2) return j.reason || '—';
    return h('span', { class: 'reasons', 'data-key': 'job-reasons' },
      ...rs.flatMap((r, i) => [i ? h('br') : null, `${r.code}${r.text ? ': ' + r.text : ''}`].filter(Boolean)));
  }

  function renderJobHead(j) {
    const fact = (k, v) => h('div', {}, h('dt', {}, k), h('dd', {}, v));
    const eta = GW.etaOf(j.eta);
    const run = j.start_time ? (j.end_time || GW.now()) - j.start_time : null;
    $('h-job').textContent = `Job ${j.display_id || j.id}: ${j.name}`;
    $('job-head').replaceChildren(h('dl', { class: 'job-head' },
      fact('State', h('span', { class: `state ${j.state}` }, j.state)),
      fact('Why', whyText(j)),
      fact('User', j.user),
      fact('GPUs', j.gpus && j.gpus.length ? j.gpus.join(', ') : `${j.ngpus} wanted`),
      fact('Attempt', `${j.attempt} of ${1 + (j.retries || 0)}`),
      fact('Submitted', GW.fmtTime(j.submit_time)),
      j.priority_why ? fact('Place in the queue', j.priority_why) : fact('Priority', GW.prioText(j)),
      j.state === 'PENDING' ? fact('Predicted start', j.predicted_start ? '~' + GW.fmtTime(j.predicted_start) : j.predicted_wait || 'not predicted')
        : fact('Started', GW.fmtTime(j.start_time)),
      fact(j.end_time ? 'Ended' : 'Runtime', j.end_time ? GW.fmtTime(j.end_time) : GW.fmtDur(run)),
      fact('ETA', eta ? GW.fmtTime(eta) : j.state === 'RUNNING' ? 'not known yet' : '—'),
      fact('Time limit', GW.fmtDur(j.time_limit)),
      j.telemetry ? fact('GPU-hours', GW.fmtGpuHours(j.telemetry.gpu_hours)) : null,
      j.exit_code !== null && j.exit_code !== undefined ? fact('Exit code', String(j.exit_code)) : null));
    GW.keepFocus(() => $('job-actions').replaceChildren(...GW.actionButtons(j))); /* a live update keeps the keyboard's place */
    $('job-training').replaceChildren(...trainingFacts(j.training, FINAL.has(j.state)));
    /* null: the daemon keeps a job's command line and directory from guests (guest_job_details). */
    $('job-command').textContent = j.command === null
      ? (S().me.signed_in ? 'Hidden.' : 'Hidden while you are signed out: the command line, working directory and log evidence of a job are shown to signed-in users (its log and evidence to its owner and admins only). Sign in with a token to see them.')
      : (j.command || []).join(' ') + (j.cwd ? `\n\nin ${j.cwd}` : '');
    $('job-attempts').replaceChildren(table(['Attempt', 'GPUs', 'Started', 'Ended', 'Class', 'Evidence', 'Exit'],
      (j.attempts || []).map(a => [String(a.attempt), (a.gpus || []).join(','), GW.fmtTime(a.start_time), GW.fmtTime(a.end_time),
        a.class, h('td', { class: 'msg' }, a.evidence || '—'), a.signal ? `signal ${a.signal}` : String(a.exit_code ?? '—')]),
      j.attempt > 1 ? 'No finished attempt recorded.' : 'First attempt: no earlier attempt.'));
    const ev = (j.events || []).slice().reverse();
    $('job-events').replaceChildren(table(['Time', 'State', 'What', 'Evidence'],
      ev.map(e => [GW.fmtTime(e.time, 'sec'), h('td', {}, h('span', { class: `state ${e.state}` }, e.state)), e.kind,
                   h('td', { class: 'msg' }, e.message)]), 'No events.'));
  }

  /* What a chart without a curve says.  A job too short for the kept per-minute samples still
   * has its telemetry summary (what `gpuward show` prints): that, rather than "nothing". */
  function noSamples(j, metric) {
    if (!j.start_time) return 'The job has not started.';
    if (!j.end_time) return 'No samples yet.';
    const gs = (j.telemetry && j.telemetry.gpus) || [];
    if (!gs.length) return 'No samples were taken while the job ran.';
    const pct = v => (v === null || v === undefined ? '—' : `${Math.round(v)}%`);
    return 'Too short for a curve; over its run:\n' + gs.map(g => metric === 'util'
      ? `GPU ${g.index}: util mean ${pct(g.util_mean)}, p95 ${pct(g.util_p95)}`
      : `GPU ${g.index}: peak memory ${GW.fmtBytes(g.mem_peak)}`).join('\n');
  }

  async function loadSeries(j) {
    J.seriesAt = GW.now();
    const since = j.start_time ? Math.floor(j.start_time) - 1 : 0;
    const [u, m, r] = await Promise.all([GW.api('GET', `/api/v1/jobs/${j.id}/series?metric=util&since=${since}`),
      GW.api('GET', `/api/v1/jobs/${j.id}/series?metric=mem&since=${since}`), GW.api('GET', `/api/v1/jobs/${j.id}/results`)]);
    if (J.id !== j.id) return;
    J.haveResults = r.status === 200;
    let vlines = [];
    if (r.status === 200 && Array.isArray(r.data.epoch_end_offsets) && r.data.epoch_end_offsets.length && j.start_time) {
      /* When each results.csv row appeared, as the daemon saw it (kept for ended jobs). */
      vlines = r.data.epoch_end_offsets.map(v => j.start_time + v);
    } else if (r.status === 200 && r.data.series.time && j.start_time) {
      /* Ultralytics' "time" column: seconds since the run started, at each epoch's end. */
      vlines = r.data.series.time.filter(v => v !== null).map(v => j.start_time + v);
    }
    const perGpu = (res, conv) => res.status === 200 ? Object.keys(res.data.gpus).map((g, i) => ({
      name: `GPU ${g}`, color: GW.palette[i % GW.palette.length], points: res.data.gpus[g].map(([t, v]) => [t, conv(v)]) })) : [];
    const xUnit = `time (${Intl.DateTimeFormat().resolvedOptions().timeZone}); dashed: epoch ends`;
    GW.lineChart($('job-util'), { x: 'time', yMin: 0, yMax: 100, yFmt: v => v + '%', yUnit: 'utilisation, %', xUnit, vlines,
      series: perGpu(u, v => v), empty: noSamples(j, 'util') });
    GW.lineChart($('job-mem'), { x: 'time', yMin: 0, yFmt: v => GW.fmtBytes(v * 1073741824).replace(' ', ''), yUnit: 'GPU memory used',
      yTip: v => GW.fmtBytes(v * 1073741824), xUnit, vlines,
      series: perGpu(m, v => v / 1073741824), empty: noSamples(j, 'mem') });
    if (r.status !== 200) {
      const why = r.status === 404 ? 'No training curves: ' + GW.errText(r) + '.' : GW.errText(r);
      GW.lineChart($('job-loss'), { series: [], empty: why });
      GW.lineChart($('job-map'), { series: [], empty: why });
      return;
    }
    const ep = r.data.epochs, col = name => ep.map((e, i) => [e, r.data.series[name][i]]);
    GW.lineChart($('job-loss'), { x: 'epoch', yUnit: 'loss (results.csv)', xUnit: 'epoch', series: r.data.loss.map(n => ({ name: n, points: col(n) })),
                                  empty: 'results.csv has no loss column yet.' });
    GW.lineChart($('job-map'), { x: 'epoch', yMin: 0, yUnit: 'mAP (0-1)', xUnit: 'epoch', series: [r.data.map50, r.data.map50_95].filter(Boolean)
      .map(n => ({ name: n, points: col(n) })), empty: 'results.csv has no mAP column.' });
  }

  async function pollLog() {
    if (J.logBusy || GW.view() !== 'job') return;
    J.logBusy = true;
    const id = J.id, pre = $('job-log');
    try {
      for (let round = 0; round < 64; round++) {
        const res = await GW.api('GET', `/api/v1/jobs/${id}/log?offset=${J.logOffset}&limit=262144`);
        if (J.id !== id) return;
        if (res.status !== 200) {
          pre.textContent = res.status === 403 || res.status === 401
            ? 'Only the job\'s owner or an admin may read its log: sign in with their token.' : GW.errText(res);
          $('job-log-state').textContent = '';
          return;
        }
        const off = Number(res.headers.get('X-Log-Offset'));
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
        if (res.data.length) {
          let text = (J.logOffset === 0 ? '' : pre.textContent) + res.data;
          if (text.length > LOG_KEEP) text = '…\n' + text.slice(text.length - LOG_KEEP);
          pre.textContent = text;
          if (atBottom) pre.scrollTop = pre.scrollHeight;
        } else if (J.logOffset === 0) pre.textContent = '(empty so far)';
        const st = res.headers.get('X-Job-State');
        $('job-log-state').textContent = FINAL.has(st) ? `(${st.toLowerCase()}: complete)` : '(following)';
        const more = off > J.logOffset && res.data.length >= 262144;
        J.logOffset = off;
        if (!more) return;
      }
    } finally {
      J.logBusy = false;
    }
  }

  async function loadJob(id, full) {
    const res = await GW.api('GET', `/api/v1/jobs/${id}`);
    if (J.id !== id) return;
    if (res.status !== 200) {
      $('h-job').textContent = `Job ${id}`;
      $('job-head').replaceChildren(h('p', { class: 'empty' }, GW.errText(res)));
      return;
    }
    const attemptChanged = J.job && J.job.attempt !== res.data.attempt;
    J.job = res.data;
    renderJobHead(J.job);
    if (attemptChanged) { J.logOffset = 0; }
    if (full || attemptChanged) loadSeries(J.job);
    pollLog();
  }

  function enterJob(id) {
    clearInterval(J.logTimer);
    Object.assign(J, { id, job: null, logOffset: 0, logBusy: false, haveResults: false });
    for (const b of ['job-head', 'job-attempts', 'job-events', 'job-actions', 'job-training', 'job-util', 'job-mem', 'job-loss', 'job-map'])
      $(b).replaceChildren();
    $('job-command').textContent = '';
    $('job-log').textContent = '';
    loadJob(id, true);
    J.logTimer = setInterval(() => {
      if (GW.view() !== 'job' || J.id !== id) { clearInterval(J.logTimer); return; }
      if (J.job && !FINAL.has(J.job.state)) pollLog();
    }, 2000);
  }

  function jobLiveEvent(type, d) {
    if (GW.view() !== 'job' || !J.id) return;
    if ((type === 'job' || type === 'job_event') && d.id === J.id) {
      clearTimeout(J.reloadTimer);
      J.reloadTimer = setTimeout(() => loadJob(J.id, FINAL.has(d.state)), 250);
    } else if (type === 'gpus' && J.job && J.job.state === 'RUNNING' && GW.now() - J.seriesAt >= (J.haveResults ? 10 : 3))
      loadSeries(J.job);
  }

  /* ---- calendar ---- */

  const KINDS = [['running', 'running job'], ['predicted', 'predicted start'], ['booking', 'booking'],
                 ['booking-pending', 'booking awaiting approval'], ['drained', 'drained GPU']];
  const C = { sched: null, bookings: [], timer: 0 };

  async function loadCalendar() {
    const [s, b] = await Promise.all([GW.api('GET', '/api/v1/schedule?hours=72'), GW.api('GET', '/api/v1/bookings')]);
    C.sched = s.status === 200 ? s.data : null;
    C.bookings = b.status === 200 ? b.data.bookings : [];
    renderCalendar();
  }

  function segWhat(g) { return g.kind.startsWith('booking') ? `booking ${g.id}` : g.kind === 'drained' ? 'drained' : `job ${g.id}`; }

  function renderCalendar() {
    const box = $('cal-chart');
    const n = S().gpus ? S().gpus.gpus.length : 0;
    if (!C.sched) { box.replaceChildren(h('p', { class: 'empty' }, 'Loading…')); return; }
    if (!n) { box.replaceChildren(h('p', { class: 'empty' }, 'No GPUs on this host.')); return; }
    const { from, to } = C.sched, segs = C.sched.segments;
    const W = 1000, L = 56, R = 6, ROW = 26, T = 22, H = T + n * ROW + 4;
    const X = t => L + ((Math.min(Math.max(t, from), to) - from) / (to - from)) * (W - L - R);
    const el = GW.svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'xMinYMin meet' });
    const tz = new Date().getTimezoneOffset() * -60;
    for (let t = Math.ceil((from + tz) / 21600) * 21600 - tz; t < to; t += 21600) {
      el.append(GW.svg('line', { x1: X(t), x2: X(t), y1: T - 4, y2: H, class: 'hour' }));
      const lab = GW.svg('text', { x: X(t) + 2, y: 12 });
      lab.textContent = GW.fmtTime(t, 'tick');
      el.append(lab);
    }
    for (let g = 0; g < n; g++) {
      const lab = GW.svg('text', { x: 4, y: T + g * ROW + 16 });
      lab.textContent = `GPU ${g}`;
      el.append(lab);
    }
    /* Jobs are drawn over bookings and drained spans, and at least 4 px wide: a job of a few
     * minutes beside a booking on its GPU was otherwise in the legend and covered in the chart. */
    const LAYER = { drained: 0, 'booking-pending': 1, booking: 2, predicted: 3, running: 4 };
    const drawOrder = segs.slice().sort((a, b) => (LAYER[a.kind] ?? 0) - (LAYER[b.kind] ?? 0));
    for (const s of drawOrder) {
      const x0 = X(s.start), x1 = X(s.end), y = T + s.gpu * ROW + 2;
      const job = s.kind === 'running' || s.kind === 'predicted';
      const grp = GW.svg('g', { class: `seg ${s.kind}`, 'data-seg': `${job ? 'job' : s.kind}-${s.id}-${s.gpu}` });
      const title = GW.svg('title');
      title.textContent = `GPU ${s.gpu}: ${segWhat(s)} ${s.kind} ${GW.fmtTime(s.start)} – ${GW.fmtTime(s.end)} ${s.label || ''}`;
      grp.append(title, GW.svg('rect', { x: x0, y, width: Math.max(job ? 4 : 2, x1 - x0), height: ROW - 5, rx: job ? 1 : 3 }));
      if (x1 - x0 > 60) {
        const t = GW.svg('text', { x: x0 + 4, y: y + 14 });
        t.textContent = `${segWhat(s)} ${s.label || ''}`.slice(0, Math.floor((x1 - x0) / 6));
        grp.append(t);
      }
      el.append(grp);
    }
    const nx = X(GW.now());
    el.append(GW.svg('line', { x1: nx, x2: nx, y1: T - 4, y2: H, class: 'now' }));
    box.replaceChildren(el);
    $('cal-legend').replaceChildren(...KINDS.map(([k, label]) => h('span', { class: `seg ${k}` },
      h('i'), label)));
    const sorted = segs.slice().sort((a, b) => a.start - b.start || a.gpu - b.gpu);
    $('cal-list').replaceChildren(table(['GPU', 'What', 'Kind', 'From', 'Until', 'Label'],
      sorted.map(s => [String(s.gpu), s.kind.startsWith('booking') || s.kind === 'drained' ? segWhat(s)
        : h('td', {}, h('a', { href: `#/job/${s.id}` }, segWhat(s))), s.kind, GW.fmtTime(s.start), GW.fmtTime(s.end), s.label || '']),
      'Nothing is running, predicted or booked in the next 72 hours: every GPU is free.'));
    $('cal-bookings').replaceChildren(table(['Booking', 'User', 'GPUs', 'From', 'Until', 'State', ''],
      C.bookings.map(b => [String(b.id) + (b.name ? ` ${b.name}` : ''), b.user, (b.gpus || []).map(g => `GPU ${g}`).join(', '), GW.fmtTime(b.start),
        GW.fmtTime(b.end), h('td', { title: b.note || '' }, b.state), h('td', { class: 'actions' },
          S().me.signed_in && (S().me.role === 'admin' || S().me.user === b.user)
            ? h('button', { type: 'button', 'data-key': `release-b-${b.id}`, onclick: () => releaseBooking(b) }, 'Release') : null)]),
      'No open bookings.'));
    const form = $('book-form');
    const signed = S().me.signed_in;
    $('b-submit').disabled = !signed;
    $('b-ngpus').max = String(n);
    if (!signed && !$('book-result').textContent) $('book-result').textContent = 'Sign in to book GPUs.';
    form.dataset.ready = '1';
  }

  async function releaseBooking(b) {
    if (!window.confirm(`Release booking ${b.id}?`)) return;
    const res = await GW.api('DELETE', `/api/v1/bookings/${b.id}`);
    GW.toast(res.status < 300 ? `booking ${b.id} released` : `booking ${b.id}: ${GW.errText(res)}`);
    loadCalendar();
  }

  /* The form's date and 24-hour time fields, in the viewer's zone. */
  function setStart(t) {
    const [date, time] = GW.fmtTime(t).split(' ');
    $('b-date').value = date;
    $('b-time').value = time;
  }

  /* Unix seconds of the form's date and time, or a message naming the field that is wrong. */
  function startOf() {
    const dm = /^(\d{4})-(\d{2})-(\d{2})$/.exec($('b-date').value.trim());
    const tm = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec($('b-time').value.trim());
    if (!dm) return { field: 'b-date', error: 'Date: write it as YYYY-MM-DD, e.g. 2026-11-27.' };
    if (!tm || +tm[1] > 23 || +tm[2] > 59 || (tm[3] && +tm[3] > 59))
      return { field: 'b-time', error: 'Start time: a 24-hour time, HH:MM from 00:00 to 23:59 (e.g. 14:30).' };
    const d = new Date(+dm[1], +dm[2] - 1, +dm[3], +tm[1], +tm[2], +(tm[3] || 0));
    if (d.getFullYear() !== +dm[1] || d.getMonth() !== +dm[2] - 1 || d.getDate() !== +dm[3])
      return { field: 'b-date', error: `Date: ${$('b-date').value.trim()} is not a day of the calendar.` };
    return { start: d.getTime() / 1000 };
  }

  async function book(ev) {
    ev.preventDefault();
    const out = $('book-result');
    const when = startOf();
    for (const f of ['b-date', 'b-time']) $(f).removeAttribute('aria-invalid');
    if (when.error) {
      out.className = 'result bad';
      out.textContent = when.error;
      $(when.field).setAttribute('aria-invalid', 'true');
      $(when.field).focus();
      return;
    }
    const start = when.start;
    const body = { ngpus: Number($('b-ngpus').value), start, duration: $('b-duration').value };
    if ($('b-name').value.trim()) body.name = $('b-name').value.trim();
    $('b-submit').disabled = true;
    const res = await GW.api('POST', '/api/v1/bookings', body);
    $('b-submit').disabled = !S().me.signed_in;
    out.replaceChildren();
    if (res.status === 201) {
      const b = res.data;
      out.className = 'result ok';
      out.textContent = b.state === 'APPROVED'
        ? `Booking ${b.id} approved: GPU ${b.gpus.join(', ')}, ${GW.fmtTime(b.start)} – ${GW.fmtTime(b.end)}.`
        : `Booking ${b.id} waits for an admin's approval (${b.note || b.state}).`;
    } else {
      out.className = 'result bad';
      out.append(GW.errText(res) + (res.status === 401 ? ' Sign in first.' : ''));
      const near = res.data && res.data.nearest;
      if (near) {
        out.append(h('br'), `Nearest free window (your time): ${GW.fmtTime(near.start)} – ${GW.fmtTime(near.end)}. `,
          h('button', { type: 'button', onclick: () => { setStart(near.start); $('b-date').focus(); } },
            'Use this window'));
      }
    }
    loadCalendar();
  }

  /* ---- usage ---- */

  const U = { busy: false };

  async function loadUsage() {
    if (U.busy) return;
    U.busy = true;
    const box = $('usage-body');
    box.replaceChildren(h('p', { class: 'empty' }, 'Adding up the last 7 days…'));
    try {
      /* The daemon adds up every job of the window (GET /api/v1/usage). */
      const res = await GW.api('GET', '/api/v1/usage?days=7');
      if (res.status !== 200) {
        box.replaceChildren(h('p', { class: 'empty' }, `Usage unavailable: ${(res.data && res.data.error) || res.status}`));
        return;
      }
      renderUsage(res.data.users.filter(u => u.gpu_hours > 0).map(u => ({
        user: u.user, gh: u.gpu_hours, jobs: u.jobs, util: u.util_mean,
        reclaimed: (u.states && u.states.RECLAIMED) || 0, reclaimedGh: u.reclaimed_gpu_hours,
      })));
    } finally {
      U.busy = false;
    }
  }

  function renderUsage(list) {
    const box = $('usage-body');
    if (!list.length) {
      box.replaceChildren(h('p', { class: 'empty' }, 'No GPU time used in the last 7 days.'));
      return;
    }
    const max = Math.max(...list.map(u => u.gh));
    const bars = h('div', { class: 'bars', role: 'list', 'aria-label': 'GPU-hours per user' });
    for (const u of list) {
      const bar = h('div', { class: 'bar' });
      if (u.gh > 0) bar.style.width = `${Math.max(0.5, (100 * u.gh) / max)}%`;
      else bar.classList.add('none'); /* nothing used draws nothing; the cell keeps the grid's place */
      bars.append(h('span', { role: 'listitem' }, u.user), bar, h('span', { class: 'num' }, `${GW.fmtGpuHours(u.gh)} GPU-h`));
    }
    box.replaceChildren(bars, h('h2', {}, 'Per user'), h('div', { class: 'table-wrap' }, table(
      ['User', 'GPU-hours', 'Jobs', 'Mean utilisation', 'Reclaimed jobs', 'GPU-hours of reclaimed jobs'],
      list.map(u => [u.user, h('td', { class: 'num' }, GW.fmtGpuHours(u.gh)), h('td', { class: 'num' }, String(u.jobs)),
        h('td', { class: 'num' }, u.util !== null && u.util !== undefined ? `${u.util.toFixed(0)}%` : '—'),
        h('td', { class: 'num' }, String(u.reclaimed)), h('td', { class: 'num' }, GW.fmtGpuHours(u.reclaimedGh))]), '')),
      h('p', { class: 'sub' }, `GPU-hours count each job's GPUs times its time inside the last 7 days. Mean utilisation is ` +
        'weighted by GPU-hours over the jobs whose GPUs were sampled.'));
  }

  /* ---- models ---- */

  /* The selected model's manifests are fetched one a version: the summaries do not list files.
   * Only the newest MODEL_FILES_KEEP get their files shown, so a long-lived model costs a
   * bounded number of requests. */
  const MODEL_FILES_KEEP = 20;
  const M = { seq: 0 };
  const enc = encodeURIComponent;
  const metricText = m => (m && m.value !== null && m.value !== undefined ? `${+m.value.toFixed(4)}` : '—');

  function modelOf(seg) {
    try { return seg ? decodeURIComponent(seg) : ''; } catch (e) { return seg; } /* a hand-typed bad escape */
  }

  async function loadModels(name) {
    const seq = ++M.seq;
    const list = $('models-list');
    const res = await GW.api('GET', '/api/v1/models');
    if (seq !== M.seq) return;
    if (res.status !== 200) {
      list.replaceChildren(h('p', { class: 'empty' }, `Models unavailable: ${GW.errText(res)}`));
      $('model-detail').hidden = true;
      return;
    }
    const models = res.data.models || [];
    list.replaceChildren(h('div', { class: 'table-wrap' }, table(
      ['Model', 'Versions', 'Latest', 'Metric', 'Value', 'Job', 'Published'],
      models.map(m => {
        const l = m.latest || {};
        return [h('td', {}, h('a', { href: `#/models/${enc(m.name)}`, 'aria-current': m.name === name ? 'true' : null }, m.name)),
          h('td', { class: 'num' }, String(m.versions)), l.version ? `v${l.version}` : '—',
          (l.metric && l.metric.name) || '—', h('td', { class: 'num' }, metricText(l.metric)),
          l.job ? h('td', {}, h('a', { href: `#/job/${l.job}` }, String(l.job))) : '—', GW.fmtTime(l.time)];
      }), 'No model published yet: submit a training job with --publish NAME.')));
    if (name) await loadModel(name, seq);
    else $('model-detail').hidden = true;
  }

  async function loadModel(name, seq) {
    const res = await GW.api('GET', `/api/v1/models/${enc(name)}`);
    if (seq !== M.seq) return;
    $('model-detail').hidden = false;
    $('h-model').textContent = `Model ${name}`;
    if (res.status !== 200) {
      $('model-versions').replaceChildren(h('p', { class: 'empty' }, GW.errText(res)));
      GW.lineChart($('model-chart'), { x: 'epoch', series: [], empty: 'No versions.' });
      return;
    }
    const vs = res.data.versions || [];
    const recent = vs.slice(-MODEL_FILES_KEEP);
    const manifests = await Promise.all(recent.map(v => GW.api('GET', `/api/v1/models/${enc(name)}/v${v.version}`)));
    if (seq !== M.seq) return;
    const files = new Map(recent.map((v, i) => [v.version, manifests[i].status === 200 ? manifests[i].data.files || [] : null]));
    /* One curve a metric: a version published --publish-if-better another metric is listed by that one. */
    const byMetric = new Map();
    for (const v of vs) if (v.metric && v.metric.value !== null && v.metric.value !== undefined) {
      if (!byMetric.has(v.metric.name)) byMetric.set(v.metric.name, []);
      byMetric.get(v.metric.name).push([v.version, v.metric.value]);
    }
    GW.lineChart($('model-chart'), { x: 'epoch', xUnit: 'version', xTip: v => `v${v}`, yUnit: 'the metric each version is listed by',
      series: [...byMetric].map(([n, points]) => ({ name: n, points })), empty: 'No version has a metric.' });
    const fileLinks = v => {
      const fs = files.get(v.version);
      if (fs === undefined) return h('td', { class: 'sub' }, `older than the newest ${MODEL_FILES_KEEP}`);
      if (fs === null) return h('td', { class: 'sub' }, 'manifest unavailable');
      return h('td', { class: 'files' }, ...fs.flatMap((f, i) => [i ? ' ' : null,
        h('a', { href: `/api/v1/models/${enc(name)}/v${v.version}/${enc(f.name)}`, download: `${name}-v${v.version}-${f.name}`,
                 title: `${GW.fmtBytes(f.size)}, sha256 ${f.sha256}` }, f.name)]));
    };
    $('model-versions').replaceChildren(h('div', { class: 'table-wrap' }, table(
      ['Version', 'Metric', 'Value', 'Best epoch', 'Job', 'User', 'Published', 'Files'],
      vs.slice().reverse().map(v => [`v${v.version}`, (v.metric && v.metric.name) || '—',
        h('td', { class: 'num' }, metricText(v.metric)), v.best_epoch ? String(v.best_epoch) : '—',
        v.job ? h('td', {}, h('a', { href: `#/job/${v.job}` }, String(v.job))) : '—', v.user, GW.fmtTime(v.time), fileLinks(v)]),
      'No versions.')));
  }

  /* ---- hooks for app.js ---- */

  GW.setupViews = function () {
    $('book-form').addEventListener('submit', book);
    setStart(Math.ceil(GW.now() / 3600) * 3600);
  };

  GW.enterView = function (view, path) {
    if (view === 'job') enterJob(Number(path[1]));
    else { clearInterval(J.logTimer); J.id = 0; }
    if (view === 'calendar') loadCalendar();
    if (view === 'usage') loadUsage();
    if (view === 'models') loadModels(modelOf(path[1]));
  };

  GW.renderView = function (view, type) {
    if (view === 'job' && J.job && type !== 'gpus' && type !== 'job' && type !== 'job_event') renderJobHead(J.job);
    if (view === 'calendar' && type !== 'gpus' && type !== 'tick') renderCalendar();
  };

  GW.onLiveEvent = function (type, d) {
    jobLiveEvent(type, d);
    if (GW.view() === 'calendar' && (type === 'booking' || type === 'job')) {
      clearTimeout(C.timer);
      C.timer = setTimeout(loadCalendar, 500);
    }
  };

  GW.onResync = function () {
    if (GW.view() === 'job' && J.id) loadJob(J.id, true);
    if (GW.view() === 'calendar') loadCalendar();
  };
})();
