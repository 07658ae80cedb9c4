/* gpuward dashboard: what the landing page has besides the GPU cards (the host's CPU, memory
 * and disks, every GPU's utilisation on one chart, the reader's own jobs), what a GPU card
 * says of its processes and its job's deadlines, and the queue's "My jobs" switch. */
'use strict';
(function () {
  const GW = window.GW = window.GW || {};
  const $ = id => document.getElementById(id);
  const h = (...a) => GW.h(...a);
  const S = () => GW.state;
  const ACTIVE = new Set(['PENDING', 'HELD', 'RUNNING']);

  /* ---- a GPU card's processes and alerts ---- */

  const pct = v => (v === null || v === undefined ? '—' : `${Math.round(v)}%`);

  /* One row per process on the GPU, nvitop's columns.  A process of no job, or a job's off its
   * GPUs, is marked.  A guest reads no command line (the API gives null). */
  GW.cardProcs = function (g) {
    const procs = (g.processes || []).slice().sort((a, b) => (b.mem_used || 0) - (a.mem_used || 0));
    if (!procs.length) return h('div', { class: 'procs none' }, 'no processes');
    const hidden = S().me.signed_in ? '?' : '(hidden while signed out)';
    /* Two lines a process, as nvitop: its numbers, then its command line across the card. */
    const rows = procs.flatMap(p => {
      const cmd = p.command ?? hidden;
      const mark = p.stray ? `job ${p.job}'s, off its GPUs` : p.job === null ? 'rogue: of no job' : `job ${p.job}`;
      const cls = p.job === null || p.stray ? 'rogue' : null;
      return [h('tr', { class: cls, 'data-pid': p.pid },
        h('td', { class: 'num' }, String(p.pid)), h('td', { title: p.user }, p.user),
        h('td', { class: 'num' }, GW.fmtBytes(p.mem_used)), h('td', { class: 'num' }, pct(p.cpu))),
        h('tr', { class: `cmd-row${cls ? ' ' + cls : ''}` }, h('td', { class: 'cmd', colspan: '4', title: `${mark}: ${cmd}` }, cmd))];
    });
    return h('div', { class: 'procs', tabindex: '0', 'aria-label': `GPU ${g.index}'s processes` },
      h('table', {}, h('thead', {}, h('tr', {}, [['PID'], ['User'], ['GPU mem', 'GPU memory it holds'],
        ['CPU', 'CPU use since the last sample, in % of one CPU (400% = four busy CPUs)']]
        .map(([c, t], i) => h('th', { scope: 'col', title: t || null, class: i !== 1 ? 'num' : null }, c)))), h('tbody', {}, rows)));
  };

  /* The deadlines the job's page tells of, on its GPU's card: the idle watch's stop and the
   * leak's forecast. */
  GW.cardAlerts = function (g) {
    const ji = g.job_info;
    const out = [];
    if (ji && ji.reclaim_at)
      out.push(h('div', { class: 'alert idle', title: 'The idle watch warned this job: it is stopped then unless its GPUs work or it makes progress' },
        `idle: reclaimed in ${GW.fmtDur(ji.reclaim_at - GW.now())} unless it works`));
    if (ji && ji.leak) {
      const l = ji.leak, e = l.epochs_to_oom, s = l.seconds_to_oom;
      const when = e !== null && e !== undefined ? `OOM in ~${Math.max(1, Math.round(e))} epoch${Math.round(e) === 1 ? '' : 's'}` +
        (s ? ` (~${GW.fmtDur(s)})` : '') : 'memory leak';
      out.push(h('div', { class: 'alert leak', title: l.evidence || '' }, `leak: ${when}`));
    }
    return out.length ? h('div', { class: 'alerts' }, out) : null;
  };

  /* ---- the landing page: host, all GPUs on one chart, the reader's jobs ---- */

  function hostLine() {
    const host = S().gpus && S().gpus.host;
    const box = $('host-line');
    if (!host) { box.hidden = true; return; }
    box.hidden = false;
    const item = (k, v, title) => h('span', { class: 'host-item', title: title || null }, h('b', {}, k), ' ', v);
    const used = host.mem_total ? host.mem_total - host.mem_available : null;
    const disk = k => k.total ? `${Math.round((100 * (k.total - k.avail)) / k.total)}% used, ${GW.fmtBytes(k.avail)} free` : 'n/a';
    const name = k => (k.name === 'state_dir' ? 'state dir' : k.name);
    box.replaceChildren(
      item('CPU', host.cpu_percent === null ? '—' : `${Math.round(host.cpu_percent)}%${host.cpus ? ` of ${host.cpus}` : ''}`,
           'All CPUs of the host, since the last sample'),
      item('RAM', used === null ? '—' : `${GW.fmtBytes(used)} of ${GW.fmtBytes(host.mem_total)}`,
           'In use: total less what the kernel says is available'),
      ...(host.disks || []).map(k => item(`Disk ${name(k)}`, disk(k), k.name === 'state_dir'
        ? 'The file system of the daemon\'s state dir (job logs, the database)' : 'The root file system')));
  }

  let chartAt = 0;
  function allGpusChart() {
    const gs = (S().gpus && S().gpus.gpus) || [];
    const box = $('gpus-chart');
    box.parentElement.hidden = !gs.length;
    if (!gs.length || Date.now() - chartAt < 1500) return;
    chartAt = Date.now();
    GW.lineChart(box, { x: 'time', yMin: 0, yMax: 100, yFmt: v => v + '%', yUnit: 'utilisation, % of each GPU',
      xUnit: `time (${Intl.DateTimeFormat().resolvedOptions().timeZone})`, empty: 'No samples yet.',
      series: gs.map((g, i) => ({ name: `GPU ${g.index}`, color: GW.palette[i % GW.palette.length],
                                  points: (S().hist[g.index] || []).map(p => [p[0], p[1]]) })) });
  }

  function myJobs() {
    const me = S().me, box = $('my-jobs');
    if (!me.signed_in) {
      const all = [...S().jobs.values()];
      const run = all.filter(j => j.state === 'RUNNING').length;
      box.replaceChildren(h('p', { class: 'sub' }, `${run} running, ${all.length - run} waiting. Sign in to see your own jobs here.`));
      return;
    }
    const mine = [...S().jobs.values()].filter(j => j.user === me.user && ACTIVE.has(j.state) && j.array_job_id == null)
      .sort((a, b) => (b.state === 'RUNNING') - (a.state === 'RUNNING') || a.id - b.id);
    if (!mine.length) { box.replaceChildren(h('p', { class: 'empty' }, 'You have no job waiting or running.')); return; }
    const now = GW.now();
    box.replaceChildren(h('div', { class: 'table-wrap' }, h('table', { class: 'mine' },
      h('thead', {}, h('tr', {}, ['Job', 'Name', 'State', 'GPUs', 'Runtime', 'ETA / start'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, mine.map(j => {
        const eta = GW.etaOf(j.eta), start = j.predicted_start;
        return h('tr', { 'data-job': j.id },
          h('td', {}, h('a', { href: `#/job/${j.id}` }, GW.jobLabel ? GW.jobLabel(j) : String(j.id))),
          h('td', { class: 'name', title: j.name }, j.name), h('td', {}, h('span', { class: `state ${j.state}` }, j.state)),
          h('td', {}, j.gpus && j.gpus.length ? j.gpus.join(',') : `${j.ngpus} wanted`),
          h('td', { class: 'num' }, j.start_time ? GW.fmtDur(now - j.start_time) : '—'),
          h('td', {}, j.state === 'RUNNING' ? (eta ? `ends ~${GW.fmtTime(eta)}` : '—') : start ? `starts ~${GW.fmtTime(start)}` : '—'));
      })))));
  }

  GW.renderLanding = function () {
    hostLine();
    allGpusChart();
    myJobs();
  };

  /* ---- the queue's "My jobs" switch, kept by this browser ---- */

  const MINE_KEY = 'gpuward.queue.mine';
  const mineOn = () => { try { return localStorage.getItem(MINE_KEY) === '1'; } catch (e) { return false; } };

  GW.onlyMine = function (list) {
    const me = S().me, box = $('f-mine');
    box.disabled = !me.signed_in;
    box.checked = mineOn() && me.signed_in;
    box.parentElement.title = me.signed_in ? 'Only your jobs (this browser remembers it)' : 'Sign in to pick your own jobs';
    return box.checked ? list.filter(j => j.user === me.user) : list;
  };

  document.addEventListener('DOMContentLoaded', () => {
    $('f-mine').addEventListener('change', () => {
      try { localStorage.setItem(MINE_KEY, $('f-mine').checked ? '1' : '0'); } catch (e) { /* private mode: not kept */ }
      GW.render('queue');
    });
  });
})();
