// Cortex Snake page: plain browser JS, no build step. The page holds the game state and posts it with
// every call; the service applies the rules and asks the platform's agent. It never sees the platform key.
'use strict';

const TICK_MS = 250;
const CELL_PX = 28;
const COLORS = { bg: '#0b0f14', grid: '#18202a', body: '#2ea043', head: '#7ee787', dead: '#6e7681', fruit: '#f85149' };
const END_TEXT = {
  wall: 'the snake hit the wall',
  self: 'the snake ran into itself',
  full: 'the snake fills the board. You win!',
};

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const board = /** @type {HTMLCanvasElement} */ ($('board'));
const ctx = /** @type {CanvasRenderingContext2D} */ (board.getContext('2d'));
const startBtn = /** @type {HTMLButtonElement} */ ($('start'));
const resetBtn = /** @type {HTMLButtonElement} */ ($('reset'));

let state = null;
let running = false;
let paused = false; // last tick came back paused (tab hidden)
let timer = null;

// Every call runs one after another and applies its result before the next starts, so a fruit click made
// while a tick waits for the agent is applied to the state that tick returns, not lost.
let queue = Promise.resolve();
function serial(fn) {
  const p = queue.then(fn);
  queue = p.catch(() => {});
  return p;
}

class ApiError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

async function api(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError('Cannot reach the snake service. Is it running?', 'NETWORK');
  }
  let json = null;
  try {
    json = await res.json();
  } catch {
    // not JSON
  }
  if (!res.ok)
    throw new ApiError(
      json?.message ?? `The snake service answered HTTP ${res.status}`,
      json?.code ?? `HTTP_${res.status}`,
    );
  if (json === null) throw new ApiError('The snake service sent an unreadable reply', 'BAD_REPLY');
  return json;
}

function message(text, kind = '') {
  const el = $('message');
  el.textContent = text;
  el.className = `message ${kind}`;
}

function showError(err) {
  const code = err instanceof ApiError && err.code !== 'NETWORK' ? ` (${err.code})` : '';
  message(`${err.message}${code}`, 'error');
}

function draw() {
  if (!state) return;
  const w = state.width * CELL_PX;
  const h = state.height * CELL_PX;
  if (board.width !== w || board.height !== h) {
    board.width = w;
    board.height = h;
  }
  ctx.fillStyle = COLORS.bg;
  ctx.fillRect(0, 0, w, h);
  ctx.strokeStyle = COLORS.grid;
  ctx.lineWidth = 1;
  for (let i = 1; i < state.width; i++) line(i * CELL_PX + 0.5, 0, i * CELL_PX + 0.5, h);
  for (let j = 1; j < state.height; j++) line(0, j * CELL_PX + 0.5, w, j * CELL_PX + 0.5);
  if (state.fruit) {
    ctx.fillStyle = COLORS.fruit;
    ctx.beginPath();
    ctx.arc((state.fruit.x + 0.5) * CELL_PX, (state.fruit.y + 0.5) * CELL_PX, CELL_PX * 0.36, 0, Math.PI * 2);
    ctx.fill();
  }
  const ended = state.status === 'ended';
  state.snake.forEach((c, i) => {
    ctx.fillStyle = ended ? COLORS.dead : i === 0 ? COLORS.head : COLORS.body;
    ctx.fillRect(c.x * CELL_PX + 2, c.y * CELL_PX + 2, CELL_PX - 4, CELL_PX - 4);
  });
  // Machine-readable mirrors of what is drawn, for tests and assistive tech.
  board.dataset.head = `${state.snake[0].x},${state.snake[0].y}`;
  board.dataset.fruit = state.fruit ? `${state.fruit.x},${state.fruit.y}` : '';
}

function line(x1, y1, x2, y2) {
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x2, y2);
  ctx.stroke();
}

