// The dashboard in real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core)
// against a real gpuwardd on simulated GPUs with the fake trainer:
//   security headers (CSP without inline scripts, nosniff, frame-ancestors 'none') and no inline
//   script in the page; the empty states of a fresh daemon and of one without GPUs; the GPU
//   cards show the trainer's utilisation; a job submitted with the CLI appears in the queue
//   without a reload and moves to RUNNING; GPU cards and queue rows keep their boxes across
//   live updates; its page draws utilisation and loss curves; a guest sees no buttons and the
//   API refuses its cancel; signed in with a token, the Cancel button cancels, also from the
//   keyboard (Tab, Enter; Space on Release); every action button whole in its cell (1280, 1400,
//   1920 and 390 px); times 24-hour "YYYY-MM-DD HH:MM" in the viewer's zone (the browser runs in
//   America/St_Johns with a 12-hour locale); a booking from the calendar shows its approval, a
//   second one the refusal with the nearest window; a finished short job shows its telemetry
//   summary and no empty band under its header; usage of small amounts in two significant
//   digits; no CSP violation or script error; no horizontal scroll at 1280x800 or 390x844;
//   screenshots go to $GW_BUILD_DIR/browser-artifacts.  The page has its data at first paint: without
//   scripts it shows the GPUs and the queue as tables, and with them the cards and the queue are
//   drawn before any API call answers.  The calendar draws a short running job over the booking
//   that follows it on its GPU.
// Every process it starts is stopped by PID; every wait is bounded.
'use strict';
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CHROMIUM = process.env.GW_CHROMIUM || '/usr/bin/chromium';
const BUILD = path.resolve(process.env.GW_BUILD_DIR || path.join(__dirname, '..', '..', 'build'));
const GPUWARDD = path.join(BUILD, 'gpuwardd');
const GPUWARD = path.join(BUILD, 'gpuward');
const TRAINER = path.join(BUILD, 'tests', 'fakes', 'gw-fake-trainer');
const FAKE_NVML = path.join(BUILD, 'tests', 'fakes', 'libnvidia-ml.so.1');
const ARTIFACTS = process.env.GW_ARTIFACTS || path.join(BUILD, 'browser-artifacts');
// The browser's zone and locale: not the machine's (UTC here), a half-hour offset, and a
// 12-hour locale (the page writes 24-hour times whatever the locale, as the CLI does).
const ZONE = 'America/St_Johns', LOCALE = 'en-US';
// The model the test publishes (Models view).
const MODEL = 'browser-det';

