// @ts-check
// The console (#/admin): which sections a moderator or an admin sees, with
// jump links to them, and the admin's own tools: the device-model table
// (search, add, edit, delete), bulk import with a preview of what it adds
// and changes, and the live state's check and rebuild. The moderation
// sections (the queue, content filters, roles, lifting a suspension, the
// audit log) are moderation.js's; this page places them.

import { ApiError, call } from '../api.js';
import { fill, h } from '../dom.js';
import { busy, clearErrors, field, formAlert, onSubmit, showError } from '../forms.js';
import { lang, t } from '../i18n.js';
import { isAdmin, isModerator, updateMe } from '../session.js';
import { dateText, serverNow } from '../time.js';
import { auditSection, filtersSection, queueSection, rolesSection, suspensionSection } from './moderation.js';

/** @typedef {import('../types.js').DeviceModel} DeviceModel */
/** @typedef {import('../types.js').ModelNames} ModelNames */

/** Rows drawn at once: a search narrows a big table instead. */
const SHOWN_ROWS = 200;

/** @param {import('../main.js').PageContext} ctx */
export async function render({ main, title }) {
  title(t('admin.title'));
  const status = h('p', { class: 'list-status', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading'));
  main.append(status);
  // Roles are the service's to say: one may have been given or taken
  // since this browser signed in.
  try {
    updateMe(await call('GET', '/me'));
  } catch {
    // What this browser kept decides; the service refuses what it must.
  }
  status.remove();
  if (!isModerator()) {
    main.append(h('p', { class: 'card error-text' }, t('admin.needsAdmin')));
    return;
  }
  const admin = isAdmin();
  /** @type {(() => void)[]} */
  const stops = [];
  /** @type {[string, string][]} the sections, for the jump links: [heading id, name] */
  const jumps = [];
  /** @type {HTMLElement[]} */
  const sections = [];
  if (admin) {
    const devices = devicesSection();
    sections.push(devices.section, importSection(devices.reload), liveSection());
    jumps.push(['devices-title', t('admin.devices')], ['import-title', t('admin.import')], ['live-title', t('admin.live')]);
  }
  const queue = queueSection();
  const filters = filtersSection();
  sections.push(queue.section, filters.section);
  stops.push(queue.stop, filters.stop);
  jumps.push(['queue-title', t('admin.queue')], ['filters-title', t('filters.title')]);
  if (admin) {
    const audit = auditSection();
    sections.push(rolesSection(), suspensionSection(), audit.section);
    stops.push(audit.stop);
    jumps.push(['roles-title', t('roles.title')], ['suspension-title', t('suspension.title')], ['audit-title', t('audit.title')]);
  }
  main.append(
    h('nav', { class: 'card menu inline', 'aria-label': t('admin.sections') },
      jumps.map(([id, words]) => h('a', { href: '#/admin', 'data-jump': id }, words))),
    ...sections,
  );
  // In-page jumps without touching the address, which routes pages.
  for (const link of main.querySelectorAll('a[data-jump]')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      const target = document.getElementById(/** @type {HTMLElement} */ (link).dataset.jump ?? '');
      target?.scrollIntoView({ block: 'start' });
      target?.focus();
    });
  }
  return () => {
    for (const stop of stops) stop();
  };
}

