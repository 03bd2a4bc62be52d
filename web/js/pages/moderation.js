// @ts-check
// The console's moderation sections, which admin.js places on its page
// (they have no route of their own). For moderators and admins: the
// report queue (filter it, read a case's snapshot, every report and the
// account's history, act on one case or on many at once) and the content
// filters. For admins only: roles, lifting a suspension and the audit log.

import { ApiError, call } from '../api.js';
import { avatar, fill, h, snapshotPicture } from '../dom.js';
import { busy, checkField, field, formAlert, invalid, onSubmit, selectField } from '../forms.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { timeText } from '../post_card.js';
import { CATEGORIES, instanceRules, strikeWords } from '../report.js';
import { dateText, serverNow } from '../time.js';

/** @typedef {import('../types.js').Case} Case */
/** @typedef {import('../types.js').ItemReport} ItemReport */
/** @typedef {import('../types.js').ContentFilter} ContentFilter */
/** @typedef {import('../types.js').AuditEntry} AuditEntry */
/** @typedef {import('../types.js').BulkResult} BulkResult */
/** @typedef {import('../types.js').PastStrike} PastStrike */
/** @typedef {import('../types.js').UserCard} UserCard */

/** @param {number} at */
function date(at) {
  return dateText(at, serverNow(), lang());
}

/**
 * The name a card shows. The service gives a suspended, banned or erased
 * account an empty card; the console says so rather than show no name.
 * @param {UserCard} card
 */
function cardName(card) {
  return card.nickName || t('queue.withheld');
}

/** @param {string} action a moderator's action, as the service names it */
function actionWords(action) {
  switch (action) {
    case 'dismiss': return t('action.dismiss');
    case 'remove_content': return t('action.remove_content');
    case 'warn': return t('action.warn');
    case 'suspend': return t('action.suspend');
    case 'ban': return t('action.ban');
    case 'overturn': return t('action.overturn');
    default: return action;
  }
}

/** The latest time a Date can hold; a ban's `until` (i64::MAX) is past it. */
const LAST_DATE = 8.64e15;

/**
 * One of the account's strikes: the action, on what, for what, when,
 * until when (a suspension's end, or for good), and whether it was
 * appealed or withdrawn.
 * @param {PastStrike} s
 */
function strikeLine(s) {
  const kind = t(`target.${s.target.kind}`);
  const href = s.target.kind === 'post' ? `#/post/${s.target.id}` : s.target.kind === 'user' ? `#/u/${s.target.id}` : null;
  const forever = s.action === 'ban' || (s.until !== undefined && s.until >= LAST_DATE);
  const end = forever ? t('queue.permanent') : s.action === 'suspend' && s.until ? t('strike.until', { date: date(s.until) }) : '';
  return h('li', { class: 'history-item past-strike', 'data-strike-id': String(s.id), 'data-action': s.action },
    h('p', { class: 'item-head' },
      h('span', { class: `pill action-${s.action}${s.overturnedAt !== undefined ? ' overturned' : ''}` }, strikeWords(s.action)),
      s.appealed && h('span', { class: 'pill state-open strike-appealed' }, t('queue.strikeAppealed')),
      s.overturnedAt !== undefined && h('span', { class: 'pill state-dismissed strike-overturned', title: date(s.overturnedAt) }, t('queue.strikeOverturned')),
      h('span', { class: 'muted fine' }, timeText(s.at))),
    h('p', {},
      href ? h('a', { href }, kind) : kind,
      s.categories.length > 0 && ` · ${t('strike.categories', { list: s.categories.map((c) => t(`cat.${c}`)).join('、') })}`,
      end && ` · ${end}`));
}

/**
 * The actions that fit a case, the first one's words said for what a
 * dismissal does to it.
 * @param {Case} item
 * @returns {[string, string][]}
 */