function render() {
  draw();
  if (!state) return;
  $('score').textContent = String(state.score);
  $('tick').textContent = String(state.tick);
  $('length').textContent = String(state.snake.length);
  $('fruit').textContent = state.fruit ? `(${state.fruit.x}, ${state.fruit.y})` : 'none';
  $('status').textContent =
    state.status === 'ended'
      ? `ended: ${state.ended_reason}`
      : running
        ? paused
          ? 'paused (tab hidden)'
          : 'running'
        : 'stopped';
  startBtn.textContent = running ? 'Pause' : 'Start';
  startBtn.disabled = state.status === 'ended';
}

function showDecision(d) {
  const el = $('decision');
  el.textContent = `${d.source === 'agent' ? 'agent' : 'fallback'} → ${d.heading}`;
  el.className = `decision-text ${d.source}`;
  const parts = [`${d.latency_ms} ms`];
  if (d.raw !== undefined) parts.push(`reply: "${d.raw}"`);
  if (d.reason) parts.push(d.reason);
  $('decision-detail').textContent = parts.join(' · ');
}

function setRunning(on) {
  running = on;
  clearTimeout(timer);
  timer = null;
  if (on) timer = setTimeout(loop, 0);
  render();
}

async function loop() {
  timer = null;
  if (!running || !state) return;
  try {
    const r = await serial(async () => {
      const res = await api('POST', '/api/tick', { state, visible: document.visibilityState === 'visible' });
      state = res.state;
      return res;
    });
    paused = r.outcome === 'paused';
    if (r.outcome === 'paused') {
      message('Paused while the tab is hidden: no agent calls are made.', 'warn');
    } else if (r.outcome === 'moved') {
      showDecision(r.decision);
      if (r.decision.source === 'fallback') message(`Agent problem: ${r.decision.reason}`, 'warn');
      else message('');
    } else {
      if (r.decision) showDecision(r.decision);
      running = false;
      message(`Game over: ${END_TEXT[r.reason] ?? r.reason}. Press “New game”.`, r.reason === 'full' ? '' : 'error');
    }
  } catch (err) {
    running = false;
    showError(err);
  }
  render();
  if (running) timer = setTimeout(loop, TICK_MS);
}

board.addEventListener('click', (ev) => {
  if (!state) return;
  const rect = board.getBoundingClientRect();
  const x = Math.floor(((ev.clientX - rect.left) / rect.width) * state.width);
  const y = Math.floor(((ev.clientY - rect.top) / rect.height) * state.height);
  serial(async () => {
    state = await api('POST', '/api/fruit', { state, x, y });
    render();
  }).then(
    () => message(''),
    (err) => showError(err),
  );
});

startBtn.addEventListener('click', () => setRunning(!running));

resetBtn.addEventListener('click', () => newGame());

document.addEventListener('visibilitychange', () => {
  // The loop keeps going; the service answers 'paused' while hidden. Resume promptly on return.
  if (document.visibilityState === 'visible' && running && timer) {
    clearTimeout(timer);
    timer = setTimeout(loop, 0);
  }
});

function newGame() {
  setRunning(false);
  serial(async () => {
    state = await api('POST', '/api/reset');
    paused = false;
    $('decision').textContent = 'none yet';
    $('decision').className = 'decision-text';
    $('decision-detail').textContent = '';
    render();
  }).then(
    () => message('Click a cell to place the fruit, then press Start.'),
    (err) => showError(err),
  );
}

/** Says who decides each tick: the decision pathway's rules, a model through it, or the neuron. */
function deciderText(d) {
  if (!d) return 'Decides: nobody (no platform key); every tick uses the fallback heading.';
  if (d.target === 'neuron') return `Decides: the neuron ${d.name} (a model).`;
  const name = d.name ? `pathway ${d.name}` : 'the decision pathway';
  if (d.uses === 'rules')
    return `Decides: ${name}, offline rules (transform and if nodes) run on the platform every tick.`;
  if (d.uses === 'model') return `Decides: ${name}, through its neuron node (a model).`;
  return `Decides: ${name}.`;
}

async function init() {
  try {
    const health = await api('GET', '/api/health');
    $('decider').textContent = deciderText(health.decider);
    newGame();
    if (!health.agent_configured) {
      await queue;
      message('The service has no platform key: every tick will use the fallback heading.', 'warn');
    }
  } catch (err) {
    showError(err);
  }
}

void init();
