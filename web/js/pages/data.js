// @ts-check
// My data: an archive of everything I made, asked for here and written in
// the background; its progress shows while it runs, then a download that
// the browser itself fetches (and resumes), by a link that needs no token.

import { ApiError, call } from '../api.js';
import { fill, h } from '../dom.js';
import { busy, formAlert } from '../forms.js';
import { lang, t } from '../i18n.js';
import { dateText, serverNow } from '../time.js';

/** @typedef {import('../types.js').DataExport} DataExport */

/** How often a running export is asked about. */
const POLL_MS = 1000;

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('data.title'));
  const list = h('ul', { class: 'list exports', 'aria-label': t('data.exports') });
  const alert = formAlert();
  let timer = 0;
  let stopped = false;
  const start = h('button', {
    type: 'button',
    class: 'button wide',
    onclick: () => busy(start, async () => {
      alert.hidden = true;
      try {
        await call('POST', '/me/exports', { json: {} });
      } catch (error) {
        alert.textContent = error instanceof ApiError ? error.words : t('error.generic');
        alert.hidden = false;
      }
      await refresh();
    }),
  }, t('data.start'));

  async function refresh() {
    window.clearTimeout(timer);
    /** @type {import('../types.js').Page<DataExport>} */
    let page;
    try {
      page = await call('GET', '/me/exports');
    } catch {
      if (!stopped) timer = window.setTimeout(refresh, POLL_MS * 5);
      return;
    }
    if (stopped) return;
    fill(list, page.items.length ? page.items.map(exportItem) : h('li', { class: 'muted empty' }, t('data.none')));
    const running = page.items.some((e) => e.state === 'queued' || e.state === 'running');
    start.disabled = running;
    if (running) timer = window.setTimeout(refresh, POLL_MS);
  }

  main.append(
    h('section', { class: 'card', 'aria-labelledby': 'data-export' },
      h('h2', { class: 'section-title', id: 'data-export' }, t('data.export')),
      h('p', { class: 'muted' }, t('data.exportWhat')),
      alert,
      start,
      list),
  );
  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}

/** @param {number} bytes */
function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

/** @param {DataExport} e */
function exportItem(e) {
  const when = dateText(e.createdAt, serverNow(), lang());
  const item = h('li', { class: 'export', 'data-export-id': String(e.id) },
    h('p', { class: 'export-when' }, t('data.askedAt', { when })));
  if (e.state === 'queued' || e.state === 'running') {
    const { done, known } = e.progress;
    item.append(
      h('p', { class: 'export-state', role: 'status' },
        e.state === 'queued' ? t('data.queued') : t('data.running', { done, known })),
      h('progress', {
        max: String(Math.max(known, 1)),
        value: String(done),
        'aria-label': t('data.progress'),
      }),
    );
  } else if (e.state === 'failed') {
    item.append(h('p', { class: 'export-state form-error' }, t('data.failed', { error: e.error ?? '' })));
  } else {
    const download = h('button', {
      type: 'button',
      class: 'button-quiet',
      onclick: () => busy(download, async () => {
        // The browser's own download: it shows progress, and resumes a
        // dropped one with a range of the same link.
        const link = await call('POST', `/me/exports/${e.id}/link`, { json: {} });
        const a = h('a', { href: link.url, download: '' });
        document.body.append(a);
        a.click();
        a.remove();
      }),
    }, t('data.download', { size: sizeText(e.size ?? 0) }));
    const until = e.expiresAt ? dateText(e.expiresAt, serverNow(), lang()) : '';
    item.append(
      h('p', { class: 'export-state' }, t('data.ready', { records: e.progress.done, until })),
      download,
    );
  }
  return item;
}