function actionsFor(item) {
  /** @type {[string, string]} */
  const prompt = ['', t('report.choose')];
  /** @param {string[]} actions @returns {[string, string][]} */
  const named = (actions) => actions.map((a) => [a, actionWords(a)]);
  if (item.target.kind === 'appeal') return [prompt, ['dismiss', t('queue.keepStrike')], ['overturn', t('action.overturn')]];
  const dismiss = /** @type {[string, string]} */ (['dismiss', item.held ? t('queue.publish') : t('queue.dismiss')]);
  if (item.target.kind === 'user') return [prompt, dismiss, ...named(['warn', 'suspend', 'ban'])];
  return [prompt, dismiss, ...named(['remove_content', 'warn', 'suspend', 'ban'])];
}

/**
 * The action fields every way of acting shares: the action, the days of a
 * suspension (shown for `suspend` alone), a note and whether to share it.
 * @param {[string, string][]} actions
 */
function actionFields(actions) {
  const action = selectField({ label: t('queue.action'), name: 'action', options: actions });
  const days = field({ label: t('queue.days'), name: 'days', type: 'number', inputmode: 'numeric', hint: t('queue.daysHint') });
  days.input.setAttribute('min', '1');
  days.input.setAttribute('max', '365');
  days.wrap.hidden = true;
  action.input.addEventListener('change', () => {
    days.wrap.hidden = action.input.value !== 'suspend';
  });
  const note = field({ label: t('queue.noteField'), name: 'note', rows: 2, maxlength: 1000, hint: t('queue.noteHint') });
  const share = checkField({ label: t('queue.share'), name: 'shareWithReporter' });
  return {
    wraps: [action.wrap, days.wrap, note.wrap, share.wrap],
    /** The request's body, or a problem with the action's field. */
    body() {
      if (!action.input.value) throw invalid('action', t('queue.actionRequired'));
      const text = note.input.value.trim();
      const suspend = action.input.value === 'suspend';
      return {
        action: action.input.value,
        ...(text ? { note: text } : {}),
        ...(share.input.checked ? { shareWithReporter: true } : {}),
        ...(suspend && days.input.value !== '' ? { days: Number(days.input.value) } : {}),
      };
    },
    reset() {
      action.input.value = '';
      days.input.value = '';
      days.wrap.hidden = true;
      note.input.value = '';
      share.input.checked = false;
    },
  };
}

/** @param {number} status a bulk action's answer for one case */
function bulkStatusWords(status) {
  switch (status) {
    case 403: return t('queue.status403');
    case 404: return t('queue.status404');
    case 409: return t('queue.status409');
    case 422: return t('queue.status422');
    case 503: return t('queue.status503');
    default: return String(status);
  }
}

/**
 * The queue: one case per reported target (or held post, or appeal),
 * newest first, filtered by state, category and account; each with its
 * snapshot and first reports, opened for all of them and the account's
 * history, acted on one by one or ticked for a bulk action.
 */
