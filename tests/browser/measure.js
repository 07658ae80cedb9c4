// The dashboard's measures, not a pass/fail test: with 8 simulated GPUs and 500 jobs (8 running,
// 492 waiting), the first paint and the time until the 8 GPU cards (and the 500-row queue)
// are drawn in headless Chromium; the page's weight; the daemon's CPU with 20 dashboards open
// for 30 s against none.  Run: GW_BUILD_DIR=build node tests/browser/measure.js
// GW_WEB_DIR=DIR serves the page from DIR (--web-dir: another version of web/, for a before
// and after on one build); GW_MEASURE_CPU=0 leaves out the minute of the CPU measure.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');

const BUILD = path.resolve(process.env.GW_BUILD_DIR || path.join(__dirname, '..', '..', 'build'));
const sleep = ms => new Promise(r => setTimeout(r, ms));
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
              '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-measure-'));
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  const state = path.join(dir, 'state'), sock = path.join(dir, 'gw.sock');
  const args = ['--state-dir', state, '--socket', sock, '--listen', '127.0.0.1:0', '--simulate-gpus', '8',
                '--nvml-lib', path.join(BUILD, 'tests/fakes/libnvidia-ml.so.1'), '--grace-seconds', '1'];
  if (process.getuid() === 0) args.push('--allow-root-jobs');
  if (process.env.GW_WEB_DIR) args.push('--web-dir', path.resolve(process.env.GW_WEB_DIR));
  const d = spawn(path.join(BUILD, 'gpuwardd'), args, { stdio: 'ignore' });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-measure-chromium-'));
  let ctx, browser;
  try {
    const addr = path.join(state, 'listen.addr');
    for (let i = 0; i < 100 && !fs.existsSync(addr); i++) await sleep(100);
    const url = 'http://127.0.0.1:' + fs.readFileSync(addr, 'utf8').trim().split(':').pop();
    const cli = (...a) => execFileSync(path.join(BUILD, 'gpuward'), ['--socket', sock, ...a], { cwd: work, encoding: 'utf8' });
    for (let i = 0; i < 8; i++) cli('submit', '--gpus', '1', '--time', '1h', '--', path.join(BUILD, 'tests/fakes/gw-fake-trainer'),
                                    'epochs=1000', '--epoch-seconds', '5', `name=run${i}`);
    const jobs = Array.from({ length: 492 }, (_, i) => ({ command: ['/bin/true'], cwd: work, ngpus: 1 + (i % 8), name: `wait-${i}` }));
    execFileSync('curl', ['-s', '--unix-socket', sock, '-H', 'Content-Type: application/json', '-d', JSON.stringify({ jobs }),
                          'http://localhost/api/v1/jobs/batch'], { stdio: 'ignore' });
    await sleep(3000);

    let weight = 0;
    for (const p of ['/', '/static/app.js', '/static/views.js', '/static/charts.js', '/static/landing.js', '/static/style.css',
                     '/static/favicon.svg']) {
      const r = await fetch(url + p);
      if (r.ok) weight += (await r.arrayBuffer()).byteLength; /* a web/ without landing.js: 404, not counted */
    }

    ctx = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true,
                                                            viewport: { width: 1280, height: 800 }, args: ARGS });
    const page = ctx.pages()[0];
    await page.addInitScript(() => {
      new MutationObserver(() => {
        if (!window.__cards && document.querySelectorAll('#gpu-cards article.card').length >= 8) window.__cards = performance.now();
        if (!window.__rows && document.querySelectorAll('#queue-body tr').length >= 500) window.__rows = performance.now();
      }).observe(document, { childList: true, subtree: true });
    });
    const runs = [];
    for (let i = 0; i < 6; i++) { // a new URL each time: a full load, not a same-document jump
      await page.goto(`${url}/?load=${i}#/gpus`);
      await page.waitForFunction(() => window.__cards);
      runs.push(await page.evaluate(() => ({ fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
                                               cards: window.__cards })));
    }
    await page.goto(url + '/#/queue');
    await page.waitForFunction(() => window.__rows);
    const rows = await page.evaluate(() => window.__rows);
    const cold = runs.shift();
    const med = k => runs.map(x => x[k]).sort((a, b) => a - b)[2];
    console.log(`page weight: ${(weight / 1024).toFixed(1)} KiB uncompressed`);
    console.log(`first load (cold browser): first contentful paint ${cold.fcp.toFixed(0)} ms, 8 GPU cards drawn ${cold.cards.toFixed(0)} ms`);
    console.log(`later loads: first contentful paint median ${med('fcp').toFixed(0)} ms; 8 GPU cards drawn: median ` +
                `${med('cards').toFixed(0)} ms (5 loads)`);
    console.log(`queue with 500 jobs drawn: ${rows.toFixed(0)} ms after navigation`);
    await page.close();
    if (process.env.GW_MEASURE_CPU === '0') return;

    const idle0 = cpuSeconds(d.pid); await sleep(30000); const idle = cpuSeconds(d.pid) - idle0;
    // Each dashboard in its own browser context: Chromium allows 6 connections per host and
    // profile, and each open dashboard holds one for its event stream.
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
    for (let i = 0; i < 20; i++) {
      const p = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await p.goto(url + '/#/gpus');
    }
    await sleep(3000);
    const busy0 = cpuSeconds(d.pid); await sleep(30000); const busy = cpuSeconds(d.pid) - busy0;
    console.log(`daemon CPU over 30 s: ${(100 * idle / 30).toFixed(2)}% of a core with no dashboard, ` +
                `${(100 * busy / 30).toFixed(2)}% with 20 dashboards open (8 GPUs sampled every 2 s)`);
  } finally {
    if (ctx) await ctx.close().catch(() => {});
    if (browser) await browser.close().catch(() => {});
    // Running jobs outlive a stopped daemon: cancel the trainers first (by job, through the daemon).
    for (let id = 1; id <= 8; id++) {
      try {
        execFileSync(path.join(BUILD, 'gpuward'), ['--socket', path.join(dir, 'gw.sock'), 'cancel', String(id)], { stdio: 'ignore' });
      } catch (e) { /* already ended */ }
    }
    d.kill('SIGTERM');
    await new Promise(r => d.on('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch(e => { console.error(e); process.exitCode = 1; });
