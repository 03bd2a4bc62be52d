// @ts-check
// My data: an archive of everything I made, asked for here and written in
// the background; its progress shows while it runs, then a download that
// the browser itself fetches (and resumes), by a link that needs no token.
// And importing a list of people (mine from an export, or Mastodon's): a
// preview of every change and every row it cannot use, then the import of
// exactly that preview, followed while it runs.

import { ApiError, call } from '../api.js';
import { fill, h } from '../dom.js';
import { busy, clearErrors, field, formAlert, invalid, selectField, showError } from '../forms.js';
import { lang, t } from '../i18n.js';
import { dateText, serverNow } from '../time.js';

/** @typedef {import('../types.js').DataExport} DataExport */
/** @typedef {import('../types.js').DataImport} DataImport */
/** @typedef {import('../types.js').ImportPreview} ImportPreview */

/**
 * The words of a key made from a value the service sends (a list's kind,
 * a row's problem): every value it documents has words in both languages.
 * @param {string} name
 */
const key = (name) => /** @type {import('../i18n.js').Key} */ (name);

/** The most CSV an import takes (the service's limit). */
const MAX_CSV_BYTES = 1024 * 1024;

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
  const imports = importSection();
  main.append(imports.section);
  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
    imports.stop();
  };
}

/** The import form, its preview, and the imports made so far. */
function importSection() {
  /** @type {[string, string][]} */
  const kinds = ['following', 'blocks', 'mutes', 'hidden'].map((k) => [k, t(key(`data.kind.${k}`))]);
  const kind = selectField({ label: t('data.kind'), name: 'kind', options: kinds, value: 'following' });
  /** @type {[string, string][]} */
  const modes = ['merge', 'overwrite'].map((m) => [m, t(key(`data.mode.${m}`))]);
  const mode = selectField({ label: t('data.mode'), name: 'mode', options: modes, value: 'merge' });
  const file = field({ label: t('data.file'), name: 'file', type: 'file' });
  file.input.setAttribute('accept', '.csv,text/csv,text/plain');
  const csv = field({ label: t('data.csv'), name: 'csv', rows: 5, hint: t('data.csvHint') });
  const previewButton = h('button', { type: 'submit', class: 'button' }, t('data.preview'));
  const previewBox = h('div', { class: 'import-preview', hidden: true });
  const form = h('form', { class: 'form import-form', novalidate: true },
    formAlert(), kind.wrap, mode.wrap, file.wrap, csv.wrap, previewButton);
  const list = h('ul', { class: 'list imports', 'aria-label': t('data.imports') });
  let timer = 0;
  let stopped = false;

  // A preview answers for the form as it was: any change makes it stale.
  const forget = () => {
    previewBox.hidden = true;
    previewBox.replaceChildren();
  };
  for (const input of [kind.input, mode.input, csv.input]) input.addEventListener('input', forget);
  file.input.addEventListener('change', async () => {
    const chosen = /** @type {HTMLInputElement} */ (file.input).files?.[0];
    if (!chosen) return;
    if (chosen.size > MAX_CSV_BYTES) {
      showError(form, invalid('file', t('data.fileTooLarge')));
      return;
    }
    csv.input.value = await chosen.text();
    forget();
  });

  const body = () => ({ kind: kind.input.value, mode: mode.input.value, csv: csv.input.value });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void busy(previewButton, async () => {
      forget();
      if (!csv.input.value.trim()) {
        showError(form, invalid('csv', t('data.csvRequired')));
        return;
      }
      try {
        /** @type {ImportPreview} */
        const preview = await call('POST', '/me/imports/preview', { json: body() });
        clearErrors(form);
        showPreview(preview);
      } catch (error) {
        showError(form, error);
      }
    });
  });

  /** @param {ImportPreview} preview */
  function showPreview(preview) {
    const alert = formAlert();
    const changes = preview.add.length + preview.remove.length;
    const apply = h('button', {
      type: 'button',
      class: 'button wide',
      disabled: changes === 0,
      onclick: () => busy(apply, async () => {
        alert.hidden = true;
        try {
          await call('POST', '/me/imports', { json: { ...body(), planId: preview.planId } });
          forget();
          csv.input.value = '';
          /** @type {HTMLInputElement} */ (file.input).value = '';
          await refresh();
        } catch (error) {
          // The plan changed since this preview (or another import runs):
          // a new preview shows which, and what an import would do now.
          if (error instanceof ApiError && error.status === 409) {
            /** @type {ImportPreview | null} */
            const now = await call('POST', '/me/imports/preview', { json: body() }).catch(() => null);
            if (now && now.planId !== preview.planId) {
              showPreview(now);
              const stale = previewBox.querySelector('.form-error');
              if (stale instanceof HTMLElement) {
                stale.textContent = t('data.stale');
                stale.hidden = false;
              }
              return;
            }
          }
          alert.textContent = error instanceof ApiError ? error.words : t('error.generic');
          alert.hidden = false;
        }
      }),
    }, changes === 0 ? t('data.nothingToDo') : t('data.apply'));
    /** @param {string} words @param {import('../types.js').Named[]} people @param {string} cls */
    const people = (words, people, cls) => people.length
      ? h('details', { class: `import-people ${cls}` },
        h('summary', {}, words),
        h('ul', { class: 'names' }, people.map((p) => h('li', {}, p.username))))
      : null;
    fill(previewBox, [
      h('h3', { class: 'section-title' }, t('data.previewTitle')),
      h('ul', { class: 'import-summary', role: 'status' },
        // Coloured only where there is something to see.
        h('li', { class: preview.add.length ? 'adds' : 'muted' }, t('data.willAdd', { n: preview.add.length })),
        h('li', { class: preview.remove.length ? 'removes' : 'muted' }, t('data.willRemove', { n: preview.remove.length })),
        h('li', { class: 'muted' }, t('data.unchanged', { n: preview.unchanged })),
        h('li', { class: preview.rejected.length ? 'rejects' : 'muted' }, t('data.rejected', { n: preview.rejected.length }))),
      people(t('data.willAdd', { n: preview.add.length }), preview.add, 'adds'),
      people(t('data.willRemove', { n: preview.remove.length }), preview.remove, 'removes'),
      preview.rejected.length
        ? h('table', { class: 'rejected-rows' },
          h('caption', {}, t('data.rejectedTable')),
          h('thead', {}, h('tr', {},
            h('th', { scope: 'col' }, t('data.line')),
            h('th', { scope: 'col' }, t('data.value')),
            h('th', { scope: 'col' }, t('data.why')))),
          h('tbody', {}, preview.rejected.map((r) => h('tr', {},
            h('td', {}, String(r.line)),
            h('td', {}, r.value),
            h('td', { title: r.reason }, t(key(`data.problem.${r.problem}`)))))))
        : null,
      alert,
      apply,
    ]);
    previewBox.hidden = false;
  }

  async function refresh() {
    window.clearTimeout(timer);
    /** @type {import('../types.js').Page<DataImport>} */
    let page;
    try {
      page = await call('GET', '/me/imports');
    } catch {
      if (!stopped) timer = window.setTimeout(refresh, POLL_MS * 5);
      return;
    }
    if (stopped) return;
    fill(list, page.items.map(importItem));
    if (page.items.some((i) => i.state === 'queued' || i.state === 'running')) {
      timer = window.setTimeout(refresh, POLL_MS);
    }
  }

  const section = h('section', { class: 'card', 'aria-labelledby': 'data-import' },
    h('h2', { class: 'section-title', id: 'data-import' }, t('data.import')),
    h('p', { class: 'muted' }, t('data.importWhat')),
    form,
    previewBox,
    list);
  void refresh();
  return {
    section,
    stop: () => {
      stopped = true;
      window.clearTimeout(timer);
    },
  };
}

/** @param {DataImport} i */
function importItem(i) {
  const when = dateText(i.createdAt, serverNow(), lang());
  const item = h('li', { class: 'import', 'data-import-id': String(i.id), 'data-state': i.state },
    h('p', { class: 'import-what' },
      t('data.importLine', { kind: t(key(`data.kind.${i.kind}`)), mode: t(key(`data.mode.${i.mode}`)).split(/[：:]/)[0] }),
      ' · ',
      t('data.askedAt', { when })));
  const { done, total } = i.progress;
  if (i.state === 'queued' || i.state === 'running') {
    item.append(
      h('p', { class: 'import-state', role: 'status' },
        i.state === 'queued' ? t('data.importQueued') : t('data.importRunning', { done, total })),
      h('progress', { max: String(Math.max(total, 1)), value: String(done), 'aria-label': t('data.importProgress') }),
    );
  } else if (i.state === 'failed') {
    item.append(h('p', { class: 'import-state form-error' }, t('data.importFailed', { error: i.error ?? '' })));
  } else {
    const skipped = i.skipped ? t('data.importSkipped', { n: i.skipped }) : '';
    item.append(h('p', { class: 'import-state' }, t('data.importDone', { done }) + skipped));
  }
  return item;
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