function devicesSection() {
  /** @type {DeviceModel[]} */
  let table = [];
  const status = h('p', { class: 'list-status', role: 'status', 'aria-live': 'polite' });
  const search = h('input', { type: 'search', id: 'device-search', placeholder: t('admin.search'), autocomplete: 'off' });
  const body = h('tbody');
  const grid = h('table', { class: 'models' },
    h('caption', { class: 'visually-hidden' }, t('admin.devices')),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, t('admin.model')),
      h('th', { scope: 'col' }, `${t('admin.zh')} / ${t('admin.en')}`),
      h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, t('admin.actions'))))),
    body);

  async function reload() {
    fill(status, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading'));
    try {
      const page = await call('GET', '/admin/device-models');
      table = page.items;
      draw();
    } catch (error) {
      fill(status, h('span', { class: 'error-text' }, error instanceof ApiError ? error.words : t('error.generic')));
    }
  }

  function draw() {
    const q = search.value.trim().toLowerCase();
    const matches = table.filter((m) =>
      !q || [m.model, m.displayName.zh, m.displayName.en, m.brand].some((v) => v.toLowerCase().includes(q)));
    fill(body, matches.slice(0, SHOWN_ROWS).map(row));
    grid.hidden = matches.length === 0;
    fill(status, table.length === 0 ? t('admin.empty') : matches.length === 0 ? t('admin.noMatch') : t('admin.count', { n: matches.length }));
  }

  /** @param {DeviceModel} m */
  function row(m) {
    const tr = h('tr', { 'data-model': m.model },
      h('td', {}, h('span', { class: 'model' }, m.model), m.brand && h('span', { class: 'muted block' }, m.brand)),
      h('td', {}, h('span', { lang: 'zh-CN', class: 'block' }, m.displayName.zh), h('span', { lang: 'en', class: 'muted block' }, m.displayName.en),
        h('span', { class: 'muted block fine' }, `${t('admin.updated')} ${dateText(m.updatedAt, serverNow(), lang())}`)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'link-button', 'aria-label': t('admin.editRow', { model: m.model }), onclick: () => edit(tr, m) }, t('admin.edit')),
        h('button', { type: 'button', class: 'link-button danger', 'aria-label': t('admin.deleteRow', { model: m.model }), onclick: (/** @type {Event} */ e) => remove(e, m) }, t('admin.delete'))));
    return tr;
  }

  /** @param {HTMLTableRowElement} tr @param {DeviceModel} m */
  function edit(tr, m) {
    const form = modelForm(m, async () => {
      await reload();
      fill(status, t('admin.saved', { model: m.model }));
      const again = body.querySelector(`tr[data-model="${CSS.escape(m.model)}"] button`);
      if (again instanceof HTMLElement) again.focus();
    }, () => {
      draw();
      const again = body.querySelector(`tr[data-model="${CSS.escape(m.model)}"] button`);
      if (again instanceof HTMLElement) again.focus();
    });
    fill(tr, h('td', { colspan: '3' }, form));
    form.querySelector('input')?.focus();
  }

  /** @param {Event} event @param {DeviceModel} m */
  async function remove(event, m) {
    if (!window.confirm(t('admin.confirmDelete', { model: m.model }))) return;
    const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
    try {
      await busy(button, () => call('DELETE', `/admin/device-models/${encodeURIComponent(m.model)}`));
    } catch (error) {
      fill(status, h('span', { class: 'error-text' }, error instanceof ApiError ? error.words : t('error.generic')));
      return;
    }
    await reload();
    fill(status, t('admin.deleted', { model: m.model }));
    search.focus();
  }

  search.addEventListener('input', draw);
  const add = modelForm(null, async () => {
    await reload();
  });
  const section = h('section', { class: 'card admin-section', 'aria-labelledby': 'devices-title' },
    h('h2', { class: 'section-title', id: 'devices-title', tabindex: '-1' }, t('admin.devices')),
    h('div', { class: 'field' }, h('label', { for: 'device-search' }, t('admin.search')), search),
    status,
    grid,
    h('details', { class: 'add-model' }, h('summary', {}, t('admin.add')), add));
  void reload();
  return { section, reload };
}

/**
 * The form that writes one row: a new one (model given by the admin) or
 * an existing one (model fixed).
 * @param {DeviceModel | null} existing
 * @param {() => Promise<void>} saved
 * @param {() => void} [cancel]
 */