export function queueSection() {
  const state = selectField({
    label: t('queue.state'),
    name: 'state',
    options: [['open', t('queue.open')], ['actioned', t('queue.actioned')], ['dismissed', t('queue.dismissed')]],
  });
  const category = selectField({
    label: t('queue.category'),
    name: 'category',
    options: [['', t('queue.allCategories')], ...CATEGORIES.map((c) => /** @type {[string, string]} */ ([c, t(`cat.${c}`)]))],
  });
  const account = field({ label: t('queue.account'), name: 'account', inputmode: 'numeric', autocomplete: 'off' });
  const filterForm = h('form', { class: 'queue-filters', novalidate: true, role: 'search', 'aria-label': t('queue.filter') },
    formAlert(),
    h('div', { class: 'row two' }, state.wrap, category.wrap),
    h('div', { class: 'row grow' }, account.wrap, h('button', { type: 'submit', class: 'button-quiet' }, t('queue.filter'))));

  /** The filter the list shows. */
  let query = { state: 'open', category: '', account: '' };
  /** The ids ticked for a bulk action. */
  const selected = new Set();
  /** @type {Map<number, number>} each shown case of held posts' count, which a bulk action sends */
  const heldCounts = new Map();
  /** @type {Map<number, HTMLInputElement>} each shown open case's checkbox */
  const boxes = new Map();

  const list = pagedList({
    label: t('admin.queue'),
    empty: t('queue.empty'),
    tag: 'ul',
    load: (cursor) => call('GET', '/admin/reports', { query: { ...query, cursor, limit: 20 } }),
    render: (/** @type {Case} */ item) => caseView(item, {
      selected,
      boxes,
      heldCounts,
      changed: drawSelection,
    }),
  });

  onSubmit(filterForm, async () => {
    const uid = account.input.value.trim();
    if (uid && !/^\d{1,17}$/.test(uid)) throw invalid('account', t('roles.notFound'));
    query = { state: state.input.value, category: category.input.value, account: uid };
    selected.clear();
    boxes.clear();
    bulk.hidden = query.state !== 'open';
    drawSelection();
    await list.reload();
  });
  for (const select of [state.input, category.input]) {
    select.addEventListener('change', () => filterForm.requestSubmit());
  }

  // The bulk action over the ticked cases.
  const fields = actionFields([['', t('report.choose')], ...['dismiss', 'remove_content', 'warn', 'suspend', 'ban', 'overturn']
    .map((a) => /** @type {[string, string]} */ ([a, actionWords(a)]))]);
  const selectAll = checkField({ label: t('queue.selectAll'), name: 'selectAll' });
  selectAll.input.addEventListener('change', () => {
    for (const [id, box] of boxes) {
      if (!box.isConnected) continue;
      box.checked = selectAll.input.checked;
      if (box.checked) selected.add(id);
      else selected.delete(id);
    }
    drawSelection();
  });
  const submit = h('button', { type: 'submit', class: 'button-primary small' });
  const result = h('p', { class: 'bulk-result', role: 'status' });
  const bulkForm = h('form', { class: 'bulk-form', novalidate: true },
    formAlert(),
    selectAll.wrap,
    fields.wraps,
    submit);
  const bulk = h('details', { class: 'bulk' }, h('summary', {}, t('queue.bulk')), bulkForm, result);

  function drawSelection() {
    submit.textContent = t('queue.bulkSubmit', { n: selected.size });
    const shown = [...boxes.values()].filter((b) => b.isConnected);
    selectAll.input.checked = shown.length > 0 && shown.every((b) => b.checked);
  }

  onSubmit(bulkForm, async () => {
    fill(result);
    if (selected.size === 0) throw invalid('ids', t('queue.bulkNone'));
    const body = fields.body();
    const ids = [...selected];
    // A case of held posts is acted on as seen: if more were held since,
    // the service refuses it (409) rather than cover posts no one saw.
    const counts = ids.flatMap((id) => {
      const count = heldCounts.get(id);
      return count === undefined ? [] : [{ id, count }];
    });
    /** @type {BulkResult[]} */
    const answers = await call('POST', '/admin/reports/actions', {
      json: { ids, ...body, ...(counts.length > 0 ? { heldCounts: counts } : {}) },
    });
    const failed = answers.filter((a) => a.status !== 200);
    fill(result,
      h('span', { class: 'success' }, t('queue.bulkDone', { n: answers.length - failed.length })),
      failed.length > 0 && [' ', h('span', { class: 'error-text' }, t('queue.bulkFailed', {
        n: failed.length,
        list: failed.map((a) => `#${a.id} ${bulkStatusWords(a.status)}`).join(lang() === 'zh' ? '；' : '; '),
      }))]);
    fields.reset();
    selected.clear();
    boxes.clear();
    heldCounts.clear();
    drawSelection();
    await list.reload();
  });
  drawSelection();

  const section = h('section', { class: 'card admin-section', 'aria-labelledby': 'queue-title' },
    h('h2', { class: 'section-title', id: 'queue-title', tabindex: '-1' }, t('admin.queue')),
    filterForm,
    bulk,
    list.root);
  return { section, stop: list.stop };
}

/**
 * @typedef {{ selected: Set<number>, boxes: Map<number, HTMLInputElement>, heldCounts: Map<number, number>, changed: () => void }} Selection
 */

/**
 * One case, drawn again once acted on.
 * @param {Case} initial
 * @param {Selection} selection
 */