// "2026-11-27 14:02" for Unix seconds t in ZONE: how the dashboard writes every time.
function isoLike(t) {
  const f = new Intl.DateTimeFormat('en-CA', { timeZone: ZONE, year: 'numeric', month: '2-digit', day: '2-digit',
                                               hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const p = Object.fromEntries(f.formatToParts(new Date(t * 1000)).map(x => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

// No 12-hour time anywhere in the visible text of the page.
async function no12HourTimes(page, what) {
  const text = await page.locator('main').innerText();
  assert.doesNotMatch(text, /\d\s?(AM|PM|am|pm)\b/, `${what}: a 12-hour time`);
}

// The action buttons of the queue that their cell clips (cut off or elided): their data-key.
async function clippedButtons(page) {
  return page.$$eval('#queue-body td.actions button', bs => bs.filter(b => {
    const r = b.getBoundingClientRect(), c = b.closest('td').getBoundingClientRect();
    return b.scrollWidth > b.clientWidth || r.left < c.left - 0.5 || r.right > c.right + 0.5 || r.width < 1;
  }).map(b => b.dataset.key));
}

// The same once the queue has settled: a live update that lands while the buttons are measured
// (a predicted start arriving after a release, later with a slow daemon) re-renders the rows.
// A real clip stays; bounded at 3 s.
async function clippedButtonsSettled(page) {
  let clipped = await clippedButtons(page);
  for (let i = 0; i < 30 && clipped.length; i++) {
    await page.waitForTimeout(100);
    clipped = await clippedButtons(page);
  }
  return clipped;
}

let chromium;
try {
  ({ chromium } = require('playwright-core'));
  const want = require('./package.json').dependencies['playwright-core'];
  const have = require('playwright-core/package.json').version;
  if (have !== want) throw new Error(`playwright-core ${have} installed, package.json pins ${want}`);
} catch (e) {
  console.error(`FAIL: playwright-core is not installed as pinned in tests/browser (${e.message}); run: cd tests/browser && npm ci`);
  process.exit(1);
}

const sleep = ms => new Promise(r => setTimeout(r, ms));
async function waitUntil(pred, what, timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

class Daemon {
  constructor(opts = {}) {
    this.gpus = opts.gpus ?? 4;
    this.config = opts.config || null;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-browser-'));
    fs.chmodSync(this.dir, 0o755);
    this.state = path.join(this.dir, 'state');
    this.sock = path.join(this.dir, 'gw.sock');
    this.work = path.join(this.dir, 'work');
    fs.mkdirSync(this.work, { mode: 0o777 });
    fs.chmodSync(this.work, 0o777);
    // The model store: a folder of the daemon's user that no one else may write to.
    this.models = path.join(this.dir, 'models');
    fs.mkdirSync(this.models, { mode: 0o700 });
    fs.chmodSync(this.models, 0o700);
  }

  async start() {
    // No GPUs: a library that is not there, as on a host without the NVIDIA driver.
    const gpuArgs = this.gpus ? ['--simulate-gpus', String(this.gpus), '--nvml-lib', FAKE_NVML]
                              : ['--nvml-lib', path.join(this.dir, 'no-such-libnvidia-ml.so.1')];
    const args = ['--state-dir', this.state, '--socket', this.sock, '--listen', '127.0.0.1:0', ...gpuArgs,
                  '--grace-seconds', '1', '--sample-interval', '1'];
    if (this.config) {
      fs.writeFileSync(path.join(this.dir, 'gpuward.conf'), this.config);
      args.push('--config', path.join(this.dir, 'gpuward.conf'));
    }
    if (process.getuid() === 0) args.push('--allow-root-jobs');
    this.logFd = fs.openSync(path.join(this.dir, 'gpuwardd.log'), 'a');
    this.proc = spawn(GPUWARDD, args, { stdio: ['ignore', this.logFd, this.logFd] });
    this.exited = false;
    this.proc.on('exit', () => { this.exited = true; });
    const addr = path.join(this.state, 'listen.addr');
    await waitUntil(() => fs.existsSync(addr) || this.exited, 'gpuwardd to start');
    if (this.exited) throw new Error('gpuwardd exited:\n' + this.log());
    this.port = Number(fs.readFileSync(addr, 'utf8').trim().split(':').pop());
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  cli(...args) {
    return execFileSync(GPUWARD, ['--socket', this.sock, ...args], { cwd: this.work, encoding: 'utf8', timeout: 60000 });
  }

  async api(method, p) {
    const r = await fetch(this.url + p, { method });
    return { status: r.status, data: await r.json().catch(() => null) };
  }

  log() {
    try { return fs.readFileSync(path.join(this.dir, 'gpuwardd.log'), 'utf8'); } catch (e) { return ''; }
  }

  async stop() {
    if (!this.proc || this.exited) return;
    try {
      const jobs = (await this.api('GET', '/api/v1/jobs')).data.jobs || [];
      for (const j of jobs) this.cli('cancel', String(j.id));
    } catch (e) { console.error('cleanup:', e.message); }
    this.proc.kill('SIGTERM');
    const end = Date.now() + 15000;
    while (!this.exited && Date.now() < end) await sleep(50);
    if (!this.exited) this.proc.kill('SIGKILL');
  }

  cleanup() {
    try { fs.closeSync(this.logFd); } catch (e) { /* not opened */ }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

const problems = [];

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  // A profile that warns an idle job after 2 s and stops it only 10 minutes later: its
  // countdown stays on its GPU's card while the test reads it.  Jobs choose it by name.
  // A model store (model_store must be a top-level key: before the first section).
  const d = new Daemon();
  d.config = `model_store = ${d.models}\n[policy.quickwarn]\nidle_timeout = 2\nwarn = 600\ngrace = 1\n`;
  await d.start();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-chromium-'));
  let ctx;
  try {
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 800 },
      timezoneId: ZONE,
      locale: LOCALE,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', m => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
    page.on('pageerror', e => problems.push('page error: ' + e.message));
    page.on('dialog', dlg => dlg.accept());
    await run(d, page, ctx);
    // Refusals the test provokes (401, 404 before results.csv exists, 409 for a booking that does
    // not fit) are logged by Chromium as failed loads; anything else is a problem.
    const real = problems.filter(p => !/Failed to load resource: the server responded with a status of 4\d\d/.test(p));
    assert.deepEqual(real, [], 'script errors or CSP violations');
    console.log('PASS: dashboard browser test');
  } catch (e) {
    console.error('FAIL:', e.stack || e);
    console.error('--- gpuwardd log (tail) ---\n' + d.log().slice(-6000));
    process.exitCode = 1;
  } finally {
    if (ctx) await ctx.close().catch(() => {});
    await d.stop();
    const bad = d.log().match(/.*(AddressSanitizer|LeakSanitizer|runtime error).*/);
    if (bad) {
      console.error('FAIL: the daemon reported: ' + bad[0] + '\n' + d.log().slice(-6000));
      process.exitCode = 1;
    }
    d.cleanup();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

async function step(name, fn) {
  const t = Date.now();
  await fn();
  console.log(`ok - ${name} (${Date.now() - t} ms)`);
}

// Boxes of the elements matching sel, rounded to half pixels.
async function boxes(page, sel) {
  return page.$$eval(sel, els => els.map(e => {
    const r = e.getBoundingClientRect();
    return [r.x, r.y, r.width, r.height].map(v => Math.round(v * 2) / 2);
  }));
}

// Waits until `count` live "gpus" updates have been drawn: GPU 0's sparkline is redrawn
// (its path moves with the clock) at each.
async function gpuUpdates(page, count) {
  const spark = page.locator('#gpu-cards article[data-gpu="0"] svg.spark path').last();
  let last = await spark.getAttribute('d');
  for (let i = 0; i < count; i++) {
    await waitUntil(async () => {
      const d = await spark.getAttribute('d');
      if (d === last) return false;
      last = d;
      return true;
    }, `live GPU update ${i + 1}`);
  }
}

async function noHorizontalScroll(page, what) {
  const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(over <= 1, `${what}: the page is ${over}px wider than the window`);
}

// What the reader cannot read on the visible view: an element whose content is cut at its
// side (scrollWidth > clientWidth) unless it is a scroller or text cut with "…" whose title
// (its own or its parent's) has it whole; one cut at its foot by overflow: hidden (text for
// screen readers only, .visually-hidden, is clipped on purpose); and
// siblings inside a card, a card's head, a metric row, the host line, a chart or a set of
// buttons whose boxes overlap.  [] when all is readable.
async function unreadable(page) {
  return page.evaluate(() => {
    const out = [];
    const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
    const name = el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${typeof el.className === 'string' && el.className.trim()
      ? '.' + el.className.trim().split(/\s+/).join('.') : ''} "${(el.textContent || '').trim().slice(0, 50)}"`;
    const view = document.querySelector('main section.view:not([hidden])');
    const scroller = v => v === 'auto' || v === 'scroll';
    for (const el of [view, ...view.querySelectorAll('*')]) {
      if (!(el instanceof HTMLElement) || !shown(el) || el.closest('.visually-hidden')) continue; /* for screen readers */
      const cs = getComputedStyle(el);
      const titled = cs.textOverflow === 'ellipsis' &&
        [el, el.parentElement].some(e => e && (e.getAttribute('title') || '').includes((el.textContent || '').trim().slice(0, 20)));
      if (el.scrollWidth > el.clientWidth + 1 && !scroller(cs.overflowX) && !titled) out.push('cut at its side: ' + name(el));
      if (cs.overflowY === 'hidden' && el.scrollHeight > el.clientHeight + 1) out.push('cut at its foot: ' + name(el));
    }
    const overlap = (a, b) => {
      const r = a.getBoundingClientRect(), q = b.getBoundingClientRect();
      return Math.min(r.right, q.right) - Math.max(r.left, q.left) > 1 && Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top) > 1;
    };
    for (const box of view.querySelectorAll('.card, .card-head, .metric, .facts, .card .job, .alerts, .host-line, .chart-box, div.actions, td.actions')) {
      const kids = [...box.children].filter(k => shown(k) && getComputedStyle(k).position !== 'absolute');
      for (let i = 0; i < kids.length; i++) for (let k = i + 1; k < kids.length; k++)
        if (overlap(kids[i], kids[k])) out.push(`overlapping in ${name(box).slice(0, 40)}: ${name(kids[i])} / ${name(kids[k])}`);
    }
    return out;
  });
}

// Presses Tab until pred(activeElement) holds (at most max presses); returns the presses.
async function tabTo(page, pred, what, max = 40) {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(pred)) return i;
  }
  throw new Error(`Tab never reached ${what} in ${max} presses`);
}

async function run(d, page, ctx) {
  await step('the page loads with security headers, no inline script, and 4 GPU cards', async () => {
    const resp = await page.goto(d.url + '/');
    assert.equal(resp.status(), 200);
    const hd = resp.headers();
    const csp = hd['content-security-policy'];
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(hd['x-content-type-options'], 'nosniff');
    assert.equal(hd['x-frame-options'], 'DENY');
    const html = await resp.text();
    // The one script element without src is the first paint's JSON, which is data, not code.
    assert.doesNotMatch(html, /<script>|<script(?![^>]*\bsrc=)(?!\s+type="application\/json"\s+id="gw-state">)[^>]*>|\son[a-z]+=|\sstyle=/i,
                        'no inline script, event handler attribute or style attribute');
    assert.equal((html.match(/<script\b/g) || []).length, 5, 'four scripts and the first paint\'s JSON');
    for (const asset of ['/static/app.js', '/static/views.js', '/static/charts.js', '/static/landing.js', '/static/style.css']) {
      const r = await fetch(d.url + asset);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', asset);
      assert.match(r.headers.get('content-security-policy') || '', /frame-ancestors 'none'/, asset);
    }
    await page.waitForSelector('#gpu-cards article.card >> nth=3');
    assert.equal(await page.locator('#gpu-cards article.card').count(), 4);
    await page.waitForSelector('#live[data-state="live"]');
    assert.equal(await page.locator('script:not([src]):not([type="application/json"])').count(), 0);
    await page.evaluate(() => { window.__noReload = 'still here'; });
  });

  await step('a fresh daemon shows its empty states: no jobs, every GPU free, nothing booked or used', async () => {
    for (const n of [0, 1, 2, 3])
      await page.locator(`#gpu-cards article[data-gpu="${n}"] .job.idle`, { hasText: 'free' }).waitFor();
    await page.click('nav a[data-nav="queue"]');
    const empty = page.locator('#queue-empty');
    await empty.waitFor({ state: 'visible' });
    assert.match(await empty.innerText(), /No jobs waiting or running\..*gpuward submit --gpus 1/);
    assert.equal(await page.locator('#queue-table').isVisible(), false, 'no empty table under the text');
    await page.screenshot({ path: path.join(ARTIFACTS, 'queue-empty-1280x800.png') });
    await page.click('nav a[data-nav="calendar"]');
    await page.locator('#cal-list', { hasText: 'every GPU is free' }).waitFor();
    await page.click('nav a[data-nav="usage"]');
    await page.locator('#usage-body', { hasText: 'No GPU time used in the last 7 days' }).waitFor({ timeout: 15000 });
  });

  await step('a daemon without GPUs says so on the GPU view and the calendar', async () => {
    const bare = await new Daemon({ gpus: 0 }).start();
    const p2 = await ctx.newPage();
    try {
      p2.on('pageerror', e => problems.push('page error (no GPUs): ' + e.message));
      await p2.goto(bare.url + '/');
      await p2.locator('#gpu-cards .empty', { hasText: /No GPUs: the daemon found no NVIDIA GPU/ }).waitFor();
      await p2.locator('#driver', { hasText: 'no NVIDIA driver found' }).waitFor();
      await p2.screenshot({ path: path.join(ARTIFACTS, 'gpus-none-1280x800.png') });
      await p2.click('nav a[data-nav="calendar"]');
      await p2.locator('#cal-chart .empty', { hasText: 'No GPUs on this host' }).waitFor();
    } finally {
      await p2.close();
      await bare.stop();
      bare.cleanup();
    }
  });

  let jid;
  await step('a job submitted with the CLI appears in the queue without reload and moves to RUNNING', async () => {
    await page.click('nav a[data-nav="queue"]');
    await page.waitForSelector('#view-queue:not([hidden])');
    const out = d.cli('submit', '--json', '--gpus', '1', '--time', '10m', '--name', 'browser-demo', '--',
                      TRAINER, 'epochs=60', '--epoch-seconds', '1.5', '--util', '77');
    jid = JSON.parse(out).id;
    const row = page.locator(`#queue-body tr[data-job="${jid}"]`);
    await row.waitFor({ timeout: 15000 });
    await page.locator(`#queue-body tr[data-job="${jid}"] .state.RUNNING`).waitFor({ timeout: 20000 });
    assert.equal(await page.evaluate(() => window.__noReload), 'still here', 'the page was reloaded');
    assert.equal(await row.locator('button').count(), 0, 'a guest must not be offered buttons');
    assert.equal(await page.locator('#queue-empty').isVisible(), false, 'the empty text went');
    await page.screenshot({ path: path.join(ARTIFACTS, 'queue-1280x800.png') });
  });

  await step('a running array task has a row of its own, named 8_0 there and on its GPU card', async () => {
    const aid = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name', 'arr3', '--array', '0-2%1',
                                 '--', 'sleep', '120')).id;
    try {
      const task = await waitUntil(() => JSON.parse(d.cli('queue', '--json')).jobs
        .find(j => j.array_job_id === aid && j.state === 'RUNNING'), 'a task of the array running');
      const row = page.locator(`#queue-body tr[data-job="${task.id}"]`);
      await row.waitFor({ timeout: 15000 });
      assert.match(await row.innerText(), new RegExp(`^${aid}_${task.array_index}\\s+arr3[\\s\\S]*RUNNING`));
      await page.selectOption('#f-state', 'RUNNING');
      await row.waitFor({ timeout: 5000 });
      await page.selectOption('#f-state', '');
      await page.click('nav a[data-nav="gpus"]');
      const card = page.locator(`#gpu-cards article[data-gpu="${task.gpus[0]}"] .job a`);
      await waitUntil(async () => (await card.innerText()) === `job ${aid}_${task.array_index}`, 'the card names the task');
      await page.click('nav a[data-nav="queue"]');
    } finally {
      d.cli('cancel', String(aid));
    }
  });

  await step('first paint: without scripts the page shows the GPUs and the queue; with them, before any API answer', async () => {
    // No JavaScript: the scripts do not load, as in a browser with JavaScript off.
    const p2 = await ctx.newPage();
    try {
      await p2.route('**/static/*.js', r => r.abort());
      await p2.goto(d.url + '/');
      const gpus = p2.locator('#firstpaint #fp-gpus tbody tr');
      assert.equal(await gpus.count(), 4, 'a row per GPU');
      assert.match(await p2.locator('#fp-gpus tr[data-gpu="0"]').innerText(), /NVIDIA .*healthy/);
      const row = p2.locator(`#fp-jobs tr[data-job="${jid}"]`);
      assert.match(await row.innerText(), /browser-demo\s+\S+\s+RUNNING/);
      assert.ok(await row.isVisible(), 'the queue is on the screen');
      assert.match(await p2.locator('#whoami').innerText(), /guest/);
      await p2.screenshot({ path: path.join(ARTIFACTS, 'firstpaint-nojs-1280x800.png'), fullPage: true });
    } finally {
      await p2.close();
    }
    // Scripts, and an API that never answers: the cards and the queue come from the page itself.
    const p3 = await ctx.newPage();
    try {
      p3.on('pageerror', e => problems.push('page error (first paint): ' + e.message));
      await p3.route('**/api/v1/**', r => r.abort());
      await p3.goto(d.url + '/');
      await p3.locator('#gpu-cards article.card >> nth=3').waitFor({ timeout: 5000 });
      assert.equal(await p3.locator('#firstpaint').count(), 0, 'the plain tables go once the script runs');
      await p3.locator(`#gpu-cards a[href="#/job/${jid}"]`).first().waitFor({ timeout: 5000 });
      await p3.screenshot({ path: path.join(ARTIFACTS, 'firstpaint-js-1280x800.png') });
      await p3.click('nav a[data-nav="queue"]');
      await p3.locator(`#queue-body tr[data-job="${jid}"] .state.RUNNING`).waitFor({ timeout: 5000 });
    } finally {
      await p3.close();
    }
  });

  await step('the calendar draws a short running job over the booking that follows it on its GPU', async () => {
    const one = await new Daemon({ gpus: 1 }).start();
    const p4 = await ctx.newPage();
    try {
      p4.on('pageerror', e => problems.push('page error (calendar): ' + e.message));
      const sid = JSON.parse(one.cli('submit', '--json', '--gpus', '1', '--time', '2m', '--name', 'short', '--',
                                     'sleep', '300')).id;
      await waitUntil(async () => (await one.api('GET', `/api/v1/jobs/${sid}`)).data.state === 'RUNNING',
                      'the short job to run');
      one.cli('reserve', '--gpus', '1', '--start', '+3m', '--duration', '1h', '--name', 'after');
      await p4.goto(one.url + '/#/calendar');
      const job = p4.locator(`#cal-chart g.seg.running rect`);
      await job.waitFor({ timeout: 10000 });
      await p4.locator('#cal-chart g.seg.booking rect').waitFor({ timeout: 10000 });
      /* Found and measured in one task of the page: the calendar redraws on its events, and a
       * rect found first and measured in a later task may be a detached one (a zero box, whose
       * "middle" is the page's top corner). */
      const top = await p4.evaluate(() => {
        const r = document.querySelector('#cal-chart g.seg.running rect');
        if (!r) return 'no running job drawn';
        const b = r.getBoundingClientRect();
        const el = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
        const g = el && el.closest('g.seg');
        return g ? g.getAttribute('class') : el ? el.tagName : 'nothing';
      });
      assert.equal(top, 'seg running', 'the job is on top at its own middle');
      await p4.screenshot({ path: path.join(ARTIFACTS, 'calendar-short-job-1280x800.png') });
    } finally {
      await p4.close();
      await one.stop();
      one.cleanup();
    }
  });

  await step('a pending job shows its predicted start in the queue and on its page', async () => {
    await page.click('nav a[data-nav="queue"]');
    await page.waitForSelector('#view-queue:not([hidden])');
    const out = d.cli('submit', '--json', '--gpus', '4', '--time', '5m', '--name', 'browser-wait', '--', 'sleep', '60');
    const wid = JSON.parse(out).id;
    const row = page.locator(`#queue-body tr[data-job="${wid}"]`);
    await row.waitFor({ timeout: 15000 });
    await waitUntil(async () => /starts ~\S/.test(await row.innerText()), 'a predicted start in the queue');
    await page.click(`#queue-body tr[data-job="${wid}"] a[href="#/job/${wid}"]`);
    await page.waitForSelector('#view-job:not([hidden])');
    await waitUntil(async () => /Predicted start ~/.test(await page.locator('#job-training').innerText()),
                    'the prediction and its basis on the job page');
    assert.match(await page.locator('#job-head').innerText(), /Predicted start/);
    // Its place in the queue, as the daemon orders it: priority, then fair share, then submission.
    assert.match(await page.locator('#job-head div:has(> dt:text-is("Place in the queue")) dd').innerText(),
                 /^priority 0, then fairshare [0-9.]+: .* then submission order/);
    await page.click('nav a[data-nav="queue"]');
    await waitUntil(async () => /^\d\.\d\d$/.test((await row.locator('td').nth(6).innerText()).trim()),
                    'the fair-share factor in the queue\'s Prio column');
    assert.match(await row.locator('td').nth(6).getAttribute('title'), /^priority 0, then fairshare/);
    d.cli('cancel', String(wid));
  });

  await step('a job that waits for two reasons shows both on its page', async () => {
    const h1 = JSON.parse(d.cli('submit', '--json', '--hold', '--name', 'browser-first', '--', 'true')).id;
    const h2 = JSON.parse(d.cli('submit', '--json', '--hold', '--after', String(h1), '--name', 'browser-second', '--', 'true')).id;
    await page.evaluate((id) => { location.hash = `#/job/${id}`; }, h2);  // no reload: later steps check for one
    await page.waitForSelector('#view-job:not([hidden])');
    const why = page.locator('#job-head [data-key="job-reasons"]');
    await waitUntil(async () => (await why.count()) === 1, 'the reasons on the job page');
    assert.equal(await why.innerText(), `Held: held: it starts only once released\nDependency: after job ${h1} completes`);
    d.cli('cancel', String(h2), String(h1));
  });

  await step('the GPU card shows the trainer\'s utilisation, live', async () => {
    await page.click('nav a[data-nav="gpus"]');
    const card = page.locator('#gpu-cards article[data-gpu="0"]');
    await waitUntil(async () => /job \d+/.test(await card.innerText()), 'the job on GPU 0');
    await waitUntil(async () => {
      const m = (await card.locator('.metric .v').first().innerText()).match(/(\d+)%/);
      return m && Number(m[1]) >= 50;
    }, 'GPU 0 utilisation from the fake trainer');
    await waitUntil(async () => (await card.locator('svg.spark path').count()) >= 2, 'sparklines');
    assert.equal(await page.evaluate(() => window.__noReload), 'still here');
    await page.screenshot({ path: path.join(ARTIFACTS, 'gpus-1280x800.png') });
  });

  await step('a GPU card lists its processes (PID, user, command, GPU memory, CPU %); the landing page has the host, every GPU on one chart, and the jobs', async () => {
    const card = page.locator('#gpu-cards article[data-gpu="0"]');
    const pid = (await d.api('GET', `/api/v1/jobs/${jid}`)).data.pid;
    // The trainer (its process, not the job's supervisor) on GPU 0, with its command under it.
    const row = card.locator('.procs tbody tr[data-pid]').first();
    await waitUntil(async () => /\d+%/.test(await row.locator('td').nth(3).innerText().catch(() => '')), 'the process\'s CPU use');
    const cells = await row.locator('td').allInnerTexts();
    assert.ok(Number(cells[0]) > 0, `a PID: ${cells}`);
    assert.equal(cells[1], os.userInfo().username);
    assert.match(cells[2], /^\d+(\.\d)? (MiB|GiB)$/);
    assert.match(cells[3], /^\d+%$/);
    const cmd = card.locator('.procs tr.cmd-row td.cmd').first();
    assert.equal(await cmd.innerText(), '(hidden while signed out)', 'a guest reads no command line');
    assert.match(await cmd.getAttribute('title'), new RegExp(`^job ${jid}: `));
    assert.ok(pid > 0);
    assert.deepEqual(await page.$$eval('#gpu-cards article[data-gpu="0"] .procs th', ths => ths.map(t => t.textContent)),
                     ['PID', 'User', 'GPU mem', 'CPU']);
    const host = page.locator('#host-line');
    await waitUntil(async () => /CPU \d+% of \d+/.test(await host.innerText()), 'the host\'s CPU');
    assert.match(await host.innerText(), /RAM \S+ \S+ of \S+ \S+/);
    assert.match(await host.innerText(), /Disk state dir \d+% used, \S+ \S+ free/);
    assert.match(await host.innerText(), /Disk \/ \d+% used/);
    // Every GPU on one chart: a line and a legend entry each, in four colours.
    await waitUntil(async () => (await page.locator('#gpus-chart path.series').count()) === 4, 'a line per GPU');
    const strokes = await page.$$eval('#gpus-chart path.series', ps => ps.map(p => p.getAttribute('stroke')));
    assert.equal(new Set(strokes).size, 4, `distinct colours: ${strokes}`);
    assert.deepEqual(await page.$$eval('#gpus-chart .chart-legend span', ss => ss.map(x => x.textContent)), ['GPU 0', 'GPU 1', 'GPU 2', 'GPU 3']);
    assert.match(await page.locator('#my-jobs').innerText(), /\d+ running, \d+ waiting\. Sign in to see your own jobs/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'gpus-landing-1280x800.png'), fullPage: true });
  });

  await step('a GPU card shows its job\'s idle countdown and a leak\'s forecast, as the job page has them', async () => {
    const idle = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--idle-policy', 'quickwarn', '--name', 'idler',
                                  '--', TRAINER, '--sleep-forever')).id;
    const leak = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name', 'leaker', '--', TRAINER, 'epochs=60',
                                  'name=leaky', '--epoch-seconds', '1', '--mem-mib', '3000', '--leak-mib-per-epoch', '500')).id;
    try {
      const gpuOf = async id => (await waitUntil(async () => (await d.api('GET', `/api/v1/jobs/${id}`)).data.gpus[0] ?? null,
                                                 `job ${id}'s GPU`) );
      const gi = await gpuOf(idle), gl = await gpuOf(leak);
      const idleCard = page.locator(`#gpu-cards article[data-gpu="${gi}"] .alert.idle`);
      await idleCard.waitFor({ timeout: 20000 });
      assert.match(await idleCard.innerText(), /^idle: reclaimed in (9|10)m \d\ds unless it works$/);
      const leakCard = page.locator(`#gpu-cards article[data-gpu="${gl}"] .alert.leak`);
      await leakCard.waitFor({ timeout: 40000 });
      assert.match(await leakCard.innerText(), /^leak: OOM in ~\d+ epochs? \(~.+\)$/);
      const evidence = (await d.api('GET', `/api/v1/jobs/${leak}`)).data.training.leak.evidence;
      assert.equal(await leakCard.getAttribute('title'), evidence, 'the job page\'s evidence in its title');
      await page.screenshot({ path: path.join(ARTIFACTS, 'gpus-alerts-1280x800.png') });
      assert.deepEqual(await unreadable(page), [], 'GPU cards with alerts at 1280x800');
    } finally {
      d.cli('cancel', String(idle), String(leak));
    }
  });

  await step('GPU cards keep their boxes while a job starts, samples arrive and it ends', async () => {
    const cards = '#gpu-cards article.card';
    // Laid out first: a box measured before the cards are laid out reads all zeros.
    await waitUntil(async () => (await boxes(page, cards)).every(b => b[2] > 0), 'the cards laid out');
    const before = await boxes(page, cards);
    assert.equal(before.length, 4);
    const sid = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name',
                                 'a-probe-with-a-name-long-enough-to-wrap-in-its-card', '--', 'sleep', '60')).id;
    const probe = page.locator(`#gpu-cards article.card:has(a[href="#/job/${sid}"])`);
    await probe.waitFor({ timeout: 15000 });
    assert.deepEqual(await boxes(page, cards), before, 'cards moved when the job started');
    await gpuUpdates(page, 2);
    assert.deepEqual(await boxes(page, cards), before, 'cards moved across two live updates');
    d.cli('cancel', String(sid));
    await probe.waitFor({ state: 'detached', timeout: 15000 });
    assert.deepEqual(await boxes(page, cards), before, 'cards moved when the job ended');
  });

  await step('the job page draws utilisation and loss curves; times are in the viewer\'s zone', async () => {
    await page.click(`#gpu-cards article[data-gpu="0"] a[href="#/job/${jid}"]`);
    await page.waitForSelector('#view-job:not([hidden])');
    await page.locator('#job-util svg path.series').first().waitFor({ state: 'attached', timeout: 15000 });
    // results.csv gets its first row after an epoch: the page picks it up live.
    await page.locator('#job-loss svg path.series').first().waitFor({ state: 'attached', timeout: 20000 });
    await page.locator('#job-map svg path.series').first().waitFor({ state: 'attached', timeout: 5000 });
    // Epoch boundaries on the GPU curves: where results.csv rows appeared (the daemon's times).
    await page.locator('#job-util svg line.epoch').first().waitFor({ state: 'attached', timeout: 25000 });
    assert.ok((await page.locator('#job-mem svg line.epoch').count()) >= 1, 'epoch lines on the memory curve');
    assert.ok((await page.locator('#job-events tbody tr').count()) >= 2, 'events listed');
    assert.match(await page.locator('#job-log').innerText(), /sign in/i, 'guests are told why there is no log');
    // The daemon speaks Unix seconds; the page shows them in the browser's zone, whatever the server's.
    assert.equal(await page.locator('#tz').innerText(), `times in ${ZONE}`);
    const j = (await d.api('GET', `/api/v1/jobs/${jid}`)).data;
    assert.equal(await page.locator('#job-head div:has(> dt:text-is("Submitted")) dd').innerText(), isoLike(j.submit_time));
    await no12HourTimes(page, 'job page');
    await noHorizontalScroll(page, 'job page at 1280x800');
    await page.screenshot({ path: path.join(ARTIFACTS, 'job-1280x800.png'), fullPage: true });
  });

  await step('the job page\'s charts: units on both axes, a legend per GPU, the nearest values on hover, drag to zoom; events to the second', async () => {
    for (const id of ['job-util', 'job-mem', 'job-loss', 'job-map']) {
      assert.ok((await page.locator(`#${id} .y-unit`).innerText()).trim(), `${id}: a unit on the y axis`);
      assert.ok((await page.locator(`#${id} .x-unit`).innerText()).trim(), `${id}: a unit on the x axis`);
    }
    assert.match(await page.locator('#job-util .y-unit').innerText(), /%/);
    assert.match(await page.locator('#job-util .x-unit').innerText(), new RegExp(`time \\(${ZONE}\\)`));
    assert.equal(await page.locator('#job-util .chart-legend span').count(), await page.locator('#job-util path.series').count());
    const svg = page.locator('#job-util svg.chart');
    const b = await svg.boundingBox();
    await page.mouse.move(b.x + b.width * 0.6, b.y + b.height / 2);
    const tip = page.locator('#job-util .chart-tip');
    await tip.waitFor({ state: 'visible', timeout: 5000 });
    assert.match(await tip.innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\nGPU 0: \d+%/);
    assert.equal(await page.locator('#job-util .cursor circle').count(), await page.locator('#job-util path.series').count());
    const ticks = async () => page.$$eval('#job-util svg text[text-anchor="middle"]', ts => ts.map(t => t.textContent).join(' '));
    const before = await ticks();
    await page.mouse.move(b.x + b.width * 0.3, b.y + b.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width * 0.5, b.y + b.height / 2, { steps: 4 });
    await page.mouse.up();
    await page.locator('#job-util .x-unit', { hasText: 'zoomed' }).waitFor({ timeout: 2000 });
    assert.notEqual(await ticks(), before, 'the time axis shows the range picked');
    await page.screenshot({ path: path.join(ARTIFACTS, 'job-chart-zoomed-1280x800.png') });
    await page.locator('#job-util svg.chart').dblclick();
    await waitUntil(async () => !/zoomed/.test(await page.locator('#job-util .x-unit').innerText()), 'the zoom reset');
    assert.ok(before.length > 0, 'times on the x axis');
    await page.mouse.move(0, 0);
    const times = await page.$$eval('#job-events tbody tr td:first-child', tds => tds.map(td => td.textContent));
    assert.ok(times.length && times.every(t => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(t)), `events to the second: ${times}`);
  });

  await step('a guest cannot cancel: no button, and the API refuses', async () => {
    assert.equal(await page.locator('#job-actions button').count(), 0);
    const st = await page.evaluate(async id => (await fetch(`/api/v1/jobs/${id}`, { method: 'DELETE' })).status, jid);
    assert.equal(st, 401);
    const j = await d.api('GET', `/api/v1/jobs/${jid}`);
    assert.equal(j.data.state, 'RUNNING');
  });

  const token = d.cli('token', 'create', '--name', 'browser', '-q').trim();
  await step('signing in with a token sets an HttpOnly cookie; a forged cross-site request is refused', async () => {
    await page.click('#signin-open');
    await page.fill('#signin-token', 'gw_' + '0'.repeat(64));
    await page.click('#signin-submit');
    await page.locator('#signin-error', { hasText: /unknown|revoked/ }).waitFor();
    await page.fill('#signin-token', token);
    await page.click('#signin-submit');
    await page.locator('#signout').waitFor({ state: 'visible' });
    // The open job page is read again as the one signed in: its command, no "Hidden" left.
    await waitUntil(async () => {
      const text = await page.locator('#job-command').innerText();
      return text && !/Hidden/.test(text);
    }, 'the command line shown once signed in, without a reload');
    assert.match(await page.locator('#job-command').innerText(), /gw-fake-trainer/);
    const cookies = await page.context().cookies(d.url);
    const c = cookies.find(k => k.name === 'gw_token');
    assert.ok(c && c.httpOnly && c.sameSite === 'Strict', 'HttpOnly SameSite=Strict cookie');
    assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the cookie');
    // The cookie alone (no CSRF header), as a forged form or fetch from elsewhere would send it:
    const st = await page.evaluate(async id => (await fetch(`/api/v1/jobs/${id}/hold`, { method: 'POST' })).status, jid);
    assert.equal(st, 401);
  });

  await step('signed in, a new page names the reader at first paint; its first action waits for the CSRF value', async () => {
    const held = JSON.parse(d.cli('submit', '--json', '--hold', '--gpus', '4', '--time', '5m', '--name', 'fp-held', '--',
                                  'sleep', '60')).id;
    const p5 = await ctx.newPage();
    try {
      p5.on('pageerror', e => problems.push('page error (signed-in first paint): ' + e.message));
      // The session (with the CSRF value) answers late: the page draws from what it was served.
      await p5.route('**/api/v1/session', async r => { await sleep(1500); await r.continue(); });
      await p5.goto(d.url + '/#/queue');
      assert.match(await p5.locator('#whoami').innerText(), /\(admin\)/);
      const release = p5.locator(`#queue-body tr[data-job="${held}"] button`, { hasText: 'Release' });
      await release.waitFor({ timeout: 5000 });
      await release.click();
      await p5.locator('#toast', { hasText: `job ${held}: released` }).waitFor({ timeout: 10000 });
    } finally {
      await p5.close();
      d.cli('cancel', String(held));
    }
  });

  await step('signed in, the Cancel button cancels the job, live', async () => {
    const btn = page.locator('#job-actions button', { hasText: 'Cancel' });
    await btn.waitFor({ timeout: 10000 });
    await btn.click();
    await page.locator('#job-head .state.CANCELLED').waitFor({ timeout: 20000 });
    assert.match(await page.locator('#job-events').innerText(), /cancelled by/);
    assert.equal(await page.evaluate(() => window.__noReload), 'still here');
  });

  // A running job and a held one that cannot start while the first runs (all 4 GPUs).
  let kid, hid;
  await step('signed in, queue rows and cells keep their boxes across live updates (buttons change)', async () => {
    kid = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name', 'kbd', '--', 'sleep', '120')).id;
    hid = JSON.parse(d.cli('submit', '--json', '--hold', '--gpus', '4', '--time', '5m', '--name', 'kbd-held', '--',
                           'sleep', '120')).id;
    await page.click('nav a[data-nav="queue"]');
    await page.locator(`#queue-body tr[data-job="${kid}"] .state.RUNNING`).waitFor({ timeout: 15000 });
    await page.locator(`#queue-body tr[data-job="${hid}"] .state.HELD`).waitFor({ timeout: 15000 });
    // Every row and every cell: a column that widens moves the cells of the others.
    const cells = '#queue-body tr, #queue-body td';
    const before = await boxes(page, cells);
    assert.equal(before.length, 2 * 11);
    // Two updates pushed by the daemon: released (Hold replaces Release, a predicted start
    // comes), then held again.
    d.cli('release', String(hid));
    await page.locator(`#queue-body tr[data-job="${hid}"] .state.PENDING`).waitFor({ timeout: 10000 });
    await page.locator(`#queue-body tr[data-job="${hid}"] button`, { hasText: 'Hold' }).waitFor({ timeout: 10000 });
    assert.deepEqual(await boxes(page, cells), before, 'rows or cells moved when the job was released');
    d.cli('hold', String(hid));
    await page.locator(`#queue-body tr[data-job="${hid}"] button`, { hasText: 'Release' }).waitFor({ timeout: 10000 });
    assert.deepEqual(await boxes(page, cells), before, 'rows or cells moved when the job was held');
  });

  await step('every action button is whole in its cell (a pending job: Hold and Cancel) at 1280, 1400 and 1920 px', async () => {
    d.cli('release', String(hid));
    await page.locator(`#queue-body tr[data-job="${hid}"] button`, { hasText: 'Hold' }).waitFor({ timeout: 10000 });
    assert.equal(await page.locator('#queue-body td.actions button').count(), 3, 'Cancel; Hold and Cancel');
    for (const width of [1280, 1400, 1920]) {
      await page.setViewportSize({ width, height: 800 });
      assert.deepEqual(await clippedButtonsSettled(page), [], `buttons clipped by their cell at ${width}px`);
      // Nor is a time or a number elided ("2026-11-27 14:02" in Submitted).
      const cut = await page.$$eval('#queue-body td.hide-narrow, #queue-body td.num',
                                    tds => tds.filter(td => td.scrollWidth > td.clientWidth).map(td => td.textContent));
      assert.deepEqual(cut, [], `cells elided at ${width}px`);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'queue-buttons-1920x800.png') });
    await no12HourTimes(page, 'queue');
    await page.setViewportSize({ width: 1280, height: 800 });
    d.cli('hold', String(hid));
    await page.locator(`#queue-body tr[data-job="${hid}"] button`, { hasText: 'Release' }).waitFor({ timeout: 10000 });
  });

  await step('signed in: the landing page lists the reader\'s jobs; the queue\'s "My jobs" is kept by the browser', async () => {
    let other = null;
    if (process.getuid() === 0) { // a job of another user, so that the switch has something to hide
      other = JSON.parse(execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', GPUWARD, '--socket', d.sock,
                                                  'submit', '--json', '--hold', '--gpus', '1', '--time', '5m', '--name', 'not-mine', '--',
                                                  'sleep', '60'], { cwd: d.work, encoding: 'utf8', timeout: 60000 })).id;
    }
    try {
      await page.click('nav a[data-nav="gpus"]');
      await page.locator(`#my-jobs tr[data-job="${kid}"]`).waitFor({ timeout: 10000 });
      assert.equal(await page.locator(`#my-jobs tr[data-job="${hid}"] .state.HELD`).count(), 1);
      if (other) assert.equal(await page.locator(`#my-jobs tr[data-job="${other}"]`).count(), 0, 'another user\'s job is not "yours"');
      await page.click('nav a[data-nav="queue"]');
      await page.locator(`#queue-body tr[data-job="${kid}"]`).waitFor();
      if (other) await page.locator(`#queue-body tr[data-job="${other}"]`).waitFor({ timeout: 10000 });
      assert.equal(await page.isChecked('#f-mine'), false);
      await page.check('#f-mine');
      const me = (await page.locator('#whoami').innerText()).replace(/ \(admin\)$/, '');
      await waitUntil(async () => (await page.$$eval('#queue-body tr td:nth-child(3)', tds => tds.map(t => t.textContent)))
        .every(u => u === me), 'only the reader\'s jobs');
      if (other) assert.equal(await page.locator(`#queue-body tr[data-job="${other}"]`).count(), 0);
      await page.reload();
      await page.locator(`#queue-body tr[data-job="${kid}"]`).waitFor({ timeout: 10000 });
      await waitUntil(() => page.isChecked('#f-mine'), '"My jobs" remembered across a reload');
      if (other) assert.equal(await page.locator(`#queue-body tr[data-job="${other}"]`).count(), 0);
      await page.uncheck('#f-mine');
      if (other) await page.locator(`#queue-body tr[data-job="${other}"]`).waitFor({ timeout: 5000 });
    } finally {
      if (other) d.cli('cancel', String(other));
    }
  });

  await step('a model published by a fake-trainer job is listed on Models; its versions chart the metric and link their files', async () => {
    // Two versions, so that the chart has a line and the newest is listed as the latest.
    const jobs = [];
    for (const epochs of [2, 3]) {
      const jid = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name', `train-${epochs}`, '--publish', MODEL,
                                   '--', TRAINER, `epochs=${epochs}`, `name=browser-model-${epochs}`, '--epoch-seconds', '0.1')).id;
      await waitUntil(async () => {
        const j = (await d.api('GET', `/api/v1/jobs/${jid}`)).data;
        const ev = (j.events || []).find(e => e.kind === 'published' || e.kind === 'not_published');
        if (ev) assert.equal(ev.kind, 'published', ev.message);
        return ev;
      }, `job ${jid}'s publication`, 60000);
      jobs.push(jid);
    }
    await page.click('nav a[data-nav="models"]');
    await page.waitForSelector('#view-models:not([hidden])');
    const row = page.locator('#models-list tbody tr', { hasText: MODEL });
    await row.waitFor({ timeout: 10000 });
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[0], MODEL);
    assert.deepEqual(cells.slice(1, 4), ['2', 'v2', 'metrics/mAP50-95(B)']);
    assert.match(cells[4], /^0\.\d+$/);
    assert.equal(cells[5], String(jobs[1]));
    await row.locator(`a[href="#/models/${MODEL}"]`).click();
    await page.waitForSelector('#model-detail:not([hidden])');
    assert.equal(await page.locator('#h-model').innerText(), `Model ${MODEL}`);
    const vrows = page.locator('#model-versions tbody tr');
    await waitUntil(async () => (await vrows.count()) === 2, 'a row a version');
    assert.match(await vrows.nth(0).innerText(), new RegExp(`^v2\\s+metrics/mAP50-95\\(B\\)\\s+0\\.\\d+\\s+3\\s+${jobs[1]}\\s`));
    const links = await vrows.nth(0).locator('td.files a').evaluateAll(as => as.map(a => [a.textContent, a.getAttribute('href')]));
    assert.deepEqual(links.map(l => l[0]).sort(), ['args.yaml', 'best.pt', 'results.csv']);
    for (const [name, href] of links) {
      assert.equal(href, `/api/v1/models/${MODEL}/v2/${name}`);
      const st = await page.evaluate(async u => (await fetch(u)).status, href);
      assert.equal(st, 200, `${href} downloads`);
    }
    // The chart: one line of the metric over v1 and v2, version axis, the value on hover.
    await page.locator('#model-chart svg path.series').waitFor({ state: 'attached', timeout: 5000 });
    assert.equal(await page.locator('#model-chart .x-unit').innerText(), 'version');
    const box = await page.locator('#model-chart svg').boundingBox();
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    const tip = page.locator('#model-chart .chart-tip');
    await tip.waitFor({ state: 'visible', timeout: 5000 });
    assert.match(await tip.innerText(), /^v2\n.*metrics\/mAP50-95\(B\): 0\.\d+$/s);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'models-1280x800.png'), fullPage: true });
  });

  await step('nothing cut off or overlapping on any view at 1280x800 and 1920x1080 (a drained GPU, a held job\'s buttons)', async () => {
    d.cli('admin', 'drain', '3', '--reason', 'fan noise and a long explanation of it: RMA ticket 4411 opened with the vendor, waiting on parts');
    try {
      for (const [w, hgt] of [[1280, 800], [1920, 1080]]) {
        await page.setViewportSize({ width: w, height: hgt });
        for (const view of ['gpus', 'queue', 'calendar', 'usage', 'models', 'job']) {
          if (view === 'job') await page.goto(`${d.url}/#/job/${jid}`);
          else if (view === 'models') await page.goto(`${d.url}/#/models/${MODEL}`);
          else await page.click(`nav a[data-nav="${view}"]`);
          await page.waitForSelector(`#view-${view}:not([hidden])`);
          if (view === 'gpus') await page.locator('#gpu-cards article[data-gpu="3"] .badge.drained').waitFor({ timeout: 10000 });
          if (view === 'queue') await page.locator(`#queue-body tr[data-job="${hid}"] button`, { hasText: 'Release' }).waitFor({ timeout: 10000 });
          if (view === 'job') await page.locator('#job-util path.series, #job-util .note').first().waitFor({ state: 'attached', timeout: 10000 });
          if (view === 'usage') await page.locator('#usage-body table').waitFor({ timeout: 15000 });
          if (view === 'models') await page.locator('#model-versions td.files a, #model-chart path.series').last().waitFor({ state: 'attached', timeout: 10000 });
          await sleep(300);
          assert.deepEqual(await unreadable(page), [], `${view} at ${w}x${hgt}`);
          if (view === 'queue') assert.deepEqual(await clippedButtonsSettled(page), [], `a held job's buttons at ${w}px`);
          await noHorizontalScroll(page, `${view} at ${w}x${hgt}`);
          await page.screenshot({ path: path.join(ARTIFACTS, `${view}-${w}x${hgt}.png`), fullPage: true });
        }
      }
    } finally {
      d.cli('admin', 'undrain', '3');
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.click('nav a[data-nav="queue"]');
      await page.waitForSelector('#view-queue:not([hidden])');
    }
  });

  await step('keyboard: Tab moves focus to a job\'s Cancel button (a real button, visibly focused), Enter cancels; Space releases', async () => {
    await page.focus('#f-state');
    await tabTo(page, `document.activeElement && document.activeElement.dataset.key === 'cancel-${kid}'`, `job ${kid}'s Cancel`);
    const focused = await page.evaluate(() => {
      const el = document.activeElement, cs = getComputedStyle(el);
      return { tag: el.tagName, type: el.type, text: el.textContent, outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth) };
    });
    assert.deepEqual([focused.tag, focused.type, focused.text], ['BUTTON', 'button', 'Cancel']);
    assert.ok(focused.outline !== 'none' && focused.width >= 2, `visible focus: ${JSON.stringify(focused)}`);
    await page.keyboard.press('Enter'); // the confirm() is accepted by the dialog handler
    await waitUntil(async () => (await d.api('GET', `/api/v1/jobs/${kid}`)).data.state === 'CANCELLED', `job ${kid} cancelled by Enter`);
    await page.focus('#f-state');
    await tabTo(page, `document.activeElement && document.activeElement.dataset.key === 'release-${hid}'`, `job ${hid}'s Release`);
    await page.keyboard.press('Space');
    await waitUntil(async () => (await d.api('GET', `/api/v1/jobs/${hid}`)).data.state !== 'HELD', `job ${hid} released by Space`);
    d.cli('cancel', String(hid));
  });

  await step('booking from the calendar shows the approval, then the refusal with the nearest window', async () => {
    await page.click('nav a[data-nav="calendar"]');
    await page.waitForSelector('#book-form[data-ready="1"]');
    // Two hours ahead on the hour, written as the browser's datetime-local input reads it (its zone).
    // Two hours ahead on the hour, in the browser's zone: a date and a 24-hour time.
    const [date, time] = await page.evaluate(() => {
      const start = new Date((Math.ceil(Date.now() / 3600000) + 2) * 3600000);
      const p = v => String(v).padStart(2, '0');
      return [`${start.getFullYear()}-${p(start.getMonth() + 1)}-${p(start.getDate())}`, `${p(start.getHours())}:${p(start.getMinutes())}`];
    });
    assert.equal(await page.locator('#book-form input[type="datetime-local"]').count(), 0, 'no 12-hour datetime-local picker');
    await page.fill('#b-ngpus', '1');
    await page.fill('#b-date', date);
    // A 12-hour or impossible time is refused with the field named, and nothing is booked.
    for (const bad of ['2:00 PM', '24:00']) {
      await page.fill('#b-time', bad);
      await page.click('#b-submit');
      await page.locator('#book-result.bad', { hasText: /^Start time: a 24-hour time/ }).waitFor({ timeout: 5000 });
      assert.equal(await page.locator('#b-time').getAttribute('aria-invalid'), 'true');
    }
    await page.fill('#b-date', '2026-02-30');
    await page.fill('#b-time', time);
    await page.click('#b-submit');
    await page.locator('#book-result.bad', { hasText: /^Date: 2026-02-30 is not a day/ }).waitFor({ timeout: 5000 });
    assert.equal((await d.api('GET', '/api/v1/bookings')).data.bookings.length, 0, 'nothing booked by a refused form');
    await page.fill('#b-date', date);
    await page.selectOption('#b-duration', '4h');
    assert.equal(await page.inputValue('#b-time'), time);
    await page.click('#b-submit');
    await page.locator('#book-result.ok', { hasText: /approved/ }).waitFor({ timeout: 10000 });
    await page.locator('#cal-chart .seg.booking rect').first().waitFor({ state: 'attached', timeout: 10000 });
    await page.fill('#b-ngpus', '4');
    await page.click('#b-submit');
    await page.locator('#book-result.bad', { hasText: /Nearest free window/ }).waitFor({ timeout: 10000 });
    await page.click('#book-result button');
    assert.match(await page.inputValue('#b-date'), /^\d{4}-\d\d-\d\d$/);
    assert.match(await page.inputValue('#b-time'), /^([01]\d|2[0-3]):[0-5]\d$/, 'the window\'s start as a 24-hour time');
    await noHorizontalScroll(page, 'calendar at 1280x800');
    await no12HourTimes(page, 'calendar');
    await page.screenshot({ path: path.join(ARTIFACTS, 'calendar-1280x800.png'), fullPage: true });
  });

  await step('a finished short job shows its telemetry summary, not "no samples", and no "not known yet"', async () => {
    // It never reports training progress.
    const sid = JSON.parse(d.cli('submit', '--json', '--gpus', '1', '--time', '5m', '--name', 'short', '--',
                                 TRAINER, '--sleep-forever', '--util', '63', '--mem-mib', '2048')).id;
    await waitUntil(async () => ((await d.api('GET', `/api/v1/jobs/${sid}`)).data.telemetry || {}).samples >= 2,
                    `samples of job ${sid}`);
    d.cli('cancel', String(sid));
    await waitUntil(async () => (await d.api('GET', `/api/v1/jobs/${sid}`)).data.state === 'CANCELLED', `job ${sid} cancelled`);
    const j = (await d.api('GET', `/api/v1/jobs/${sid}`)).data;
    const g = j.telemetry.gpus[0];
    await page.goto(`${d.url}/#/job/${sid}`);
    await page.locator('#job-head .state.CANCELLED').waitFor({ timeout: 10000 });
    // An ended job will report nothing more: neither "not known yet" nor "no results.csv read".
    await waitUntil(async () => (await page.locator('#job-training').innerText()).trim(), 'the training section');
    assert.equal((await page.locator('#job-training').innerText()).trim(), 'No training progress was seen.');
    // Signed in, a finished job has no buttons: no empty band is left for them under the header.
    assert.equal(await page.locator('#job-actions button').count(), 0);
    const band = await page.locator('#job-actions').evaluate(e => e.getBoundingClientRect().height);
    assert.equal(band, 0, 'an empty actions band under the job header');
    const util = page.locator('#job-util');
    await waitUntil(async () => (await util.locator('path.series').count()) > 0 ||
                    /GPU \d: util mean|No samples/.test(await util.innerText()), 'the utilisation chart or its note');
    if (await util.locator('path.series').count() === 0) {
      assert.match(await util.innerText(), new RegExp(`GPU ${g.index}: util mean ${Math.round(g.util_mean)}%, p95 ${Math.round(g.util_p95)}%`));
      assert.match(await page.locator('#job-mem').innerText(), new RegExp(`GPU ${g.index}: peak memory 2\\.0 GiB`));
    }
    assert.doesNotMatch(await page.locator('#view-job').innerText(), /No samples kept/);
    await no12HourTimes(page, 'a finished job');
    await page.screenshot({ path: path.join(ARTIFACTS, 'job-short-1280x800.png'), fullPage: true });
  });

  await step('usage adds up GPU-hours per user; small amounts keep two significant digits, none draws no bar', async () => {
    await page.click('nav a[data-nav="usage"]');
    await page.locator('#usage-body table').waitFor({ timeout: 15000 });
    assert.match(await page.locator('#usage-body').innerText(), /GPU-h/);
    const rows = await page.$$eval('#usage-body .bars > .bar', bars => bars.map(b => ({
      width: b.getBoundingClientRect().width, visible: getComputedStyle(b).visibility !== 'hidden',
      text: b.nextElementSibling.textContent })));
    assert.ok(rows.length >= 1, 'a bar per user');
    for (const r of rows) {
      const v = Number(r.text.replace(' GPU-h', ''));
      assert.ok(Number.isFinite(v), `a number of GPU-hours: ${r.text}`);
      if (v > 0) assert.match(r.text, /^(0\.0*[1-9]\d?|[1-9]\d*\.\d) GPU-h$/, 'two significant digits below one');
      assert.equal(r.visible && r.width > 0, v > 0, `a bar exactly when there are GPU-hours: ${JSON.stringify(r)}`);
    }
  });

  await step('phone width (390x844): no horizontal scroll on any view, screenshots', async () => {
    // Rows in the queue: a running job with a long name, a held one (its buttons).
    d.cli('submit', '--gpus', '1', '--time', '5m', '--name', 'phone-row-with-a-rather-long-name-for-a-narrow-screen', '--',
          'sleep', '120');
    d.cli('submit', '--hold', '--gpus', '2', '--time', '5m', '--name', 'phone-held', '--', 'sleep', '120');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const view of ['gpus', 'queue', 'calendar', 'usage', 'models', 'job']) {
      if (view === 'job') await page.goto(`${d.url}/#/job/${jid}`);
      else if (view === 'models') await page.goto(`${d.url}/#/models/${MODEL}`);
      else await page.click(`nav a[data-nav="${view}"]`);
      await page.waitForSelector(`#view-${view}:not([hidden])`);
      if (view === 'job') await page.locator('#job-loss svg path.series').first().waitFor({ state: 'attached', timeout: 10000 });
      if (view === 'queue') await page.locator('#queue-body tr >> nth=1').waitFor({ timeout: 10000 });
      await sleep(300);
      await noHorizontalScroll(page, `${view} at 390x844`);
      if (view === 'queue') assert.deepEqual(await clippedButtonsSettled(page), [], 'buttons clipped by their cell at 390px');
      await page.screenshot({ path: path.join(ARTIFACTS, `${view}-390x844.png`), fullPage: view !== 'gpus' });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await step('keyboard: Tab reaches the views and Enter follows a link', async () => {
    await page.goto(d.url + '/#/gpus');
    await page.waitForSelector('#gpu-cards article.card');
    await tabTo(page, `document.activeElement && document.activeElement.dataset.nav === 'queue'`, 'the Queue link', 12);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#view-queue:not([hidden])');
  });

  await step('signing out makes the page read-only again', async () => {
    await page.click('#signout');
    await page.locator('#signin-open').waitFor({ state: 'visible' });
    const cookies = await page.context().cookies(d.url);
    assert.ok(!cookies.some(k => k.name === 'gw_token' && k.value), 'cookie cleared');
    const st = await page.evaluate(async () => (await fetch('/api/v1/session')).json());
    assert.equal(st.signed_in, false);
  });
}

main();
