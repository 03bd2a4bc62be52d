// @ts-check
// The one way the pages talk to the service: its public JSON API under
// /api/v1, nothing else. Errors arrive as problem+json and leave here as
// an ApiError that keeps the problem's `field`, so a form can show the
// words next to the input they are about.

import { current, forget } from './session.js';
import { t } from './i18n.js';
import { noteServerTime } from './time.js';

/** @typedef {import('./types.js').Problem} Problem */

export class ApiError extends Error {
  /**
   * @param {number} status 0 when the service could not be reached
   * @param {Problem} problem
   * @param {number | null} retryAfter seconds, from `Retry-After`
   */
  constructor(status, problem, retryAfter) {
    super(problem.detail || problem.title);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }

  /** The input the problem names (`username`, `pictureUrls[1]`, `[0].model`), if any. */
  get field() {
    return this.problem.field ?? null;
  }

  /** The problem in words for a reader: without the field's name in front. */
  get words() {
    const field = this.field;
    let detail = this.problem.detail || this.problem.title || t('error.generic');
    if (field && detail.startsWith(`${field}: `)) detail = detail.slice(field.length + 2);
    if (this.retryAfter) return t('error.retryAfter', { detail, s: this.retryAfter });
    return detail;
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

/** Sent when the service no longer knows the session (expired, signed out elsewhere). */
export const SIGNED_OUT_EVENT = 'moments:signed-out';

/**
 * @typedef {{
 *   query?: Record<string, string | number | undefined | null>,
 *   json?: unknown,
 *   text?: string,
 *   contentType?: string,
 *   headers?: Record<string, string>,
 * }} CallOptions
 */

/**
 * @param {string} method
 * @param {string} path under /api/v1
 * @param {CallOptions} [options]
 * @returns {Promise<any>} the answer's JSON, or null for 204
 */
export async function call(method, path, options = {}) {
  const url = new URL(`/api/v1${path}`, location.origin);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
  }
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json, application/problem+json', ...options.headers };
  const session = current();
  if (session) headers.authorization = `Bearer ${session.token}`;
  /** @type {string | undefined} */
  let body;
  if (options.text !== undefined) {
    body = options.text;
    headers['content-type'] = options.contentType ?? 'text/plain';
  } else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = 'application/json';
  }
  /** @type {Response} */
  let res;
  try {
    // A request that hangs ends as a network error, so no button or list
    // stays busy for ever.
    res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch {
    throw networkError();
  }
  if (res.status === 204) return null;
  const text = await res.text();
  /** @type {any} */
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) throw refusal(path, res.status, res.statusText, data, res.headers.get('retry-after'));
  if (data && typeof data === 'object' && typeof data.serverTime === 'number') noteServerTime(data.serverTime);
  return data;
}

/** The error of a request that got no answer (offline, timed out). */
function networkError() {
  return new ApiError(0, { type: 'about:blank', title: t('error.network'), status: 0, detail: t('error.network'), code: 'network' }, null);
}

/**
 * The error an answer that is not 2xx stands for; a 401 also ends the
 * session here, whichever of the two helpers below got it.
 * @param {string} path under /api/v1
 * @param {number} status
 * @param {string} statusText
 * @param {any} data the answer's JSON, if it was JSON
 * @param {string | null} retryAfterHeader
 */
function refusal(path, status, statusText, data, retryAfterHeader) {
  const problem =
    data && typeof data === 'object' && typeof data.status === 'number'
      ? /** @type {Problem} */ (data)
      : { type: 'about:blank', title: statusText, status, detail: statusText || t('error.generic'), code: `http_${status}` };
  const retryAfter = Number(retryAfterHeader);
  // The service no longer knows this browser's session (expired,
  // signed out elsewhere), or there was none: sign in again. A wrong
  // password at sign-in is a 401 too, shown by its form instead, and so
  // is one in the appeal of an account that cannot sign in (/appeals).
  if (status === 401 && !path.startsWith('/sessions') && path !== '/appeals') {
    forget();
    window.dispatchEvent(new Event(SIGNED_OUT_EVENT));
  }
  return new ApiError(status, problem, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null);
}

/** An upload of 16 MiB on a slow phone line takes minutes, not hours. */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/**
 * Uploads a picture (`POST /media`, multipart: `file`, and `description`
 * when there is one) and tells how far its bytes have gone: fetch cannot,
 * so this one call is an XMLHttpRequest, with the same session, errors
 * and sign-out as `call`. `abort` ends it; `done` then rejects with
 * status 0.
 * @param {File} file
 * @param {{ description?: string, onProgress?: (fraction: number) => void }} [options] fraction: 0 to 1
 * @returns {{ done: Promise<import('./types.js').MediaView>, abort: () => void }}
 */
export function uploadPicture(file, options = {}) {
  const path = '/media';
  const xhr = new XMLHttpRequest();
  const done = new Promise((resolve, reject) => {
    xhr.open('POST', new URL(`/api/v1${path}`, location.origin));
    xhr.timeout = UPLOAD_TIMEOUT_MS;
    xhr.setRequestHeader('accept', 'application/json, application/problem+json');
    const session = current();
    if (session) xhr.setRequestHeader('authorization', `Bearer ${session.token}`);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) options.onProgress?.(e.loaded / e.total);
    };
    xhr.onerror = xhr.onabort = xhr.ontimeout = () => reject(networkError());
    xhr.onload = () => {
      /** @type {any} */
      let data = null;
      try {
        data = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        data = null;
      }
      if (xhr.status === 201 && data && typeof data === 'object') resolve(data);
      else reject(refusal(path, xhr.status, xhr.statusText, data, xhr.getResponseHeader('retry-after')));
    };
    const form = new FormData();
    form.append('file', file, file.name);
    if (options.description) form.append('description', options.description);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}

/**
 * Sends a form's creates with an `Idempotency-Key` per request body. The
 * key is kept while the outcome is unknown (no answer, 409 "still
 * running", 429, 5xx), so sending the same thing again makes nothing
 * twice; it is dropped once an answer settled it, and a changed body gets
 * a key of its own (the service refuses a key reused for another body).
 * @returns {<T>(body: unknown, send: (key: string, body: unknown) => Promise<T>) => Promise<T>}
 */
export function idempotentCreates() {
  /** @type {{ body: string, key: string } | null} */
  let pending = null;
  return async (body, send) => {
    const text = JSON.stringify(body);
    if (!pending || pending.body !== text) pending = { body: text, key: crypto.randomUUID() };
    const attempt = pending;
    try {
      const answer = await send(attempt.key, body);
      if (pending === attempt) pending = null;
      return answer;
    } catch (error) {
      const unsettled = error instanceof ApiError && (error.status === 0 || error.status === 409 || error.status === 429 || error.status >= 500);
      if (!unsettled && pending === attempt) pending = null;
      throw error;
    }
  };
}
