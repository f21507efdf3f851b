/* The server's API: where each thing lives, a JSON fetch with the CSRF token, an upload with
 * progress. Every call answers {ok, status, data}; data is null when the body is not JSON. */

export const paths = {
  pipeline: (id) => `/api/pipelines/${id}`,
  runs: (pipelineId) => `/api/pipelines/${pipelineId}/runs`,
  run: (id) => `/api/runs/${id}`,
  cancel: (runId) => `/api/runs/${runId}/cancel`,
  node: (runId, nodeId) => `/api/runs/${runId}/nodes/${encodeURIComponent(nodeId)}`,
  visualize: (runId, nodeId) => `/runs/${runId}/nodes/${encodeURIComponent(nodeId)}/visualize`,
  datasets: '/api/datasets',
  socket: (loc, runId, after) => `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}/ws/runs/${runId}/?after=${after}`,
};

/** @type {string | null} */
let token = null;
/** The CSRF token Django put in the page (the body's hx-headers, which htmx sends too).
 * @returns {string} */
export function csrfToken() {
  if (token === null) {
    const headers = /** @type {string} */ (document.body.getAttribute('hx-headers')); // every page has them
    token = /** @type {string} */ (JSON.parse(headers)['X-CSRFToken']);
  }
  return token;
}

/** @returns {Promise<{ok: boolean, status: number, data: any}>} data: the JSON answer, null when there is none */
export async function api(method, url, body) {
  const opts = { method, headers: { 'X-CSRFToken': csrfToken(), Accept: 'application/json' } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(url, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  return { ok: r.ok, status: r.status, data };
}

/** The error the server gave, or `fallback`. */
export const errorOf = (answer, fallback) => (answer.data && answer.data.error) || fallback;

/** POST a form with XMLHttpRequest, for its upload progress events: onProgress(percent). */
export function upload(url, form, onProgress) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('X-CSRFToken', csrfToken());
    xhr.upload.onprogress = (p) => { if (p.lengthComputable) onProgress(Math.round((100 * p.loaded) / p.total)); };
    xhr.onloadend = () => {
      let data = {};
      try { data = JSON.parse(xhr.responseText); } catch (err) { data = {}; }
      resolve({ ok: xhr.status >= 200 && xhr.status < 300, status: xhr.status, data });
    };
    xhr.send(form);
  });
}