function caseView(initial, selection) {
  const li = h('li', { class: 'queue-item', 'data-case-id': String(initial.id), 'data-kind': initial.target.kind, tabindex: '-1' });
  draw(initial);
  return li;

  /** @param {Case} item */
  function draw(item) {
    const kind = t(`target.${item.target.kind}`);
    const open = item.state === 'open';
    /** @type {HTMLInputElement | null} */
    let box = null;
    if (open) {
      box = h('input', {
        type: 'checkbox',
        class: 'select-item',
        'aria-label': t('queue.select', { kind, name: cardName(item.account) }),
        checked: selection.selected.has(item.id),
        onchange: () => {
          if (box?.checked) selection.selected.add(item.id);
          else selection.selected.delete(item.id);
          selection.changed();
        },
      });
      selection.boxes.set(item.id, box);
      if (item.held) selection.heldCounts.set(item.id, item.held.count ?? 1);
    } else {
      selection.selected.delete(item.id);
      selection.boxes.delete(item.id);
      selection.heldCounts.delete(item.id);
    }
    const detail = h('div', { class: 'queue-detail', hidden: true, 'aria-live': 'polite' });
    const toggle = h('button', {
      type: 'button',
      class: 'link-button',
      'aria-expanded': 'false',
      onclick: () => {
        const opening = detail.hidden;
        detail.hidden = !opening;
        toggle.setAttribute('aria-expanded', String(opening));
        if (opening) void loadDetail(item, detail);
      },
    }, t('queue.details'));
    fill(li,
      h('p', { class: 'item-head' },
        box,
        h('span', { class: `pill kind-${item.target.kind}` }, kind),
        ' ',
        item.reporterCount > 0 && h('span', { class: 'pill' }, t('queue.reporters', { n: item.reporterCount })),
        ' ',
        h('span', { class: 'muted fine' }, timeText(item.reportedAt))),
      h('p', { class: 'queue-account' },
        avatar(item.account, 's'),
        h('a', { class: 'user-name', href: `#/u/${item.account.uid}` }, cardName(item.account)),
        h('span', { class: 'muted fine' }, `uid ${item.account.uid}`)),
      item.categories.length > 0 && h('p', { class: 'categories' },
        item.categories.map((c) => h('span', { class: 'pill category' }, t(`cat.${c}`)))),
      item.held && heldNotice(item.id, item.held),
      item.appeal && h('div', { class: 'notice' },
        h('p', {}, t('queue.appeal', { action: actionWords(item.appeal.action) })),
        h('p', { class: 'quote' }, item.appeal.text)),
      snapshot(item),
      item.reports.length > 0 && h('ul', { class: 'item-reports', 'aria-label': t('queue.allReports') },
        item.reports.slice(0, 3).map((r) => reportLine(r, null))),
      item.closing && closingLine(item.closing),
      h('div', { class: 'row' }, toggle),
      detail,
      open && actForm(item, (closed) => {
        draw(closed);
        selection.changed();
        li.focus();
      }));
  }
}

/**
 * What a filter held: one post, or (a case holds every post of its account
 * held while it is open) how many, the newest of them, and all of them on
 * request: an action covers every one.
 * @param {number} itemId
 * @param {import('../types.js').HeldBy} held
 */
function heldNotice(itemId, held) {
  const count = held.count ?? 1;
  if (count <= 1) return h('p', { class: 'notice' }, t('queue.held', { reason: held.reason }));
  const newest = held.posts ?? [];
  /** @param {number} postId @param {string | null} reason @param {import('../types.js').Snapshot} s */
  const line = (postId, reason, s) => h('li', {},
    h('a', { href: `#/post/${postId}` }, t('target.post')),
    reason ? ` · ${reason} · ` : ' · ',
    timeText(s.createtime),
    s.text && h('span', { class: 'block quote' }, s.text));
  const all = h('details', { class: 'held-all' }, h('summary', {}, t('queue.heldAll', { n: count })));
  /** @type {{ stop: () => void } | null} */
  let loaded = null;
  all.addEventListener('toggle', () => {
    if (!all.open || loaded) return;
    const list = pagedList({
      label: t('queue.heldAllList'),
      empty: t('queue.heldNone'),
      tag: 'ol',
      load: (cursor) => call('GET', `/admin/reports/${itemId}/held-posts`, { query: { cursor, limit: 50 } }),
      render: (/** @type {import('../types.js').HeldPostNow} */ p) => line(p.postId, null, p.snapshot),
    });
    loaded = list;
    all.append(list.root);
  });
  return h('div', { class: 'notice' },
    h('p', {}, t('queue.heldMany', { n: count, reason: held.reason })),
    newest.length > 0 && h('ul', { class: 'held-posts', 'aria-label': t('queue.heldNewest') },
      newest.map((p) => line(p.postId, p.reason, p.snapshot))),
    count > newest.length && all);
}

