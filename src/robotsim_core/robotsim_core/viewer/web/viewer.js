// robotsim viewer: the robot and its world (glTF) animated from scene data (robotsim_core/viewer/bag_scene.py).
// Replay: DATA holds the whole bag. Live: DATA.live names the WebSocket; the server appends samples in
// the same shape and the page follows the newest time. Everything below the 'ros_world' node is in ROS
// coordinates (REP 103, z up); that node turns them into three.js's y up.
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';

const DATA = JSON.parse(document.getElementById('robotsim-data').textContent);
const GLB_BASE64 = document.getElementById('robotsim-glb').textContent.trim();
const ROOT_NODE = 'ros_world';
const SCAN_NO_RETURN = 65535;
const LIVE_ARRIVALS_KEPT = 20000;  // about half an hour of updates at 10 Hz

const viewer = { ready: false, time: 0, duration: DATA.duration || 0, notes: [], errors: [] };
window.robotsimViewer = viewer;

// ------------------------------------------------------------------ series helpers
function lowerIndex(times, t) {  // last index with times[i] <= t, or -1
  let lo = 0, hi = times.length - 1, found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] <= t) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
  }
  return found;
}

const _qa = new THREE.Quaternion(), _qb = new THREE.Quaternion();
function samplePose(series, t, position, quaternion) {  // series: {t: [...], pose: [[x,y,z,qx,qy,qz,qw]]}
  const n = series.t.length;
  if (!n) return false;
  let i = lowerIndex(series.t, t);
  if (i < 0) i = 0;
  const a = series.pose[i];
  if (i >= n - 1 || t <= series.t[i]) {
    position.set(a[0], a[1], a[2]); quaternion.set(a[3], a[4], a[5], a[6]).normalize();
    return true;
  }
  const b = series.pose[i + 1];
  const f = (t - series.t[i]) / (series.t[i + 1] - series.t[i]);
  position.set(a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f);
  _qa.set(a[3], a[4], a[5], a[6]).normalize(); _qb.set(b[3], b[4], b[5], b[6]).normalize();
  quaternion.slerpQuaternions(_qa, _qb, f);
  return true;
}

function sampleVector(times, rows, t) {  // linear interpolation of equal-length rows
  const n = times.length;
  let i = lowerIndex(times, t);
  if (i < 0) i = 0;
  if (i >= n - 1 || t <= times[i]) return rows[i];
  const f = (t - times[i]) / (times[i + 1] - times[i]);
  return rows[i].map((v, k) => v + (rows[i + 1][k] - v) * f);
}

function decodeScan(text) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new Uint16Array(bytes.buffer);
}

// ------------------------------------------------------------------ scene
const container = document.getElementById('view');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
const GL_RENDERER = glRendererName(renderer.getContext());
// A software rasteriser (a machine without a GPU, e.g. SwiftShader in a headless Chromium, Mesa's llvmpipe)
// draws at half the resolution: it fills pixels with the CPU the simulator runs on (measured with
// bench/bench_viewer.py: a 1280x800 frame cost about 70 ms of CPU, half the resolution about half that).
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|software/i.test(GL_RENDERER);
renderer.setPixelRatio(window.devicePixelRatio * (SOFTWARE_GL ? 0.5 : 1));
viewer.renders = 0;
container.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x2b3038);
const camera = new THREE.PerspectiveCamera(50, 1, 0.02, 500);
const controls = new OrbitControls(camera, renderer.domElement);
scene.add(new THREE.HemisphereLight(0xffffff, 0x445060, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 1.8);
sun.position.set(3, 8, 2);
scene.add(sun);

let rosWorld = null;          // the ROS world frame (z up)
// Drawn only when something changed (a new time, the camera moved, a resize), and a display frame is asked
// for only then (or while a replay plays): a live page gets 10 updates a second, and a browser without a GPU
// draws with the CPU the simulator needs.
let renderWanted = true, frameAsked = false;
function askFrame() {
  if (!frameAsked) { frameAsked = true; requestAnimationFrame(animate); }
}
function requestRender() { renderWanted = true; askFrame(); }
controls.addEventListener('change', requestRender);
const links = {};             // original glTF node name -> Object3D
let baseNode = null;          // the node the base pose moves
const overlays = {};

function resize() {
  const width = container.clientWidth || window.innerWidth, height = container.clientHeight || window.innerHeight;
  renderer.setSize(width, height);
  camera.aspect = width / Math.max(1, height);
  camera.updateProjectionMatrix();
  requestRender();
}
window.addEventListener('resize', resize);

function note(text) {
  viewer.notes.push(text);
  const p = document.createElement('p');
  p.textContent = text;
  document.getElementById('notes').appendChild(p);
}

function loadGlb() {
  return new Promise((resolve, reject) => {
    if (!GLB_BASE64) { resolve(null); return; }
    const bytes = Uint8Array.from(atob(GLB_BASE64), (c) => c.charCodeAt(0));
    new GLTFLoader().parse(bytes.buffer, '', resolve, reject);
  });
}

function indexNodes(gltf) {
  // three.js sanitises node names ('/' and '.' dropped); map the glTF's own names to the objects.
  const nodes = gltf.parser.json.nodes || [];
  gltf.scene.traverse((object) => {
    const association = gltf.parser.associations.get(object);
    if (association && association.nodes !== undefined && nodes[association.nodes]) {
      links[nodes[association.nodes].name || ''] = object;
    }
  });
}

function makeLine(color, count) {
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(Math.max(count, 1) * 3), 3));
  geometry.setDrawRange(0, 0);
  const line = new THREE.Line(geometry, new THREE.LineBasicMaterial({ color }));
  line.frustumCulled = false;
  return line;
}

