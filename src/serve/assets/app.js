// hailo-edge live dashboard: one WebSocket, four views, the body in 3D, live charts.
// Served from the binary; no library and no network beyond the rig itself.
'use strict';

const params = new URLSearchParams(location.search);
const WS_URL = params.get('ws') ||
  `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
const $ = (id) => document.getElementById(id);
const COLOURS = ['#4fc3f7', '#ffb74d', '#81c784', '#e57373', '#ba68c8', '#fff176', '#90a4ae'];
const HISTORY = 120; // points per chart line (about a minute at two figures a second)

const S = {
  rig: null, bones: [], views: [], body: null, charts: {}, lastDropped: null,
  yaw: 0.8, pitch: 0.35, dist: 0, target: null, up: [0, 0, 1], everConnected: false,
};

// ---- the link ------------------------------------------------------------------------------

function setLink(state, text) {
  const el = $('link');
  el.dataset.state = state;
  el.textContent = text;
  document.body.dataset.link = state;
}

function connect() {
  let ws;
  try {
    ws = new WebSocket(WS_URL);
  } catch (e) {
    setLink('disconnected', `disconnected: ${e.message}`);
    return;
  }
  ws.onopen = () => { S.everConnected = true; setLink('live', 'live'); };
  ws.onmessage = (ev) => {
    let m;
    try { m = JSON.parse(ev.data); } catch (e) { return; }
    const on = HANDLERS[m.type];
    if (on) on(m);
  };
  ws.onclose = () => {
    setLink('disconnected', S.everConnected
      ? 'disconnected: the rig stopped streaming (retrying)'
      : 'disconnected: the rig cannot be reached (retrying)');
    setTimeout(connect, 3000);
  };
}

// ---- hello: the rig ------------------------------------------------------------------------

function onHello(m) {
  S.rig = m;
  S.bones = m.bones || [];
  $('device').textContent = `${m.device}; device figures ${m.device_figures}`;
  const views = $('views');
  views.textContent = '';
  S.views = m.cameras.map((c, i) => {
    const fig = document.createElement('figure');
    fig.className = 'view';
    fig.dataset.camera = String(i);
    fig.dataset.frames = '0';
    const canvas = document.createElement('canvas');
    canvas.width = c.width || 288;
    canvas.height = c.height || 288;
    const cap = document.createElement('figcaption');
    cap.textContent = `${c.name} (${c.width}x${c.height}, ${c.fps} fps)`;
    fig.append(canvas, cap);
    views.append(fig);
    return { fig, canvas, cap, name: c.name, frames: 0 };
  });
  S.up = worldUp(m.cameras);
  S.target = null;
  S.dist = 0;
  buildCharts(m);
  drawScene();
}

// ---- views -------------------------------------------------------------------------------

function onView(m) {
  const v = S.views[m.camera];
  if (!v) return;
  const img = new Image();
  img.onload = () => {
    const ctx = v.canvas.getContext('2d');
    ctx.drawImage(img, 0, 0, v.canvas.width, v.canvas.height);
    if (m.fit_2d) drawSkeleton2d(ctx, m.fit_2d.map((p) => p && [p[0], p[1], 1]), '#4dd0e1', 1.5);
    if (m.keypoints) drawSkeleton2d(ctx, m.keypoints.map((k) => [k[0], k[1], k[3]]), '#ff9800', 2);
    v.frames += 1;
    v.fig.dataset.frames = String(v.frames);
    v.fig.dataset.keypoints = m.keypoints ? String(m.keypoints.length) : '0';
  };
  img.src = m.image;
}

function drawSkeleton2d(ctx, pts, colour, width) {
  ctx.lineWidth = width;
  ctx.strokeStyle = colour;
  ctx.fillStyle = colour;
  for (const [a, b] of S.bones) {
    const p = pts[a], q = pts[b];
    if (!p || !q) continue;
    ctx.globalAlpha = Math.max(0.25, Math.min(1, Math.min(p[2], q[2])));
    ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
  }
  for (const p of pts) {
    if (!p) continue;
    ctx.globalAlpha = Math.max(0.25, Math.min(1, p[2]));
    ctx.beginPath(); ctx.arc(p[0], p[1], width + 1, 0, 2 * Math.PI); ctx.fill();
  }
  ctx.globalAlpha = 1;
}

// ---- the body in 3D ----------------------------------------------------------------------

const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const mul = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a) => { const l = Math.hypot(a[0], a[1], a[2]) || 1; return mul(a, 1 / l); };

// Calibrations are world-to-camera: x_cam = R x_world + t, R as rows.
const rowOf = (k, r) => k.rotation[r];
function toWorld(k, pc) {
  const d = sub(pc, k.translation);
  const R = k.rotation;
  return [0, 1, 2].map((j) => R[0][j] * d[0] + R[1][j] * d[1] + R[2][j] * d[2]);
}
const centreOf = (k) => toWorld(k, [0, 0, 0]);

// The world's up: the mean of the cameras' up directions (image y points down).
function worldUp(cameras) {
  let u = [0, 0, 0];
  for (const c of cameras) if (c.calibration) u = sub(u, rowOf(c.calibration, 1));
  return Math.hypot(...u) > 1e-6 ? norm(u) : [0, 0, 1];
}

function frustum(k, depth) {
  const corner = (u, v) => toWorld(k, [(u - k.cx) / k.fx * depth, (v - k.cy) / k.fy * depth, depth]);
  return [corner(0, 0), corner(k.width, 0), corner(k.width, k.height), corner(0, k.height)];
}

function onBody(m) {
  S.body = m;
  const fit = m.mpjpe_mm != null ? `MPJPE ${m.mpjpe_mm.toFixed(0)} mm against the synthetic truth (measured)`
    : m.residual_px != null ? `residual ${m.residual_px.toFixed(1)} px (measured)` : '';
  $('fit').textContent = fit;
  drawScene();
}

function sceneCentre() {
  if (S.body && S.body.keypoints_3d.length) {
    const k = S.body.keypoints_3d;
    return mul(k.reduce(add, [0, 0, 0]), 1 / k.length);
  }
  const cams = (S.rig ? S.rig.cameras : []).filter((c) => c.calibration);
  if (!cams.length) return [0, 0, 0];
  return mul(cams.map((c) => centreOf(c.calibration)).reduce(add, [0, 0, 0]), 1 / cams.length);
}

function drawScene() {
  const canvas = $('body3d');
  const ctx = canvas.getContext('2d');
  const W = canvas.width, H = canvas.height;
  ctx.fillStyle = '#0d0f12';
  ctx.fillRect(0, 0, W, H);
  if (!S.rig) return;
  const cams = S.rig.cameras.filter((c) => c.calibration);
  const centre = sceneCentre();
  S.target = S.target ? add(mul(S.target, 0.9), mul(centre, 0.1)) : centre;
  if (!S.dist) {
    const far = Math.max(1, ...cams.map((c) => Math.hypot(...sub(centreOf(c.calibration), S.target))));
    S.dist = 2.2 * far;
  }
  // Orbit: yaw about the up axis, pitch above the horizon.
  const up = S.up;
  const a = norm(cross(up, Math.abs(up[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0]));
  const b = cross(up, a);
  const dir = add(mul(add(mul(a, Math.cos(S.yaw)), mul(b, Math.sin(S.yaw))), Math.cos(S.pitch)),
    mul(up, Math.sin(S.pitch)));
  const eye = add(S.target, mul(dir, S.dist));
  const z = norm(sub(S.target, eye));
  const x = norm(cross(z, up));
  const y = cross(x, z);
  const f = 0.9 * Math.min(W, H);
  const proj = (p) => {
    const d = sub(p, eye);
    const zc = dot(d, z);
    if (zc < 0.05) return null;
    return [W / 2 + f * dot(d, x) / zc, H / 2 - f * dot(d, y) / zc];
  };
  const line = (p, q) => {
    const s = proj(p), t = proj(q);
    if (!s || !t) return false;
    ctx.beginPath(); ctx.moveTo(s[0], s[1]); ctx.lineTo(t[0], t[1]); ctx.stroke();
    return true;
  };
  // Ground grid, 1 m squares, under the lowest keypoint.
  const kps = S.body ? S.body.keypoints_3d : [];
  const floor = kps.length ? Math.min(...kps.map((p) => dot(p, up))) : dot(S.target, up) - 1;
  const o = add(sub(S.target, mul(up, dot(S.target, up))), mul(up, floor));
  ctx.strokeStyle = '#262c33';
  ctx.lineWidth = 1;
  for (let i = -4; i <= 4; i++) {
    line(add(o, add(mul(a, i), mul(b, -4))), add(o, add(mul(a, i), mul(b, 4))));
    line(add(o, add(mul(b, i), mul(a, -4))), add(o, add(mul(b, i), mul(a, 4))));
  }
  // Camera frusta, from the calibrations.
  let frusta = 0;
  const depth = 0.12 * S.dist / 2.2;
  cams.forEach((c, i) => {
    const k = c.calibration;
    const apex = centreOf(k);
    const fr = frustum(k, depth);
    ctx.strokeStyle = COLOURS[i % COLOURS.length];
    ctx.lineWidth = 1.2;
    let ok = true;
    for (let j = 0; j < 4; j++) {
      ok = line(apex, fr[j]) && ok;
      ok = line(fr[j], fr[(j + 1) % 4]) && ok;
    }
    const s = proj(apex);
    if (s) { ctx.fillStyle = ctx.strokeStyle; ctx.fillText(c.name, s[0] + 4, s[1] - 4); }
    if (ok) frusta += 1;
  });
  canvas.dataset.frusta = String(frusta);
  // The fitted skeleton.
  let segments = 0;
  ctx.strokeStyle = '#4dd0e1';
  ctx.lineWidth = 2.5;
  for (const [i, j] of S.bones) {
    if (kps[i] && kps[j] && line(kps[i], kps[j])) segments += 1;
  }
  ctx.fillStyle = '#e0f7fa';
  for (const p of kps) {
    const s = proj(p);
    if (s) { ctx.beginPath(); ctx.arc(s[0], s[1], 2.5, 0, 2 * Math.PI); ctx.fill(); }
  }
  canvas.dataset.drawnSegments = String(segments);
}

function orbitControls() {
  const c = $('body3d');
  let drag = null;
  c.addEventListener('pointerdown', (e) => { drag = [e.clientX, e.clientY]; c.setPointerCapture(e.pointerId); });
  c.addEventListener('pointerup', () => { drag = null; });
  c.addEventListener('pointermove', (e) => {
    if (!drag) return;
    S.yaw -= (e.clientX - drag[0]) * 0.01;
    S.pitch = Math.max(-1.4, Math.min(1.4, S.pitch + (e.clientY - drag[1]) * 0.01));
    drag = [e.clientX, e.clientY];
    drawScene();
  });
  c.addEventListener('wheel', (e) => {
    e.preventDefault();
    S.dist = Math.max(0.5, S.dist * Math.exp(e.deltaY * 0.001));
    drawScene();
  }, { passive: false });
}

// ---- charts ------------------------------------------------------------------------------

class Chart {
  constructor(key, title, unit) {
    const box = document.createElement('div');
    box.className = 'chart';
    box.dataset.chart = key;
    this.h2 = document.createElement('h2');
    this.canvas = document.createElement('canvas');
    this.canvas.width = 480;
    this.canvas.height = 160;
    box.append(this.h2, this.canvas);
    $('charts').append(box);
    this.title = title;
    this.unit = unit;
    this.series = new Map();
    this.box = box;
    this.label(null);
  }

  label(provenance) {
    this.h2.textContent = `${this.title} (${this.unit}) `;
    if (provenance) {
      const p = document.createElement('span');
      p.className = `prov ${provenance}`;
      p.textContent = provenance;
      this.h2.append(p);
      this.box.dataset.provenance = provenance;
    }
  }

  push(name, value) {
    if (!Number.isFinite(value)) return;
    if (!this.series.has(name)) this.series.set(name, []);
    const s = this.series.get(name);
    s.push(value);
    if (s.length > HISTORY) s.shift();
  }

  draw() {
    const ctx = this.canvas.getContext('2d');
    const W = this.canvas.width, H = this.canvas.height, L = 44, B = 14;
    ctx.fillStyle = '#0d0f12';
    ctx.fillRect(0, 0, W, H);
    let max = 0;
    for (const s of this.series.values()) max = Math.max(max, ...s);
    max = max > 0 ? max * 1.15 : 1;
    ctx.fillStyle = '#8d98a5';
    ctx.font = '11px sans-serif';
    ctx.strokeStyle = '#262c33';
    for (const f of [0, 0.5, 1]) {
      const yy = H - B - f * (H - B - 4);
      ctx.beginPath(); ctx.moveTo(L, yy); ctx.lineTo(W, yy); ctx.stroke();
      ctx.fillText((f * max).toPrecision(3), 2, yy + 4);
    }
    let i = 0;
    let lx = L + 4;
    for (const [name, s] of this.series) {
      const colour = COLOURS[i++ % COLOURS.length];
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      s.forEach((v, j) => {
        const xx = L + (W - L) * (j + HISTORY - s.length) / (HISTORY - 1);
        const yy = H - B - (v / max) * (H - B - 4);
        if (j === 0) ctx.moveTo(xx, yy); else ctx.lineTo(xx, yy);
      });
      ctx.stroke();
      ctx.fillStyle = colour;
      ctx.fillText(name, lx, H - 2);
      lx += ctx.measureText(name).width + 10;
    }
  }
}

function buildCharts(m) {
  $('charts').textContent = '';
  S.charts = {
    fps: new Chart('camera_fps', 'camera frames per second', 'fps'),
    drops: new Chart('camera_drops', 'frames dropped per second, per camera', '1/s'),
    device: new Chart('device_fps', 'device frames per second, per graph', 'fps'),
    busy: new Chart('npu_busy', 'NPU busy share of wall time', '%'),
    switches: new Chart('switches', 'graph switches per second', '1/s'),
    latency: new Chart('latency', 'latency p50 per stage', 'ms'),
  };
  S.lastDropped = null;
}

function onFigures(m) {
  const c = S.charts;
  if (!c.fps) return;
  const dt = S.lastDropped ? Math.max(1e-3, m.elapsed_s - S.lastDropped.t) : null;
  m.cameras.forEach((cam, i) => {
    c.fps.push(cam.name, cam.fps.value);
    if (dt) c.drops.push(cam.name, Math.max(0, cam.dropped.value - S.lastDropped.v[i]) / dt);
  });
  S.lastDropped = { t: m.elapsed_s, v: m.cameras.map((cam) => cam.dropped.value) };
  c.fps.label(m.cameras[0] && m.cameras[0].fps.provenance);
  c.drops.label(m.cameras[0] && m.cameras[0].dropped.provenance);
  for (const g of m.graphs) c.device.push(g.name, g.device_fps.value);
  c.device.label(m.graphs[0] && m.graphs[0].device_fps.provenance);
  if (m.npu_busy) { c.busy.push('busy', 100 * m.npu_busy.value); c.busy.label(m.npu_busy.provenance); }
  c.switches.push('switches', m.switches_per_s.value);
  c.switches.label(m.switches_per_s.provenance);
  for (const l of m.latency) c.latency.push(l.stage, l.p50_ms);
  c.latency.label(m.latency[0] && m.latency[0].provenance);
  for (const chart of Object.values(c)) chart.draw();
  m.cameras.forEach((cam, i) => {
    const v = S.views[i];
    if (v) v.cap.textContent = `${cam.name}: ${cam.fps.value.toFixed(1)} fps, ${cam.dropped.value} dropped`;
  });
  table(m);
}

function table(m) {
  const rows = [];
  const row = (name, value, prov) => rows.push([name, value, prov]);
  for (const cam of m.cameras) {
    row(`${cam.name} fps`, cam.fps.value.toFixed(1), cam.fps.provenance);
    row(`${cam.name} dropped`, String(cam.dropped.value), cam.dropped.provenance);
  }
  for (const g of m.graphs) row(`${g.name} device fps`, g.device_fps.value.toFixed(1), g.device_fps.provenance);
  row('graph switches/s', m.switches_per_s.value.toFixed(1), m.switches_per_s.provenance);
  if (m.npu_busy) row('NPU busy', `${(100 * m.npu_busy.value).toFixed(0)} %`, m.npu_busy.provenance);
  for (const l of m.latency) row(`${l.stage} latency p50 / p99`, `${l.p50_ms.toFixed(1)} / ${l.p99_ms.toFixed(1)} ms`, l.provenance);
  if (m.fit) row(m.fit[0] === 'mpjpe_mm' ? 'fit MPJPE' : 'fit residual',
    `${m.fit[1].value.toFixed(1)} ${m.fit[0] === 'mpjpe_mm' ? 'mm' : 'px'}`, m.fit[1].provenance);
  const body = $('figures').tBodies[0];
  body.textContent = '';
  for (const [name, value, prov] of rows) {
    const tr = body.insertRow();
    tr.insertCell().textContent = name;
    const v = tr.insertCell();
    v.textContent = value;
    v.className = 'num';
    const p = tr.insertCell();
    p.innerHTML = '';
    const span = document.createElement('span');
    span.className = `prov ${prov}`;
    span.textContent = prov;
    p.append(span);
  }
  const t = $('figures');
  t.dataset.updates = String(Number(t.dataset.updates) + 1);
}

const HANDLERS = { hello: onHello, view: onView, body: onBody, figures: onFigures };

orbitControls();
setLink('connecting', `connecting to ${WS_URL}`);
connect();
