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

  const TIME_STEPS = [5, 10, 15, 30, 60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  /* A line chart in box: opts = {series: [{name, points: [[x, y]...], color}], x: 'time' |
   * 'epoch', yMin, yMax, yFmt, yUnit, xUnit, xTip (x in the hover's head), vlines: [x...], empty: text}.  Times are Unix
   * seconds shown in the viewer's time zone.  The box keeps its opts and a zoom (drag across
   * the plot to pick a range of x, double-click for all of it), so that a live redraw keeps
   * the reader's range; hovering shows each series' nearest point. */
  GW.lineChart = function (box, opts) {
    box._chart = opts;
    draw(box);
    if (!box._chartWired) { box._chartWired = true; wire(box); }
  };

  const W = 480, H = 170, L = 46, R = 8, T = 8, B = 22;

  function valid(p) { return p[1] !== null && isFinite(p[1]); }

  /* The series' extent over [lo, hi] of x (all of it without a zoom). */
  function extent(opts, series, zoom) {
    let x0 = Infinity, x1 = -Infinity, y0 = opts.yMin ?? Infinity, y1 = opts.yMax ?? -Infinity;
    for (const s of series) for (const p of s.points) {
      if (!valid(p) || (zoom && (p[0] < zoom[0] || p[0] > zoom[1]))) continue;
      x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]);
      if (opts.yMin === undefined) y0 = Math.min(y0, p[1]);
      if (opts.yMax === undefined) y1 = Math.max(y1, p[1]);
    }
    if (zoom) { x0 = zoom[0]; x1 = zoom[1]; }
    if (x1 === x0) { x0 -= opts.x === 'time' ? 30 : 0.5; x1 += opts.x === 'time' ? 30 : 0.5; }
    if (!(y1 > y0)) y1 = (isFinite(y0) ? y0 : 0) + 1;
    if (!isFinite(y0)) y0 = 0;
    if (opts.yMin === undefined) { const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad; }
    return { x0, x1, y0, y1 };
  }

  function xTicks(opts, x0, x1) {
    const xs = [];
    if (opts.x === 'time') {
      const step = TIME_STEPS.find(s => (x1 - x0) / s <= 6) || 86400 * Math.ceil((x1 - x0) / 86400 / 6);
      const tz = new Date().getTimezoneOffset() * -60;
      for (let v = Math.ceil((x0 + tz) / step) * step - tz; v <= x1; v += step) xs.push(v);
    } else {
      const step = Math.max(1, niceStep(x1 - x0, 6));
      for (let v = Math.ceil(x0 / step) * step; v <= x1; v += step) xs.push(v);
    }
    return xs;
  }

  function note(box, text) {
    const n = document.createElement('div');
    n.className = 'note';
    n.textContent = text;
    box.append(n);
  }

  function draw(box) {
    const opts = box._chart;
    box.replaceChildren();
    const series = (opts.series || []).filter(s => s.points.some(valid))
      .map((s, i) => Object.assign({}, s, { color: s.color || PALETTE[i % PALETTE.length] }));
    if (!series.length) { box._plot = null; note(box, opts.empty || 'No data yet.'); return; }
    const zoom = box._zoom || null;
    const { x0, x1, y0, y1 } = extent(opts, series, zoom);
    const X = v => L + ((v - x0) / (x1 - x0)) * (W - L - R);
    const Y = v => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    const units = document.createElement('div');
    units.className = 'chart-units';
    const yu = document.createElement('span'), xu = document.createElement('span');
    yu.className = 'y-unit'; xu.className = 'x-unit';
    yu.textContent = opts.yUnit || '';
    xu.textContent = (opts.xUnit || (opts.x === 'time' ? 'time' : 'epoch')) + (zoom ? ' · zoomed (double-click: all)' : '');
    units.append(yu, xu);
    const el = svg('svg', { viewBox: `0 0 ${W} ${H + 2}`, class: 'chart', preserveAspectRatio: 'none' });
    const ystep = niceStep(y1 - y0, 4);
    const yFmt = opts.yFmt || (v => +v.toFixed(3) + '');
    for (let v = Math.ceil(y0 / ystep) * ystep; v <= y1 + 1e-9; v += ystep) {
      el.append(svg('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: 'grid' }));
      const t = svg('text', { x: L - 4, y: Y(v) + 3, 'text-anchor': 'end' });
      t.textContent = yFmt(v);
      el.append(t);
    }
    const xs = xTicks(opts, x0, x1), secs = opts.x === 'time' && x1 - x0 <= 180; /* ticks under a minute apart */
    for (const v of xs) {
      const t = svg('text', { x: X(v), y: H, 'text-anchor': 'middle' });
      t.textContent = opts.x !== 'time' ? String(v) : secs ? GW.fmtTime(v, 'sec').slice(11) : GW.fmtTime(v, 'clock');
      el.append(t);
    }
    for (const v of opts.vlines || []) if (v >= x0 && v <= x1)
      el.append(svg('line', { x1: X(v), x2: X(v), y1: T, y2: H - B, class: 'epoch' }));
    for (const s of series) {
      let d = '', pen = false;
      for (const p of s.points) {
        if (!valid(p) || p[0] < x0 || p[0] > x1) { pen = false; continue; }
        d += (pen ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1);
        pen = true;
      }
      el.append(svg('path', { d, class: 'series', stroke: s.color, 'vector-effect': 'non-scaling-stroke' }));
    }
    const cursor = svg('g', { class: 'cursor', visibility: 'hidden' });
    cursor.append(svg('line', { y1: T, y2: H - B, class: 'cursor-line' }));
    const sel = svg('rect', { class: 'zoom-sel', y: T, height: H - T - B, width: 0, visibility: 'hidden' });
    el.append(cursor, sel);
    const tip = document.createElement('div');
    tip.className = 'chart-tip';
    tip.hidden = true;
    box.append(units, el, tip, legendOf(series));
    box._plot = { el, series, x0, x1, X, Y, cursor, sel, tip, opts };
    if (box._hoverX !== undefined && box._hoverX !== null) showTip(box, box._plot, box._hoverX); /* a live redraw under the pointer */
  }

  function legendOf(series) {
    const legend = document.createElement('div');
    legend.className = 'chart-legend'; /* style.css: the chart takes what the legend leaves */
    for (const s of series) {
      const item = document.createElement('span');
      const sw = document.createElement('i');
      sw.style.background = s.color;
      item.append(sw, s.name);
      legend.append(item);
    }
    return legend;
  }

  /* x of the plot under a pointer at clientX (the svg is stretched to its box). */
  function xAt(plot, clientX) {
    const r = plot.el.getBoundingClientRect();
    const vx = ((clientX - r.left) / r.width) * W;
    return plot.x0 + ((vx - L) / (W - L - R)) * (plot.x1 - plot.x0);
  }

  function nearest(points, x) {
    let best = null;
    for (const p of points) if (valid(p) && (!best || Math.abs(p[0] - x) < Math.abs(best[0] - x))) best = p;
    return best;
  }

  function showTip(box, plot, clientX) {
    const x = xAt(plot, clientX);
    if (x < plot.x0 || x > plot.x1) { hideTip(plot); return; }
    const opts = plot.opts, fmtX = v => opts.x === 'time' ? GW.fmtTime(v, 'sec') : opts.xTip ? opts.xTip(v) : `epoch ${v}`;
    const yFmt = opts.yTip || opts.yFmt || (v => String(+v.toFixed(4)));
    const hits = plot.series.map(s => [s, nearest(s.points, x)]).filter(h => h[1]);
    if (!hits.length) { hideTip(plot); return; }
    const at = hits.reduce((a, h) => (Math.abs(h[1][0] - x) < Math.abs(a - x) ? h[1][0] : a), hits[0][1][0]);
    for (const c of [...plot.cursor.querySelectorAll('circle')]) c.remove();
    plot.cursor.firstChild.setAttribute('x1', plot.X(at));
    plot.cursor.firstChild.setAttribute('x2', plot.X(at));
    for (const [s, p] of hits) plot.cursor.append(svg('circle', { cx: plot.X(p[0]), cy: plot.Y(p[1]), r: 3, fill: s.color,
                                                                   'vector-effect': 'non-scaling-stroke' }));
    plot.cursor.setAttribute('visibility', 'visible');
    const tip = plot.tip;
    tip.replaceChildren();
    const head = document.createElement('b');
    head.textContent = fmtX(at);
    tip.append(head);
    for (const [s, p] of hits) {
      const row = document.createElement('div'), sw = document.createElement('i');
      sw.style.background = s.color;
      row.append(sw, `${s.name}: ${yFmt(p[1])}`);
      tip.append(row);
    }
    tip.hidden = false;
    const br = box.getBoundingClientRect(), left = clientX - br.left;
    tip.style.left = `${Math.max(4, Math.min(left + 12, br.width - tip.offsetWidth - 4))}px`;
  }

  function hideTip(plot) {
    plot.cursor.setAttribute('visibility', 'hidden');
    plot.tip.hidden = true;
  }

  /* Pointer handlers on the box (its content is redrawn; the box stays). */
  function wire(box) {
    let drag = null;
    box.addEventListener('mousedown', e => {
      const p = box._plot;
      if (!p || e.button !== 0 || !p.el.contains(e.target)) return;
      drag = { from: e.clientX };
      e.preventDefault();
    });
    box.addEventListener('mousemove', e => {
      const p = box._plot;
      if (!p) return;
      box._hoverX = e.clientX;
      showTip(box, p, e.clientX);
      if (!drag) return;
      const a = p.X(xAt(p, drag.from)), b = p.X(xAt(p, e.clientX));
      p.sel.setAttribute('x', Math.max(L, Math.min(a, b)));
      p.sel.setAttribute('width', Math.abs(b - a));
      p.sel.setAttribute('visibility', 'visible');
    });
    box.addEventListener('mouseleave', () => { box._hoverX = null; if (box._plot) hideTip(box._plot); });
    window.addEventListener('mouseup', e => {
      if (!drag) return;
      const p = box._plot, from = drag.from;
      drag = null;
      if (!p) return;
      p.sel.setAttribute('visibility', 'hidden');
      if (Math.abs(e.clientX - from) < 6) return; /* a click, not a range */
      const a = Math.max(p.x0, Math.min(xAt(p, from), xAt(p, e.clientX)));
      const b = Math.min(p.x1, Math.max(xAt(p, from), xAt(p, e.clientX)));
      if (b > a) { box._zoom = [a, b]; draw(box); }
    });
    box.addEventListener('dblclick', () => { if (box._zoom) { box._zoom = null; draw(box); } });
  }
})();
