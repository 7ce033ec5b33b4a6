// The share page (docs/shares.md): a chat with one receptor through its share link. The
// conversation stays on one trace across reloads, and an answer cut by a reload resumes from
// its stream cursor: tokens are kept per turn and attempt, a `reset` drops the turn's text,
// and a token whose index was already seen is skipped, so nothing is lost or doubled.
const $ = (id) => document.getElementById(id);
const parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent); // share, workspace, slug
const [ws, slug] = [parts[1], parts[2]];
const token = new URLSearchParams(location.search).get('t') || '';
const storeKey = `cortex-share:${ws}/${slug}`;
const state = JSON.parse(localStorage.getItem(storeKey) || '{}');
const save = () => localStorage.setItem(storeKey, JSON.stringify(state));
const withToken = (path) => `${path}${path.includes('?') ? '&' : '?'}t=${encodeURIComponent(token)}`;
const enc = encodeURIComponent;
let pendingAssets = [];
let source = null;

function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = !text;
}
function lock(locked) {
  $('send').disabled = locked;
  $('message').disabled = locked;
}
function bubble(role, text, streaming = false) {
  const li = document.createElement('li');
  li.className = `${role}${streaming ? ' streaming' : ''}`;
  li.textContent = text;
  $('log').append(li);
  li.scrollIntoView({ block: 'end' });
  return li;
}
async function refused(res) {
  if (res.status === 401) return 'This link no longer works: it was revoked, replaced by a new one, or has expired.';
  if (res.status === 402) return 'This link has used its budget. Ask its owner for a new one.';
  if (res.status === 429) return 'Too many messages at once: wait a moment and try again.';
  const body = await res.json().catch(() => ({}));
  return body.message || `Something went wrong (${res.status}).`;
}

const jobText = (job) =>
  Object.keys(job.turns)
    .map(Number)
    .sort((a, b) => a - b)
    .map((k) => job.turns[k])
    .join('');

function follow(job, li) {
  const url = withToken(
    `/v1/public/jobs/${enc(job.id)}/stream?receptor_id=${enc(state.receptorId)}${job.cursor ? `&after=${enc(job.cursor)}` : ''}`,
  );
  source = new EventSource(url);
  source.onmessage = (e) => {
    const d = JSON.parse(e.data);
    if (e.lastEventId) job.cursor = e.lastEventId;
    if (d.type === 'reset') {
      job.turns[d.turn] = '';
      job.attempt[d.turn] = d.attempt;
      job.next[d.turn] = 0;
    }
    if (d.type === 'token') {
      const attempt = job.attempt[d.turn] ?? d.attempt;
      if (d.attempt < attempt) return; // a superseded attempt
      if (d.attempt > attempt) {
        job.turns[d.turn] = '';
        job.next[d.turn] = 0;
      }
      job.attempt[d.turn] = d.attempt;
      if (d.index < (job.next[d.turn] ?? 0)) return; // already shown (a replay after a reconnect)
      job.turns[d.turn] = (job.turns[d.turn] || '') + d.text;
      job.next[d.turn] = d.index + 1;
      li.textContent = jobText(job);
    }
    if (d.type === 'complete' || d.type === 'error') {
      source.close();
      li.classList.remove('streaming');
      if (d.type === 'complete')
        li.textContent = d.result && typeof d.result.text === 'string' ? d.result.text : jobText(job);
      else
        li.textContent = `${jobText(job)}${jobText(job) ? '\n\n' : ''}(The answer could not be finished: ${d.message || d.error}.)`;
      delete state.job;
      lock(false);
    }
    save();
    li.scrollIntoView({ block: 'end' });
  };
  source.onerror = () => {
    // Reconnect from our own cursor (the browser's automatic retry would resend the first one).
    if (source.readyState === EventSource.CLOSED || !state.job) return;
    source.close();
    setTimeout(() => {
      if (state.job === job) follow(job, li);
    }, 1000);
  };
}

async function start() {
  if (!token) {
    notice('This page needs the link you were given (it carries a ?t= token).');
    lock(true);
    return;
  }
  const res = await fetch(withToken(`/v1/public/receptors/${enc(ws)}/${enc(slug)}`));
  if (!res.ok) {
    notice(await refused(res));
    lock(true);
    return;
  }
  const info = await res.json();
  state.receptorId = info.receptor.id;
  const c = info.customization || {};
  if (c.title) {
    $('title').textContent = c.title;
    document.title = c.title;
  }
  const root = document.documentElement.style;
  if (c.colors?.primary) root.setProperty('--primary', c.colors.primary);
  if (c.colors?.background) root.setProperty('--bg', c.colors.background);
  if (c.colors?.text) root.setProperty('--text', c.colors.text);
  if (c.logo_url) {
    $('logo').src = c.logo_url;
    $('logo').hidden = false;
  }
  $('files').hidden = !info.allow_files;
  if (!info.receptor.is_active) notice('This assistant is switched off for now.');
  let shown = 0;
  if (state.traceId) {
    const m = await fetch(withToken(`/v1/traces/${enc(state.traceId)}/messages?receptor_id=${enc(state.receptorId)}`));
    // A conversation this link cannot reach (not one it started): the next message starts a new one.
    if (m.status === 404) delete state.traceId;
    if (m.ok) {
      for (const e of (await m.json()).engrams) {
        if (state.job && e.source_type === 'neuron' && e.metadata?.job_id === state.job.id) delete state.job; // it finished while we were away
        bubble(e.source_type === 'neuron' ? 'agent' : 'user', e.content.content);
        shown++;
      }
    }
  }
  if (!shown && c.greeting) bubble('agent', c.greeting);
  if (state.job) {
    lock(true);
    follow(state.job, bubble('agent', jobText(state.job), true));
  }
  save();
}

async function upload(file) {
  const form = new FormData();
  form.append('file', file);
  const res = await fetch(withToken(`/v1/public/receptors/by-id/${enc(state.receptorId)}/assets`), {
    method: 'POST',
    body: form,
  });
  if (!res.ok) throw new Error(await refused(res));
  return (await res.json()).asset.id;
}

$('form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const message = $('message').value.trim();
  if (!message) return;
  lock(true);
  notice('');
  try {
    const file = $('file').files?.[0];
    if (file) {
      pendingAssets = [await upload(file)];
      $('file').value = '';
    }
    const res = await fetch(withToken(`/v1/public/receptors/${enc(ws)}/${enc(slug)}/execute`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message,
        stream: true,
        ...(state.traceId ? { trace_id: state.traceId } : {}),
        ...(pendingAssets.length ? { asset_ids: pendingAssets } : {}),
      }),
    });
    if (!res.ok) {
      notice(await refused(res));
      lock(res.status === 401);
      return;
    }
    const ref = await res.json();
    pendingAssets = [];
    $('message').value = '';
    state.traceId = ref.trace_id;
    state.job = { id: ref.job_id, cursor: null, turns: {}, attempt: {}, next: {} };
    save();
    bubble('user', message);
    follow(state.job, bubble('agent', '', true));
  } catch (e) {
    notice(e.message || String(e));
    lock(false);
  }
});
$('message').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    $('form').requestSubmit();
  }
});
start();