/**
 * The content as it was first reported.
 * @param {Case} item
 */
function snapshot(item) {
  const s = item.snapshot;
  const pictures = s.pictureUrls.flatMap((url) => snapshotPicture(url) ?? []);
  const postId = item.target.kind === 'post' ? item.target.id : s.postId;
  return h('figure', { class: 'snapshot' },
    h('figcaption', { class: 'fine muted' },
      `${t('queue.snapshot')} · ${s.authorName}`,
      // An account's snapshot is of its name, which has no time of its own.
      s.createtime > 0 && [' · ', timeText(s.createtime)],
      s.visibility && ` · ${t(`vis.${s.visibility}`)}`,
      postId && [' · ', h('a', { href: `#/post/${postId}` }, t('target.post'))]),
    s.text && h('p', { class: 'snapshot-text' }, s.text),
    pictures.length > 0 && h('div', { class: 'thumbs' },
      pictures.map((url, i) => h('img', { src: url, alt: t('post.picture', { n: i + 1, total: pictures.length }), loading: 'lazy' }))));
}

/**
 * One report: who, why, when, and (where the service gave them) the rules
 * and posts it cites.
 * @param {ItemReport} r
 * @param {string[] | null} rules the instance's, to name the cited ones
 */
function reportLine(r, rules) {
  const cited = r.rules.map((n) => (rules?.[n - 1] ? `${n}. ${rules[n - 1]}` : String(n)));
  return h('li', { class: 'item-report' },
    h('span', { class: 'user-name' }, cardName(r.reporter)),
    ` · ${t(`cat.${r.category}`)} · `,
    timeText(r.createdAt),
    r.comment && h('span', { class: 'block quote' }, r.comment),
    cited.length > 0 && h('span', { class: 'block fine' }, t('queue.rules', { list: cited.join(lang() === 'zh' ? '；' : '; ') })),
    r.postIds.length > 0 && h('span', { class: 'block fine' }, t('queue.posts'),
      r.postIds.flatMap((id, i) => [i > 0 ? ' ' : '', h('a', { href: `#/post/${id}` }, `#${i + 1}`)])));
}

/** @param {import('../types.js').Closing} c */
function closingLine(c) {
  return h('div', { class: 'closing' },
    h('p', {}, h('strong', {}, t('queue.done', { action: actionWords(c.action) })), ' ', h('span', { class: 'muted fine' }, timeText(c.at))),
    c.note && h('p', { class: 'quote' }, t('queue.note', { text: c.note })),
    c.shared && h('p', { class: 'fine tag' }, t('queue.shared')));
}

/**
 * All of a case's reports (page by page), the account's earlier closed
 * cases and its strikes.
 * @param {Case} item
 * @param {HTMLElement} into
 */
