/* Hand-written SVG charts for the dashboard: sparklines and line charts with axes.  No
 * library: a few hundred points per chart is all the page ever draws. */
'use strict';
(function () {
  const GW = window.GW = window.GW || {};
  const NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs) {
    const el = document.createElementNS(NS, tag);
    for (const k in attrs || {}) el.setAttribute(k, attrs[k]);
    return el;
  }
  GW.svg = svg;

  const PALETTE = ['#2156c7', '#c0262d', '#2f8f4e', '#d08a1c', '#7a3fb8', '#0f8b8d', '#b5487a', '#6b7280'];
  GW.palette = PALETTE;

  /* A sparkline of points [[t, v], ...] over [t0, t1] with v in [0, vmax]; kind picks the
   * colours ("util" or "mem"). */
  GW.sparkline = function (el, points, t0, t1, vmax, kind) {
    const W = 300, H = 38;
    el.setAttribute('viewBox', `0 0 ${W} ${H}`);
    el.setAttribute('preserveAspectRatio', 'none');
    el.replaceChildren();
    if (!points.length || !(vmax > 0) || t1 <= t0) return;
    const x = t => ((t - t0) / (t1 - t0)) * W;
    const y = v => H - 1 - (Math.max(0, Math.min(v, vmax)) / vmax) * (H - 2);
    let d = '';
    for (const [t, v] of points) if (t >= t0) d += (d ? 'L' : 'M') + x(t).toFixed(1) + ' ' + y(v).toFixed(1);
    if (!d) return;
    const first = points.find(p => p[0] >= t0), last = points[points.length - 1];
    el.append(svg('path', { d: `${d}L${x(last[0]).toFixed(1)} ${H}L${x(first[0]).toFixed(1)} ${H}Z`, class: 'area-' + kind }),
              svg('path', { d, class: 'line-' + kind, 'vector-effect': 'non-scaling-stroke' }));
  };

  function niceStep(range, target) {
    const raw = range / Math.max(1, target), p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  const TIME_STEPS = [60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  /* A line chart in box: opts = {series: [{name, points: [[x, y]...], color}], x: 'time' |
   * 'epoch', yMin, yMax, yFmt, vlines: [x...], empty: text}.  Times are Unix seconds shown in
   * the viewer's time zone. */
  GW.lineChart = function (box, opts) {
    box.replaceChildren();
    const series = (opts.series || []).filter(s => s.points.some(p => p[1] !== null && isFinite(p[1])));
    if (!series.length) {
      const n = document.createElement('div');
      n.className = 'note';
      n.textContent = opts.empty || 'No data yet.';
      box.append(n);
      return;
    }
    const W = 480, H = 170, L = 46, R = 8, T = 8, B = 22;
    let x0 = Infinity, x1 = -Infinity, y0 = opts.yMin ?? Infinity, y1 = opts.yMax ?? -Infinity;
    for (const s of series) for (const [px, py] of s.points) {
      if (py === null || !isFinite(py)) continue;
      x0 = Math.min(x0, px); x1 = Math.max(x1, px);
      if (opts.yMin === undefined) y0 = Math.min(y0, py);
      if (opts.yMax === undefined) y1 = Math.max(y1, py);
    }
    if (x1 === x0) { x0 -= opts.x === 'time' ? 30 : 0.5; x1 += opts.x === 'time' ? 30 : 0.5; }
    if (y1 === y0) { y1 = y0 + 1; }
    if (opts.yMin === undefined) { const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad; }
    const X = v => L + ((v - x0) / (x1 - x0)) * (W - L - R);
    const Y = v => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    const el = svg('svg', { viewBox: `0 0 ${W} ${H + 2}`, class: 'chart', preserveAspectRatio: 'none' });
    const ystep = niceStep(y1 - y0, 4);
    const yFmt = opts.yFmt || (v => +v.toFixed(3) + '');
    for (let v = Math.ceil(y0 / ystep) * ystep; v <= y1 + 1e-9; v += ystep) {
      el.append(svg('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: 'grid' }));
      const t = svg('text', { x: L - 4, y: Y(v) + 3, 'text-anchor': 'end' });
      t.textContent = yFmt(v);
      el.append(t);
    }
    let xs;
    if (opts.x === 'time') {
      const step = TIME_STEPS.find(s => (x1 - x0) / s <= 6) || 86400 * Math.ceil((x1 - x0) / 86400 / 6);
      const tz = new Date().getTimezoneOffset() * -60;
      xs = [];
      for (let v = Math.ceil((x0 + tz) / step) * step - tz; v <= x1; v += step) xs.push(v);
    } else {
      const step = Math.max(1, niceStep(x1 - x0, 6));
      xs = [];
      for (let v = Math.ceil(x0 / step) * step; v <= x1; v += step) xs.push(v);
    }
    for (const v of xs) {
      const t = svg('text', { x: X(v), y: H, 'text-anchor': 'middle' });
      t.textContent = opts.x === 'time' ? GW.fmtTime(v, 'clock') : String(v);
      el.append(t);
    }
    for (const v of opts.vlines || []) if (v >= x0 && v <= x1)
      el.append(svg('line', { x1: X(v), x2: X(v), y1: T, y2: H - B, class: 'epoch' }));
    series.forEach((s, i) => {
      let d = '', pen = false;
      for (const [px, py] of s.points) {
        if (py === null || !isFinite(py)) { pen = false; continue; }
        d += (pen ? 'L' : 'M') + X(px).toFixed(1) + ' ' + Y(py).toFixed(1);
        pen = true;
      }
      el.append(svg('path', { d, class: 'series', stroke: s.color || PALETTE[i % PALETTE.length],
                              'vector-effect': 'non-scaling-stroke' }));
    });
    box.append(el);
    const legend = document.createElement('div');
    legend.className = 'chart-legend';
    series.forEach((s, i) => {
      const item = document.createElement('span');
      const sw = document.createElement('i');
      sw.style.background = s.color || PALETTE[i % PALETTE.length];
      item.append(sw, s.name);
      legend.append(item);
    });
    box.append(legend); /* style.css: the chart takes what the legend leaves of the box */
  };
})();