function modelForm(existing, saved, cancel) {
  const model = field({ label: t('admin.model'), name: 'model', value: existing?.model, required: true, maxlength: 100 });
  const zh = field({ label: t('admin.zh'), name: 'displayName.zh', value: existing?.displayName.zh, required: true, maxlength: 64 });
  const en = field({ label: t('admin.en'), name: 'displayName.en', value: existing?.displayName.en, required: true, maxlength: 64 });
  const brand = field({ label: t('admin.brand'), name: 'brand', value: existing?.brand, maxlength: 64 });
  const form = h('form', { class: 'model-form', novalidate: true },
    formAlert(),
    !existing && model.wrap,
    zh.wrap, en.wrap, brand.wrap,
    h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'button-primary small' }, existing ? t('admin.save') : t('admin.addButton')),
      cancel && h('button', { type: 'button', class: 'button-quiet small', onclick: cancel }, t('admin.cancel'))));
  onSubmit(form, async () => {
    const key = existing ? existing.model : model.input.value.trim();
    if (!key) {
      throw new ApiError(400, { type: 'about:blank', title: '', status: 400, code: 'invalid_input', field: 'model', detail: t('admin.modelRequired') }, null);
    }
    await call('PUT', `/admin/device-models/${encodeURIComponent(key)}`, {
      json: { displayName: { zh: zh.input.value, en: en.input.value }, brand: brand.input.value },
    });
    if (!existing) form.reset();
    await saved();
  });
  return form;
}

/** @param {() => Promise<void>} tableChanged */
function importSection(tableChanged) {
  const text = field({ label: t('admin.importText'), name: 'body', rows: 6, hint: t('admin.importHelp') });
  text.input.setAttribute('spellcheck', 'false');
  const file = h('input', { type: 'file', id: 'import-file', accept: '.csv,.json,text/csv,application/json' });
  const result = h('div', { class: 'import-result', 'aria-live': 'polite' });
  const apply = h('button', { type: 'button', class: 'button-primary', disabled: true }, t('admin.apply'));
  /** The text the shown preview is of: Apply sends exactly that. */
  let previewed = '';

  const form = h('form', { class: 'import-form', novalidate: true },
    formAlert(),
    text.wrap,
    h('div', { class: 'field' }, h('label', { for: 'import-file' }, t('admin.importFile')), file),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button-quiet' }, t('admin.preview')), apply));

  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    if (!chosen) return;
    text.input.value = await chosen.text();
    text.input.dispatchEvent(new Event('input'));
  });
  text.input.addEventListener('input', () => {
    apply.disabled = true;
    if (previewed) fill(result);
    previewed = '';
  });

  /** @param {string} path @param {string} body */
  const send = (path, body) => call('POST', path, {
    text: body,
    contentType: body.trimStart().startsWith('[') ? 'application/json' : 'text/csv',
  }).catch((error) => {
    throw rowError(error);
  });

  onSubmit(form, async () => {
    const body = text.input.value;
    /** @type {import('../types.js').DeviceModelsPreview} */
    const preview = await send('/admin/device-models/import/preview', body);
    previewed = body;
    drawPreview(result, preview);
    apply.disabled = preview.added.length + preview.changed.length === 0;
  });

  apply.addEventListener('click', async () => {
    clearErrors(form);
    try {
      const done = await busy(apply, () => send('/admin/device-models/import', previewed));
      fill(result, h('p', { class: 'success', role: 'status' }, t('admin.imported', { n: done.imported })));
      apply.disabled = true;
      previewed = '';
      await tableChanged();
    } catch (error) {
      showError(form, error);
    }
  });

  return h('section', { class: 'card admin-section', 'aria-labelledby': 'import-title' },
    h('h2', { class: 'section-title', id: 'import-title', tabindex: '-1' }, t('admin.import')),
    form,
    result);
}

/**
 * An import's problem names a row (`[3].model`); shown next to the text,
 * saying which row in words.
 * @param {unknown} error
 */
function rowError(error) {
  if (!(error instanceof ApiError)) return error;
  const row = /^\[(\d+)\]/.exec(error.field ?? '');
  if (!row && error.field !== 'body') return error;
  const where = row ? (lang() === 'zh' ? `第 ${Number(row[1]) + 1} 行：` : `Row ${Number(row[1]) + 1}: `) : '';
  const detail = row ? (error.problem.detail ?? '').replace(/^\[\d+\]\.?/, '') : error.words;
  return new ApiError(error.status, { ...error.problem, field: 'body', detail: `${where}${detail}` }, error.retryAfter);
}