async function loadDetail(item, into) {
  fill(into, h('p', { class: 'list-status', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading')));
  /** @type {Case} */
  let full;
  /** @type {string[]} */
  let rules;
  try {
    [full, rules] = await Promise.all([call('GET', `/admin/reports/${item.id}`), instanceRules()]);
  } catch (error) {
    fill(into, h('p', { class: 'error-text' }, error instanceof ApiError ? error.words : t('error.generic')));
    return;
  }
  const reports = h('ul', { class: 'item-reports all', 'aria-label': t('queue.allReports') }, full.reports.map((r) => reportLine(r, rules)));
  let cursor = full.reportsCursor ?? null;
  const more = h('button', {
    type: 'button',
    class: 'button-quiet small',
    hidden: !cursor,
    onclick: async () => {
      try {
        /** @type {Case} */
        const page = await busy(more, () => call('GET', `/admin/reports/${item.id}`, { query: { cursor } }));
        for (const r of page.reports) reports.append(reportLine(r, rules));
        cursor = page.reportsCursor ?? null;
        more.hidden = !cursor;
      } catch (error) {
        more.after(h('p', { class: 'error-text', role: 'alert' }, error instanceof ApiError ? error.words : t('error.generic')));
      }
    },
  }, t('queue.moreReports'));
  const history = full.history ?? [];
  const strikes = full.strikes ?? [];
  fill(into,
    h('h3', { class: 'sub-title' }, t('queue.allReports')),
    full.reports.length > 0 ? reports : h('p', { class: 'muted fine' }, t('queue.noReports')),
    more,
    h('h3', { class: 'sub-title' }, t('queue.history')),
    history.length === 0
      ? h('p', { class: 'muted fine' }, t('queue.noHistory'))
      : h('ul', { class: 'history', 'aria-label': t('queue.history') }, history.map((p) =>
        h('li', { class: 'history-item' },
          h('p', {},
            h('span', { class: `pill kind-${p.target.kind}` }, t(`target.${p.target.kind}`)),
            ' ',
            h('span', { class: `pill state-${p.state}` }, t(`queue.${p.state}`)),
            ' ',
            p.categories.map((c) => t(`cat.${c}`)).join('、'),
            p.reporterCount > 0 && ` · ${t('queue.reporters', { n: p.reporterCount })}`),
          p.closing && closingLine(p.closing)))),
    h('h3', { class: 'sub-title' }, t('queue.strikes')),
    strikes.length === 0
      ? h('p', { class: 'muted fine' }, t('queue.noStrikes'))
      : h('ul', { class: 'history strikes', 'aria-label': t('queue.strikes') }, strikes.map(strikeLine)));
}

/**
 * Acting on one case.
 * @param {Case} item
 * @param {(closed: Case) => void} done
 */
function actForm(item, done) {
  const fields = actionFields(actionsFor(item));
  const form = h('form', { class: 'act-form', novalidate: true },
    formAlert(),
    fields.wraps,
    h('button', { type: 'submit', class: 'button-primary small' }, t('queue.submit')));
  onSubmit(form, async () => {
    // The count seen goes with the action: it covers every held post, and
    // the service refuses it (409) if more were held since.
    const held = item.held ? { heldCount: item.held.count ?? 1 } : {};
    const closed = await call('POST', `/admin/reports/${item.id}/actions`, { json: { ...fields.body(), ...held } });
    done(closed);
  });
  return h('details', { class: 'act' }, h('summary', {}, t('queue.act')), form);
}

/** The content filters: terms that refuse a post, or hold it for review. */
export function filtersSection() {
  const status = h('p', { class: 'list-status', role: 'status', 'aria-live': 'polite' });
  const list = pagedList({
    label: t('filters.title'),
    empty: t('filters.empty'),
    tag: 'ul',
    load: (cursor) => call('GET', '/admin/filters', { query: { cursor, limit: 50 } }),
    render: filterRow,
  });

  /** @param {ContentFilter} initial */
  function filterRow(initial) {
    let f = initial;
    const li = h('li', { class: 'filter-row', 'data-filter-id': String(f.id) });
    show();
    return li;

    function show() {
      fill(li,
        h('p', {},
          h('strong', { class: 'filter-term' }, f.term),
          ' ',
          h('span', { class: `pill filter-${f.action}` }, t(`filters.${f.action}`))),
        h('p', { class: 'muted fine' }, f.reason),
        h('p', { class: 'actions' },
          h('button', { type: 'button', class: 'link-button', 'aria-label': t('filters.editRow', { term: f.term }), onclick: edit }, t('admin.edit')),
          h('button', { type: 'button', class: 'link-button danger', 'aria-label': t('filters.deleteRow', { term: f.term }), onclick: remove }, t('admin.delete'))));
    }

    function focusEdit() {
      const again = li.querySelector('button');
      if (again instanceof HTMLElement) again.focus();
    }

    function edit() {
      const form = filterForm(f, async (saved) => {
        f = saved;
        show();
        fill(status, t('filters.saved', { term: f.term }));
        focusEdit();
      }, () => {
        show();
        focusEdit();
      });
      fill(li, form);
      form.querySelector('input')?.focus();
    }

    /** @param {Event} event */
    async function remove(event) {
      if (!window.confirm(t('filters.confirmDelete', { term: f.term }))) return;
      const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
      try {
        await busy(button, () => call('DELETE', `/admin/filters/${f.id}`));
      } catch (error) {
        fill(status, h('span', { class: 'error-text' }, error instanceof ApiError ? error.words : t('error.generic')));
        return;
      }
      li.remove();
      fill(status, t('filters.deleted', { term: f.term }));
    }
  }

  const add = filterForm(null, async (saved) => {
    await list.reload();
    fill(status, t('filters.saved', { term: saved.term }));
  });
  const section = h('section', { class: 'card admin-section', 'aria-labelledby': 'filters-title' },
    h('h2', { class: 'section-title', id: 'filters-title', tabindex: '-1' }, t('filters.title')),
    h('details', { class: 'add-filter' }, h('summary', {}, t('filters.add')), add),
    status,
    list.root);
  return { section, stop: list.stop };
}

/**
 * The form that writes one filter: a new one, or an existing one.
 * @param {ContentFilter | null} existing
 * @param {(saved: ContentFilter) => Promise<void>} saved
 * @param {() => void} [cancel]
 */
function filterForm(existing, saved, cancel) {
  const term = field({ label: t('filters.term'), name: 'term', value: existing?.term, required: true, autocomplete: 'off' });
  const action = selectField({
    label: t('filters.action'),
    name: 'action',
    options: [['reject', t('filters.reject')], ['hold', t('filters.hold')]],
    value: existing?.action ?? 'reject',
  });
  const reason = field({ label: t('filters.reason'), name: 'reason', value: existing?.reason, required: true, hint: t('filters.reasonHint') });
  const form = h('form', { class: 'model-form', novalidate: true },
    formAlert(),
    term.wrap, action.wrap, reason.wrap,
    h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'button-primary small' }, existing ? t('admin.save') : t('filters.addButton')),
      cancel && h('button', { type: 'button', class: 'button-quiet small', onclick: cancel }, t('admin.cancel'))));
  onSubmit(form, async () => {
    const body = { term: term.input.value, action: action.input.value, reason: reason.input.value };
    /** @type {ContentFilter} */
    const answer = existing
      ? await call('PUT', `/admin/filters/${existing.id}`, { json: body })
      : await call('POST', '/admin/filters', { json: body });
    if (!existing) form.reset();
    await saved(answer);
  });
  return form;
}

