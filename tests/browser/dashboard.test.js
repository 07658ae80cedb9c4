// The dashboard in real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core)
// against a real gpuwardd on simulated GPUs with the fake trainer:
//   the GPU cards show the trainer's utilisation; a job submitted with the CLI appears in the
//   queue without a reload and moves to RUNNING; its page draws utilisation and loss curves;
//   a guest sees no buttons and the API refuses its cancel; signed in with a token, the Cancel
//   button cancels; a booking from the calendar shows its approval, a second one the refusal
//   with the nearest window; no CSP violation or script error; screenshots at 1280x800 and
//   390x844 go to $GW_BUILD_DIR/browser-artifacts.
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
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-browser-'));
    fs.chmodSync(this.dir, 0o755);
    this.state = path.join(this.dir, 'state');
    this.sock = path.join(this.dir, 'gw.sock');
    this.work = path.join(this.dir, 'work');
    fs.mkdirSync(this.work, { mode: 0o777 });
    fs.chmodSync(this.work, 0o777);
  }

  async start() {
    const args = ['--state-dir', this.state, '--socket', this.sock, '--listen', '127.0.0.1:0', '--simulate-gpus', '4',
                  '--nvml-lib', FAKE_NVML, '--grace-seconds', '1', '--sample-interval', '1'];
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
  const d = await new Daemon().start();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-chromium-'));
  let ctx;
  try {
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 800 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', m => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
    page.on('pageerror', e => problems.push('page error: ' + e.message));
    page.on('dialog', dlg => dlg.accept());
    await run(d, page);
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

async function run(d, page) {
  await step('the page loads with security headers and 4 GPU cards', async () => {
    const resp = await page.goto(d.url + '/');
    assert.equal(resp.status(), 200);
    const csp = resp.headers()['content-security-policy'];
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    await page.waitForSelector('#gpu-cards article.card >> nth=3');
    assert.equal(await page.locator('#gpu-cards article.card').count(), 4);
    await page.waitForSelector('#live[data-state="live"]');
    await page.evaluate(() => { window.__noReload = 'still here'; });
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
    await page.screenshot({ path: path.join(ARTIFACTS, 'queue-1280x800.png') });
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
    d.cli('cancel', String(wid));
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

  await step('the job page draws utilisation and loss curves', async () => {
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
    await page.screenshot({ path: path.join(ARTIFACTS, 'job-1280x800.png'), fullPage: true });
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
    const cookies = await page.context().cookies(d.url);
    const c = cookies.find(k => k.name === 'gw_token');
    assert.ok(c && c.httpOnly && c.sameSite === 'Strict', 'HttpOnly SameSite=Strict cookie');
    assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the cookie');
    // The cookie alone (no CSRF header), as a forged form or fetch from elsewhere would send it:
    const st = await page.evaluate(async id => (await fetch(`/api/v1/jobs/${id}/hold`, { method: 'POST' })).status, jid);
    assert.equal(st, 401);
  });

  await step('signed in, the Cancel button cancels the job, live', async () => {
    const btn = page.locator('#job-actions button', { hasText: 'Cancel' });
    await btn.waitFor({ timeout: 10000 });
    await btn.click();
    await page.locator('#job-head .state.CANCELLED').waitFor({ timeout: 20000 });
    assert.match(await page.locator('#job-events').innerText(), /cancelled by/);
    assert.equal(await page.evaluate(() => window.__noReload), 'still here');
  });

  await step('booking from the calendar shows the approval, then the refusal with the nearest window', async () => {
    await page.click('nav a[data-nav="calendar"]');
    await page.waitForSelector('#book-form[data-ready="1"]');
    const start = new Date((Math.ceil(Date.now() / 3600000) + 2) * 3600000);
    const p = v => String(v).padStart(2, '0');
    const local = `${start.getFullYear()}-${p(start.getMonth() + 1)}-${p(start.getDate())}T${p(start.getHours())}:${p(start.getMinutes())}`;
    await page.fill('#b-ngpus', '1');
    await page.fill('#b-start', local);
    await page.selectOption('#b-duration', '4h');
    await page.click('#b-submit');
    await page.locator('#book-result.ok', { hasText: /approved/ }).waitFor({ timeout: 10000 });
    await page.locator('#cal-chart .seg.booking rect').first().waitFor({ state: 'attached', timeout: 10000 });
    await page.fill('#b-ngpus', '4');
    await page.click('#b-submit');
    await page.locator('#book-result.bad', { hasText: /Nearest free window/ }).waitFor({ timeout: 10000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'calendar-1280x800.png'), fullPage: true });
  });

  await step('usage adds up GPU-hours per user', async () => {
    await page.click('nav a[data-nav="usage"]');
    await page.locator('#usage-body table').waitFor({ timeout: 15000 });
    assert.match(await page.locator('#usage-body').innerText(), /GPU-h/);
  });

  await step('phone width (390x844): no horizontal overflow, screenshots', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const view of ['gpus', 'queue', 'calendar']) {
      await page.click(`nav a[data-nav="${view}"]`);
      await page.waitForSelector(`#view-${view}:not([hidden])`);
      await sleep(300);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(over <= 1, `${view}: the page is ${over}px wider than the phone`);
      await page.screenshot({ path: path.join(ARTIFACTS, `${view}-390x844.png`), fullPage: view !== 'gpus' });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await step('keyboard: Tab reaches the views and Enter follows a link', async () => {
    await page.goto(d.url + '/#/gpus');
    await page.waitForSelector('#gpu-cards article.card');
    let found = false;
    for (let i = 0; i < 12 && !found; i++) {
      await page.keyboard.press('Tab');
      found = await page.evaluate(() => document.activeElement && document.activeElement.dataset.nav === 'queue');
    }
    assert.ok(found, 'the Queue link is reachable with Tab');
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