function fillLine(line, points) {
  let attribute = line.geometry.getAttribute('position');
  if (attribute.count < points.length) {
    const grown = new THREE.BufferAttribute(new Float32Array(points.length * 2 * 3), 3);
    line.geometry.setAttribute('position', grown);
    attribute = grown;
  }
  for (let i = 0; i < points.length; i++) attribute.setXYZ(i, points[i][0], points[i][1], points[i][2] + 0.005);
  attribute.needsUpdate = true;
}

function buildOverlays() {
  overlays.truth = makeLine(0x3ddc84, DATA.base ? DATA.base.t.length : 1);
  overlays.odom = makeLine(0xff9f1c, DATA.odom_trail ? DATA.odom_trail.t.length : 1);
  rosWorld.add(overlays.truth, overlays.odom);
  refreshTrails();
  if (DATA.scan) {
    const count = DATA.scan.count;
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(count * 3), 3));
    overlays.scan = new THREE.Points(geometry, new THREE.PointsMaterial({ color: 0xff3b6b, size: 4, sizeAttenuation: false }));
    overlays.scan.frustumCulled = false;
    const frame = links[DATA.scan.frame];
    if (frame) frame.add(overlays.scan); else { rosWorld.add(overlays.scan); note(`lidar frame ${DATA.scan.frame} is not a link of the robot: points drawn at the origin`); }
    overlays.scanIndex = -2;
  }
  ensureGoal();
  buildArrows();
}

// ------------------------------------------------------------------ vectors as arrows (bag_scene: vectors)
function formatScale(series) {  // '1 m = 20 N' from the series' metres of arrow per unit
  const perMetre = 1 / series.scale;
  return `1 m = ${perMetre >= 100 ? perMetre.toFixed(0) : perMetre.toPrecision(2)} ${series.unit}`;
}

function buildArrows() {
  overlays.arrows = {};
  const legend = document.getElementById('legend');
  for (const series of DATA.vectors || []) {
    const arrow = new THREE.ArrowHelper(new THREE.Vector3(1, 0, 0), new THREE.Vector3(), 1, series.colour);
    arrow.visible = false;
    const frame = links[series.frame];
    if (frame) frame.add(arrow);
    else { rosWorld.add(arrow); note(`${series.name}: frame ${series.frame} is not a link of the robot: its arrow is drawn at the origin`); }
    overlays.arrows[series.name] = { series, arrow, shown: true };
    const label = document.createElement('label');
    label.className = 'arrow-toggle';
    const box = document.createElement('input');
    box.type = 'checkbox'; box.checked = true; box.dataset.vector = series.name;
    box.addEventListener('change', () => { overlays.arrows[series.name].shown = box.checked; applyTime(viewer.time); });
    const swatch = document.createElement('span');
    swatch.className = 'swatch'; swatch.style.background = series.colour;
    label.append(box, swatch, ` ${series.name} (${formatScale(series)})`);
    legend.append(document.createElement('br'), label);
  }
}