/**
 * The account a console form names: by uid, or by the username they told.
 * @param {string} value
 * @returns {Promise<{ uid: string, name: string }>}
 */
async function namedAccount(value) {
  const v = value.trim();
  if (!v) throw invalid('uid', t('roles.required'));
  if (/^\d{1,17}$/.test(v)) return { uid: v, name: `uid ${v}` };
  try {
    /** @type {import('../types.js').Profile} */
    const profile = await call('GET', '/users', { query: { username: v } });
    return { uid: String(profile.uid), name: `${profile.nickName} (${v})` };
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw invalid('uid', t('roles.notFound'));
    throw error;
  }
}

/**
 * A refusal about the account a form names, shown next to its field.
 * @param {unknown} error
 */
function atAccount(error) {
  if (!(error instanceof ApiError) || error.field) return error;
  if (error.status === 404) return invalid('uid', t('roles.notFound'));
  if (error.status === 409) return invalid('uid', error.words);
  return error;
}

/** Admins give and take the moderator and admin roles. */
export function rolesSection() {
  const who = field({ label: t('roles.who'), name: 'uid', autocomplete: 'off', required: true });
  const role = selectField({
    label: t('roles.role'),
    name: 'role',
    options: [['user', t('roles.user')], ['moderator', t('roles.moderator')], ['admin', t('roles.admin')]],
    value: 'moderator',
  });
  const result = h('p', { class: 'success', role: 'status' });
  const form = h('form', { class: 'model-form', novalidate: true },
    formAlert(),
    who.wrap,
    role.wrap,
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button-primary small' }, t('roles.submit'))));
  onSubmit(form, async () => {
    fill(result);
    const account = await namedAccount(who.input.value);
    const chosen = role.input.value;
    await call('PUT', `/admin/users/${account.uid}/role`, { json: { role: chosen } }).catch((error) => {
      throw atAccount(error);
    });
    const words = chosen === 'admin' ? t('roles.admin') : chosen === 'moderator' ? t('roles.moderator') : t('roles.user');
    fill(result, t('roles.done', { who: account.name, role: words }));
  });
  return h('section', { class: 'card admin-section', 'aria-labelledby': 'roles-title' },
    h('h2', { class: 'section-title', id: 'roles-title', tabindex: '-1' }, t('roles.title')),
    form,
    result);
}

/** Admins end a suspension or a ban before its time; the strikes stand. */
export function suspensionSection() {
  const who = field({ label: t('roles.who'), name: 'uid', autocomplete: 'off', required: true });
  const result = h('p', { class: 'success', role: 'status' });
  const form = h('form', { class: 'model-form', novalidate: true },
    formAlert(),
    who.wrap,
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button-primary small' }, t('suspension.submit'))));
  onSubmit(form, async () => {
    fill(result);
    const account = await namedAccount(who.input.value);
    await call('DELETE', `/admin/users/${account.uid}/suspension`).catch((error) => {
      throw atAccount(error);
    });
    fill(result, t('suspension.done', { who: account.name }));
  });
  return h('section', { class: 'card admin-section', 'aria-labelledby': 'suspension-title' },
    h('h2', { class: 'section-title', id: 'suspension-title', tabindex: '-1' }, t('suspension.title')),
    h('p', { class: 'muted' }, t('suspension.help')),
    form,
    result);
}

/** Every moderator's and admin's action, newest first. */
export function auditSection() {
  const list = pagedList({
    label: t('audit.title'),
    empty: t('audit.empty'),
    tag: 'ul',
    load: (cursor) => call('GET', '/admin/audit-log', { query: { cursor, limit: 20 } }),
    render: (/** @type {AuditEntry} */ e) => h('li', { class: 'audit-entry', 'data-action': e.action },
      h('p', {},
        h('strong', {}, auditWords(e.action)),
        ' ',
        h('code', { class: 'model' }, e.action),
        ' ',
        h('span', { class: 'model muted' }, e.subject)),
      h('p', { class: 'muted fine' },
        h('a', { href: `#/u/${e.actor}` }, t('audit.actor', { uid: e.actor })),
        ` · ${date(e.at)}`),
      e.note && h('p', { class: 'quote' }, e.note)),
  });
  const refresh = h('button', {
    type: 'button',
    class: 'button-quiet small',
    onclick: () => void busy(refresh, () => list.reload()),
  }, t('audit.refresh'));
  const section = h('section', { class: 'card admin-section', 'aria-labelledby': 'audit-title' },
    h('h2', { class: 'section-title', id: 'audit-title', tabindex: '-1' }, t('audit.title')),
    h('div', { class: 'row' }, refresh),
    list.root);
  return { section, stop: list.stop };
}

/** @param {string} action an audit entry's, such as `report.dismiss` */
function auditWords(action) {
  if (action.startsWith('report.')) return actionWords(action.slice('report.'.length));
  switch (action) {
    case 'role.set': return t('roles.submit');
    case 'filter.create': return `${t('filters.title')} · ${t('filters.addButton')}`;
    case 'filter.update': return `${t('filters.title')} · ${t('admin.edit')}`;
    case 'filter.delete': return `${t('filters.title')} · ${t('admin.delete')}`;
    case 'account.lift_suspension': return t('suspension.title');
    default: return '';
  }
}