/** @param {HTMLElement} into @param {import('../types.js').DeviceModelsPreview} preview */
function drawPreview(into, preview) {
  /** @param {ModelNames} n */
  const names = (n) => `${n.displayName.zh} / ${n.displayName.en}${n.brand ? ` · ${n.brand}` : ''}`;
  fill(into,
    h('p', { class: 'import-summary', role: 'status' },
      h('span', { class: 'pill added' }, t('admin.added', { n: preview.added.length })), ' ',
      h('span', { class: 'pill changed' }, t('admin.changed', { n: preview.changed.length })), ' ',
      h('span', { class: 'pill' }, t('admin.unchanged', { n: preview.unchanged }))),
    preview.added.length + preview.changed.length === 0 && h('p', { class: 'muted' }, t('admin.nothingToApply')),
    Math.max(preview.added.length, preview.changed.length) > SHOWN_ROWS &&
      h('p', { class: 'muted' }, t('admin.firstRows', { n: SHOWN_ROWS })),
    preview.added.length > 0 && h('table', { class: 'models preview-added' },
      h('caption', {}, t('admin.added', { n: preview.added.length })),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('admin.model')), h('th', { scope: 'col' }, t('admin.after')))),
      h('tbody', {}, preview.added.slice(0, SHOWN_ROWS).map((a) =>
        h('tr', { 'data-model': a.model }, h('td', { class: 'model' }, a.model), h('td', {}, names(a.after)))))),
    preview.changed.length > 0 && h('table', { class: 'models preview-changed' },
      h('caption', {}, t('admin.changed', { n: preview.changed.length })),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('admin.model')), h('th', { scope: 'col' }, `${t('admin.before')} → ${t('admin.after')}`))),
      h('tbody', {}, preview.changed.slice(0, SHOWN_ROWS).map((c) =>
        h('tr', { 'data-model': c.model }, h('td', { class: 'model' }, c.model),
          h('td', {}, h('del', {}, names(c.before)), h('span', { 'aria-hidden': 'true' }, ' → '), h('ins', {}, names(c.after))))))));
}

function liveSection() {
  const result = h('div', { class: 'live-result', 'aria-live': 'polite' });
  const check = h('button', { type: 'button', class: 'button-quiet' }, t('admin.check'));
  const rebuild = h('button', { type: 'button', class: 'button-quiet' }, t('admin.rebuild'));
  /**
   * @param {HTMLButtonElement} button
   * @param {() => Promise<Node>} run
   */
  const wire = (button, run) => button.addEventListener('click', async () => {
    fill(result, h('p', { role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading')));
    try {
      const shown = await busy(button, run);
      fill(result, shown);
    } catch (error) {
      fill(result, h('p', { class: 'error-text', role: 'alert' }, error instanceof ApiError ? error.words : t('error.generic')));
    }
  });
  wire(check, async () => {
    /** @type {import('../types.js').CheckReport} */
    const report = await call('GET', '/admin/live/check');
    return h('div', { class: 'live-report' },
      h('p', { class: report.mismatches.length === 0 ? 'success' : 'warning' },
        t('admin.checkResult', { posts: report.posts, users: report.users, mismatches: report.mismatches.length })),
      report.absent > 0 && h('p', { class: 'muted' }, t('admin.checkAbsent', { absent: report.absent })),
      report.mismatches.length > 0 && h('ul', { class: 'mismatches' },
        report.mismatches.slice(0, 50).map((m) => h('li', {}, h('code', {}, m)))));
  });
  wire(rebuild, async () => {
    /** @type {import('../types.js').RebuildReport} */
    const report = await call('POST', '/admin/live/rebuild');
    return h('p', { class: 'success' }, t('admin.rebuildResult', { posts: report.posts, users: report.users }));
  });
  return h('section', { class: 'card admin-section', 'aria-labelledby': 'live-title' },
    h('h2', { class: 'section-title', id: 'live-title', tabindex: '-1' }, t('admin.live')),
    h('p', { class: 'muted' }, t('admin.liveHelp')),
    h('div', { class: 'row' }, check, rebuild),
    result);
}