const _dir = new THREE.Vector3();
function applyArrows(t) {
  for (const entry of Object.values(overlays.arrows || {})) {
    const { series, arrow } = entry;
    const i = lowerIndex(series.t, t);
    const v = i >= 0 ? sampleVector(series.t, series.v, t) : null;
    const length = v ? Math.hypot(v[0], v[1], v[2]) * series.scale : 0;
    entry.vector = v;
    arrow.visible = entry.shown && length > 1e-4;
    if (!arrow.visible) continue;
    const at = series.at ? sampleVector(series.t, series.at, t) : [0, 0, 0];
    arrow.position.set(at[0], at[1], at[2]);
    _dir.set(v[0], v[1], v[2]).normalize();
    arrow.setDirection(_dir);
    arrow.setLength(length, Math.min(0.2 * length, 0.08), Math.min(0.1 * length, 0.04));
  }
}

function ensureGoal() {
  if (DATA.goal && !overlays.goal) {
    const marker = new THREE.Mesh(new THREE.CylinderGeometry(0.08, 0.08, 0.02, 24),
      new THREE.MeshStandardMaterial({ color: 0x4aa8ff, emissive: 0x10305a }));
    marker.rotation.x = Math.PI / 2;  // the cylinder's axis (y) onto ROS z
    marker.position.set(DATA.goal.xyz[0], DATA.goal.xyz[1], 0.01);
    rosWorld.add(marker);
    overlays.goal = marker;
  } else if (DATA.goal && overlays.goal) {
    overlays.goal.position.set(DATA.goal.xyz[0], DATA.goal.xyz[1], 0.01);
  }
}

function refreshTrails() {
  if (DATA.base) fillLine(overlays.truth, DATA.base.pose);
  if (DATA.odom_trail) fillLine(overlays.odom, DATA.odom_trail.xyz);
}

// ------------------------------------------------------------------ applying a time
const _p = new THREE.Vector3(), _q = new THREE.Quaternion(), _m = new THREE.Quaternion();
const _axis = new THREE.Vector3();

function applyJointStates(t) {
  const states = DATA.joint_states, joints = DATA.joints || {};
  if (!states || !states.t.length) return;
  const row = sampleVector(states.t, states.position, t);
  const value = {};
  states.names.forEach((name, k) => { value[name] = row[k]; });
  for (const [name, joint] of Object.entries(joints)) {
    const node = links[joint.child];
    if (!node || (DATA.tf && DATA.tf[joint.child])) continue;  // a TF edge moves this link
    let q = value[name];
    if (joint.mimic && value[joint.mimic[0]] !== undefined) q = joint.mimic[1] * value[joint.mimic[0]] + joint.mimic[2];
    if (q === undefined) continue;
    const o = joint.origin;
    _q.set(o[3], o[4], o[5], o[6]);
    _axis.set(joint.axis[0], joint.axis[1], joint.axis[2]).normalize();
    node.position.set(o[0], o[1], o[2]);
    if (joint.type === 'prismatic') {
      node.position.add(_axis.clone().multiplyScalar(q).applyQuaternion(_q));
      node.quaternion.copy(_q);
    } else {
      _m.setFromAxisAngle(_axis, q);
      node.quaternion.copy(_q).multiply(_m);
    }
  }
}

