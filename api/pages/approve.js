// The approval page (docs/shares.md): what is asked, the options as buttons, an optional
// comment, and the outcome. Answering goes through the same Update as every other answer route.
const $ = (id) => document.getElementById(id);
const token = decodeURIComponent(location.pathname.split('/').filter(Boolean)[1] || '');
const api = `/v1/public/interventions/${encodeURIComponent(token)}`;
const OUTCOME = {
  approved: 'Approved. The run continues.',
  rejected: 'Rejected. The run takes its rejection path.',
  answered: 'Answered. The run continues.',
  expired: 'This request has expired: it can no longer be answered.',
  cancelled: 'This request was cancelled: the run was stopped.',
};

function show(status, extra = '') {
  $('ask').hidden = true;
  $('result').hidden = false;
  $('result').textContent = `${OUTCOME[status] || `This request is ${status}.`}${extra}`;
}
function row(term, value) {
  if (value === null || value === undefined || value === '') return;
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = value;
  $('context').append(dt, dd);
}

async function start() {
  const res = await fetch(api);
  if (!res.ok) {
    $('notice').hidden = false;
    $('notice').textContent =
      res.status === 404 ? 'This approval link is not valid.' : `Could not load the request (${res.status}).`;
    return;
  }
  const { intervention: i } = await res.json();
  $('title').textContent = i.title || 'Approval requested';
  document.title = i.title || 'Approval';
  if (i.status !== 'pending') {
    show(i.status, i.action ? ` (answer: ${i.action})` : '');
    return;
  }
  $('prompt').textContent = i.prompt || '';
  const KIND = { pause: 'Checkpoint: the run waits to be resumed', tool_call: 'Tool call: it runs only if approved' };
  row('Kind', KIND[i.kind] || 'Approval');
  if (i.kind === 'tool_call' && i.payload) {
    row('Tool', i.payload.tool);
    row('Arguments', JSON.stringify(i.payload.arguments, null, 2));
    // Edit: the tool runs with the arguments as changed here (a redacted value left as is keeps the original).
    const edit = document.createElement('textarea');
    edit.id = 'arguments';
    edit.rows = 6;
    edit.value = JSON.stringify(i.payload.arguments, null, 2);
    edit.setAttribute('aria-label', 'Arguments to run with (for Edit)');
    $('options').before(edit);
  }
  row('Requested', i.created_at ? new Date(i.created_at).toLocaleString() : null);
  row('Expires', i.expires_at ? new Date(i.expires_at).toLocaleString() : 'No expiry');
  for (const [k, v] of Object.entries(i.context || {})) row(k, typeof v === 'string' ? v : JSON.stringify(v, null, 2));
  for (const [n, option] of i.options.entries()) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = option[0].toUpperCase() + option.slice(1);
    if (n > 0) b.className = 'secondary';
    b.addEventListener('click', () => answer(option));
    $('options').append(b);
  }
  $('ask').hidden = false;
}

async function answer(action) {
  for (const b of $('options').querySelectorAll('button')) b.disabled = true;
  const comment = $('comment').value.trim();
  let args;
  if (action === 'edit') {
    try {
      args = JSON.parse($('arguments').value);
    } catch {
      $('notice').hidden = false;
      $('notice').textContent = 'The arguments are not valid JSON.';
      for (const b of $('options').querySelectorAll('button')) b.disabled = false;
      return;
    }
  }
  const res = await fetch(`${api}/respond`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action, ...(comment ? { comment } : {}), ...(args ? { arguments: args } : {}) }),
  });
  const body = await res.json().catch(() => ({}));
  if (res.ok) {
    show(body.intervention.status);
    return;
  }
  // Someone else answered first, or it expired meanwhile: say what the request is now.
  const now = await fetch(api)
    .then((r) => (r.ok ? r.json() : null))
    .catch(() => null);
  if (now && now.intervention.status !== 'pending') {
    show(now.intervention.status, ' (someone answered first, or it ended)');
    return;
  }
  $('notice').hidden = false;
  $('notice').textContent = body.message || `The answer was not accepted (${res.status}).`;
  for (const b of $('options').querySelectorAll('button')) b.disabled = false;
}
start();
