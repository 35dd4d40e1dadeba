// The page's API client: requests with the token (asked for when the API wants one), and event streams followed
// with the shared parser (sse.js), resumed after the last event seen.
import { $ } from './dom.js';
import * as sse from './sse.js';

function token() {
  return localStorage.getItem('klea.token') || '';
}

function askToken() {
  return new Promise((resolve) => {
    const dialog = $('token-dialog');
    $('token-form').onsubmit = function () {
      localStorage.setItem('klea.token', $('token').value.trim());
      resolve();
    };
    dialog.showModal();
  });
}

async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token()) headers.authorization = 'Bearer ' + token();
    const res = await fetch(path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) {
      await askToken();
      continue;
    }
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error((data.error && data.error.message) || res.statusText);
      err.status = res.status;
      throw err;
    }
    return data;
  }
  throw new Error('not authorised');
}

/** Follows an event stream; reconnects by itself, resuming after the last event seen. */
function follow(path, onEvent, onState, after) {
  let last = after || 0;
  let stopped = false;
  let delay = 500;
  (async function loop() {
    while (!stopped) {
      try {
        const headers = { accept: 'text/event-stream' };
        if (token()) headers.authorization = 'Bearer ' + token();
        if (last) headers['last-event-id'] = String(last);
        const res = await fetch(path, { headers: headers });
        if (res.status === 401) {
          await askToken();
          continue;
        }
        if (!res.ok || !res.body) throw new Error('stream failed: HTTP ' + res.status);
        if (onState) onState('live');
        delay = 500;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        const frames = sse.createFrameParser();
        for (;;) {
          const chunk = await reader.read();
          if (chunk.done) break;
          for (const frame of frames.push(decoder.decode(chunk.value, { stream: true }))) {
            if (frame.id === undefined || !frame.data) continue;
            const id = Number(frame.id);
            if (id <= last) continue;
            last = id;
            try {
              onEvent(JSON.parse(frame.data));
            } catch (e) {
              console.error(e);
            }
          }
        }
      } catch {
        if (onState) onState('reconnecting');
      }
      if (stopped) break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 8000);
    }
  })();
  return {
    stop: function () {
      stopped = true;
    },
  };
}

export { api, follow };