function applyTime(t) {
  viewer.time = t;
  requestRender();
  if (DATA.base && baseNode) samplePose(DATA.base, t, baseNode.position, baseNode.quaternion);
  applyJointStates(t);
  for (const [child, edge] of Object.entries(DATA.tf || {})) {
    const node = links[child];
    if (node) samplePose(edge, t, node.position, node.quaternion);
  }
  applyArrows(t);
  if (DATA.base) overlays.truth.geometry.setDrawRange(0, lowerIndex(DATA.base.t, t) + 1);
  if (DATA.odom_trail) overlays.odom.geometry.setDrawRange(0, lowerIndex(DATA.odom_trail.t, t) + 1);
  if (DATA.scan && overlays.scan) {
    const i = lowerIndex(DATA.scan.t, t);
    if (i !== overlays.scanIndex) {
      overlays.scanIndex = i;
      const attribute = overlays.scan.geometry.getAttribute('position');
      let used = 0;
      if (i >= 0) {
        const ranges = decodeScan(DATA.scan.ranges[i]), scale = DATA.scan.range_max / 65534;
        for (let k = 0; k < ranges.length; k++) {
          if (ranges[k] === SCAN_NO_RETURN) continue;
          const r = ranges[k] * scale, a = DATA.scan.angle_min + k * DATA.scan.angle_increment;
          attribute.setXYZ(used++, r * Math.cos(a), r * Math.sin(a), 0);
        }
      }
      overlays.scan.geometry.setDrawRange(0, used);
      attribute.needsUpdate = true;
    }
  }
  if (DATA.camera) {
    const i = lowerIndex(DATA.camera.t, t);
    const image = document.getElementById('camera');
    if (i >= 0 && image.dataset.index !== String(i)) {
      image.dataset.index = String(i);
      image.src = DATA.camera.frames[i];
      document.getElementById('camera-caption').textContent = `${DATA.camera.topic} at t = ${DATA.camera.t[i].toFixed(2)} s`;
    }
    document.getElementById('camera-figure').hidden = i < 0;
  }
  const simTime = (DATA.start || 0) + t;
  const clockName = DATA.fixed_frame === 'world' ? 'sim time' : 'stamp';
  document.getElementById('clock').textContent = `t = ${t.toFixed(2)} s of ${viewer.duration.toFixed(2)} s (${clockName} ${simTime.toFixed(2)} s)`;
  const scrub = document.getElementById('scrub');
  if (document.activeElement !== scrub) scrub.value = String(t);
}

function glRendererName(gl) {
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  return String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
}

function render() {
  viewer.renders += 1;
  controls.update();
  renderer.render(scene, camera);
}

// ------------------------------------------------------------------ timeline
let playing = false, lastFrame = null;
const playButton = document.getElementById('play');
function setPlaying(on) {
  playing = on;
  playButton.innerHTML = on ? '&#10074;&#10074;' : '&#9654;';
  lastFrame = null;
  askFrame();
}
playButton.addEventListener('click', () => {
  if (!playing && viewer.time >= viewer.duration) applyTime(0);
  setPlaying(!playing);
});
document.getElementById('scrub').addEventListener('input', (event) => {
  document.getElementById('follow').checked = false;
  applyTime(parseFloat(event.target.value));
});
window.addEventListener('keydown', (event) => {
  if (event.code === 'Space' && event.target.tagName !== 'SELECT') { event.preventDefault(); playButton.click(); }
});

function animate(now) {
  frameAsked = false;
  if (playing && !DATA.live) {
    askFrame();
    if (lastFrame !== null) {
      const speed = parseFloat(document.getElementById('speed').value);
      const t = Math.min(viewer.duration, viewer.time + (now - lastFrame) / 1000 * speed);
      applyTime(t);
      if (t >= viewer.duration) setPlaying(false);
    }
    lastFrame = now;
  }
  if (renderWanted) {
    renderWanted = false;
    render();
  }
}

// ------------------------------------------------------------------ live updates
function appendSeries(target, key, update) {
  if (!update) return;
  if (!target[key]) { target[key] = update; return; }
  for (const field of Object.keys(update)) {
    if (Array.isArray(update[field]) && Array.isArray(target[key][field])) target[key][field].push(...update[field]);
    else target[key][field] = update[field];
  }
}

function trimBefore(series, fields, t0) {
  if (!series) return;
  const cut = lowerIndex(series.t, t0);
  if (cut > 0) for (const f of fields) series[f].splice(0, cut);
}

function connectLive() {
  const follow = document.getElementById('follow');
  document.getElementById('follow-label').hidden = false;
  playButton.hidden = true;
  document.getElementById('speed').hidden = true;
  const status = document.getElementById('status');
  status.textContent = 'connecting...';
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${DATA.live.path}`;
  const socket = new WebSocket(url);
  // What arrived, for benchmarks and tests (bench/bench_viewer.py): updates, their size, samples per
  // stream, and the newest (wall ms by Date.now(), sim time) arrivals to measure how far the page lags.
  const stats = viewer.live = { updates: 0, characters: 0, samples: {}, arrivals: [] };
  socket.onmessage = (event) => {
    stats.updates += 1;
    stats.characters += event.data.length;
    const update = JSON.parse(event.data);
    if (update.time !== undefined) {
      stats.arrivals.push([Date.now(), update.time]);
      if (stats.arrivals.length > LIVE_ARRIVALS_KEPT) stats.arrivals.splice(0, stats.arrivals.length - LIVE_ARRIVALS_KEPT);
    }
    for (const [key, series] of Object.entries(update.append || {})) {
      if (series && Array.isArray(series.t)) stats.samples[key] = (stats.samples[key] || 0) + series.t.length;
    }
    if (update.status) status.textContent = update.status;
    if (update.start !== undefined) DATA.start = update.start;
    if (update.append) {
      const a = update.append;
      appendSeries(DATA, 'base', a.base);
      appendSeries(DATA, 'odom_trail', a.odom_trail);
      for (const [child, edge] of Object.entries(a.tf || {})) {
        DATA.tf = DATA.tf || {};
        appendSeries(DATA.tf, child, edge);
      }
      appendSeries(DATA, 'joint_states', a.joint_states);
      if (a.scan && !DATA.scan) { DATA.scan = a.scan; buildScanLate(); } else appendSeries(DATA, 'scan', a.scan);
      appendSeries(DATA, 'camera', a.camera);
      if (a.goal) { DATA.goal = a.goal; ensureGoal(); }
      if (update.time !== undefined) viewer.duration = update.time;
      // Keep a window of the newest DATA.live.window seconds.
      const t0 = viewer.duration - DATA.live.window;
      trimBefore(DATA.base, ['t', 'pose'], t0);
      trimBefore(DATA.odom_trail, ['t', 'xyz'], t0);
      for (const edge of Object.values(DATA.tf || {})) trimBefore(edge, ['t', 'pose'], t0);
      trimBefore(DATA.joint_states, ['t', 'position'], t0);
      trimBefore(DATA.scan, ['t', 'ranges'], t0);
      trimBefore(DATA.camera, ['t', 'frames'], t0);
      const scrub = document.getElementById('scrub');
      scrub.min = String(Math.max(0, t0));
      scrub.max = String(viewer.duration);
      refreshTrails();
      requestRender();
      if (follow.checked) applyTime(viewer.duration);
    }
  };
  socket.onclose = () => { status.textContent += '\nconnection closed'; };
}

function buildScanLate() {
  const count = DATA.scan.count;
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(count * 3), 3));
  overlays.scan = new THREE.Points(geometry, new THREE.PointsMaterial({ color: 0xff3b6b, size: 4, sizeAttenuation: false }));
  overlays.scan.frustumCulled = false;
  (links[DATA.scan.frame] || rosWorld).add(overlays.scan);
  overlays.scanIndex = -2;
}

// ------------------------------------------------------------------ start
function frameView() {
  // Frame the walls and objects (the floor reaches far beyond the room), else the robot's neighbourhood.
  const box = new THREE.Box3();
  const world = links.world_static;
  if (world) for (const child of world.children) if (child !== links.floor) box.expandByObject(child);
  if (box.isEmpty() && baseNode) box.setFromCenterAndSize(baseNode.getWorldPosition(new THREE.Vector3()), new THREE.Vector3(4, 1, 4));
  if (box.isEmpty()) box.setFromCenterAndSize(new THREE.Vector3(), new THREE.Vector3(4, 1, 4));
  const center = box.getCenter(new THREE.Vector3()), size = box.getSize(new THREE.Vector3());
  const span = Math.max(size.x, size.z, 1);
  controls.target.copy(center);
  camera.position.set(center.x - 0.1 * span, center.y + 0.95 * span, center.z + 0.8 * span);
  camera.lookAt(center);
}

async function start() {
  resize();
  document.getElementById('title').textContent = DATA.title || document.title;
  let gltf = null;
  try {
    gltf = await loadGlb();
  } catch (error) {
    viewer.errors.push(String(error));
    note(`the scene (glTF) could not be read: ${error}`);
  }
  if (gltf) {
    indexNodes(gltf);
    scene.add(gltf.scene);
  }
  rosWorld = links[ROOT_NODE];
  if (!rosWorld) {  // no glTF: make the ROS frame ourselves
    rosWorld = new THREE.Group();
    rosWorld.name = ROOT_NODE;
    rosWorld.rotation.x = -Math.PI / 2;
    scene.add(rosWorld);
  }
  // A 1 m grid on the ground for scale (faint over a world's floor).
  const grid = new THREE.GridHelper(20, 20, 0x666666, links.world_static ? 0x9a9a92 : 0x444444);
  grid.position.y = 0.001;
  scene.add(grid);
  const baseName = DATA.base ? DATA.base.frame : DATA.root_link;
  baseNode = links[DATA.root_link] || links[baseName] || null;
  if (!baseNode) {  // no robot description: the base frame as axes
    baseNode = new THREE.Group();
    baseNode.add(new THREE.AxesHelper(0.3));
    rosWorld.add(baseNode);
  }
  if (DATA.base && DATA.root_link && DATA.base.frame !== DATA.root_link) {
    note(`the base pose is of frame ${DATA.base.frame}, the robot's root link is ${DATA.root_link}: placed as if they were one`);
  }
  for (const text of DATA.notes || []) note(text);
  buildOverlays();
  const scrub = document.getElementById('scrub');
  scrub.max = String(viewer.duration);
  applyTime(0);
  frameView();
  if (DATA.live) connectLive();
  viewer.ready = true;
  askFrame();
}

// ------------------------------------------------------------------ for tests and scripts
viewer.seek = (t) => { applyTime(t); render(); return viewer.time; };
function drawnPose(node) {
  // A node as drawn: its world matrix taken back into the ROS fixed frame.
  scene.updateMatrixWorld(true);
  const relative = new THREE.Matrix4().copy(rosWorld.matrixWorld).invert().multiply(node.matrixWorld);
  const position = new THREE.Vector3(), quaternion = new THREE.Quaternion(), scale = new THREE.Vector3();
  relative.decompose(position, quaternion, scale);
  const yaw = Math.atan2(2 * (quaternion.w * quaternion.z + quaternion.x * quaternion.y),
    1 - 2 * (quaternion.y * quaternion.y + quaternion.z * quaternion.z));
  return { t: viewer.time, x: position.x, y: position.y, z: position.z, yaw,
           qx: quaternion.x, qy: quaternion.y, qz: quaternion.z, qw: quaternion.w };
}
viewer.poseAt = (t) => { viewer.seek(t); return drawnPose(baseNode); };
viewer.nodePose = (name, t) => { viewer.seek(t); return links[name] ? drawnPose(links[name]) : null; };
viewer.linkNames = () => Object.keys(links);
viewer.textureOf = (name) => {  // the pattern image of a world surface as three.js decoded it (null: flat colour)
  let found = null;
  if (links[name]) links[name].traverse((object) => {
    const map = object.material && object.material.map;
    if (!found && map && map.image) {
      found = { width: map.image.width, height: map.image.height, wrapS: map.wrapS === THREE.RepeatWrapping,
                wrapT: map.wrapT === THREE.RepeatWrapping };
    }
  });
  return found;
};
viewer.arrowAt = (name, t) => {  // the arrow as drawn, in its parent's frame (ROS coordinates of that link)
  viewer.seek(t);
  const entry = (overlays.arrows || {})[name];
  if (!entry) return null;
  const { arrow } = entry;
  const direction = new THREE.Vector3(0, 1, 0).applyQuaternion(arrow.quaternion);  // ArrowHelper points along +y
  const length = arrow.line.scale.y + arrow.cone.scale.y;
  return { visible: arrow.visible, parent: arrow.parent === links[entry.series.frame] ? entry.series.frame : null,
           origin: arrow.position.toArray(), direction: direction.toArray(), length, vector: entry.vector,
           scale: entry.series.scale };
};
viewer.setArrowShown = (name, shown) => {
  const box = document.querySelector(`input[data-vector="${CSS.escape(name)}"]`);
  if (box && box.checked !== shown) box.click();
  return box ? box.checked : null;
};
viewer.baseTimes = () => (DATA.base ? DATA.base.t.slice() : []);
viewer.visiblePoints = () => (overlays.scan ? overlays.scan.geometry.drawRange.count : 0);
viewer.renderInfo = () => ({ renderer: GL_RENDERER, pixelRatio: renderer.getPixelRatio(), renders: viewer.renders,
                            calls: renderer.info.render.calls, triangles: renderer.info.render.triangles });

start().catch((error) => { viewer.errors.push(String(error)); console.error(error); note(`viewer failed: ${error}`); });
