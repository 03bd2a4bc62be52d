// @ts-check
// Reporting a post, a comment or an account: the panel a post card, a
// comment and the profile page open (a category, an optional comment, the
// instance's rules to cite), and once filed the one-click block, mute or
// hide of the author. Also the report categories, the instance's rules and
// the words for a strike's action, which the Me page and the moderation
// console share.

import { ApiError, call } from './api.js';
import { fill, h, uniqueId } from './dom.js';
import { busy, field, formAlert, invalid, onSubmit, selectField } from './forms.js';
import { t } from './i18n.js';

/** @typedef {import('./types.js').UserCard} UserCard */
/** @typedef {import('./types.js').ReportCategory} ReportCategory */

/** @type {ReportCategory[]} */
export const CATEGORIES = ['spam', 'harassment', 'hate', 'sexual', 'violence', 'illegal', 'other'];

/**
 * A strike's action in the reader's words (the Me page's strikes, the
 * console's).
 * @param {string} action
 */
export function strikeWords(action) {
  switch (action) {
    case 'remove_content': return t('strike.remove_content');
    case 'warn': return t('strike.warn');
    case 'suspend': return t('strike.suspend');
    case 'ban': return t('strike.ban');
    default: return action;
  }
}

/**
 * A "Report" button that opens the report panel, placed by `place` (and
 * closes it again): for a comment and a profile, whose panel goes after
 * them. A post card keeps its panel in its own state, as it is drawn again.
 * @param {{ targetType: 'comment' | 'user', targetId: number, author: UserCard,
 *   label: string, className?: string, place: (panel: HTMLElement) => void }} spec
 */
export function reportButton(spec) {
  /** @type {HTMLElement | null} */
  let panel = null;
  const button = h('button', {
    type: 'button',
    class: spec.className ?? 'link-button',
    'aria-label': spec.label,
    'aria-expanded': 'false',
    onclick: () => {
      if (panel) {
        close();
        return;
      }
      panel = reportPanel({
        targetType: spec.targetType,
        targetId: spec.targetId,
        author: spec.author,
        label: spec.label,
        onClose: close,
      });
      spec.place(panel);
      button.setAttribute('aria-expanded', 'true');
    },
  }, t('report.report'));
  function close() {
    panel?.remove();
    panel = null;
    button.setAttribute('aria-expanded', 'false');
    button.focus();
  }
  return button;
}

/** The service's rules a report may cite, read once per page load. */
/** @type {Promise<string[]> | null} */
let rulesOnce = null;
export function instanceRules() {
  rulesOnce ??= call('GET', '/instance')
    .then((/** @type {import('./types.js').Instance} */ instance) => instance.rules ?? [])
    .catch(() => {
      // Reported without rules this time; asked again next time.
      rulesOnce = null;
      return [];
    });
  return rulesOnce;
}

/**
 * @typedef {{
 *   targetType: import('./types.js').ReportedKind,
 *   targetId: number,
 *   author: UserCard,
 *   label: string,
 *   onClose: () => void,
 * }} ReportSpec
 */

/**
 * Reporting a post, a comment or an account: a reason, an optional comment
 * and the instance's rules to cite. Once filed, it offers to block, mute
 * or hide the author right there, one click each.
 * @param {ReportSpec} spec
 * @returns {HTMLElement}
 */
export function reportPanel(spec) {
  const panel = h('section', { class: 'report-panel', 'aria-label': spec.label });
  fill(panel, h('p', { class: 'list-status', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading')));
  void instanceRules().then(drawForm);
  return panel;

  /** @param {string[]} rules */
  function drawForm(rules) {
    const category = selectField({
      label: t('report.category'),
      name: 'category',
      options: [['', t('report.choose')], ...CATEGORIES.map((c) => /** @type {[string, string]} */ ([c, t(`cat.${c}`)]))],
    });
    const comment = field({ label: t('report.commentField'), name: 'comment', rows: 3, maxlength: 1000, hint: t('report.commentHint') });
    const rulesId = uniqueId('rules');
    const boxes = rules.map((rule, i) => {
      const id = uniqueId('rule');
      return h('span', { class: 'check-row' },
        h('input', { type: 'checkbox', id, value: String(i + 1) }),
        h('label', { for: id }, `${i + 1}. ${rule}`));
    });
    const form = h(
      'form',
      { class: 'report-form', novalidate: true },
      formAlert(),
      category.wrap,
      comment.wrap,
      rules.length > 0 &&
        h('fieldset', { class: 'rules', id: rulesId, 'data-field': 'rules', tabindex: '-1' },
          h('legend', {}, t('report.rules')),
          boxes,
          h('p', { class: 'field-error', id: `${rulesId}-error`, hidden: true })),
      h('div', { class: 'row' },
        h('button', { type: 'submit', class: 'button-primary small' }, t('report.submit')),
        h('button', { type: 'button', class: 'button-quiet small', onclick: spec.onClose }, t('post.cancel'))),
    );
    onSubmit(form, async () => {
      if (!category.input.value) throw invalid('category', t('report.categoryRequired'));
      const cited = boxes.flatMap((box) => {
        const input = box.querySelector('input');
        return input?.checked ? [Number(input.value)] : [];
      });
      const text = comment.input.value.trim();
      await call('POST', '/reports', {
        json: {
          targetType: spec.targetType,
          targetId: spec.targetId,
          category: category.input.value,
          ...(text ? { comment: text } : {}),
          ...(cited.length ? { rules: cited } : {}),
        },
      });
      // What may be offered depends on how we relate (a hide is only
      // from a follower; a block covers the rest).
      /** @type {import('./types.js').Profile | null} */
      const profile = await call('GET', `/users/${spec.author.uid}`).catch(() => null);
      drawDone(profile);
    });
    fill(panel, form);
    if (panel.isConnected) category.input.focus();
  }

  /** @param {import('./types.js').Profile | null} profile */
  function drawDone(profile) {
    const name = spec.author.nickName;
    const alert = h('p', { class: 'form-error', role: 'alert', hidden: true });
    const done = h('p', { class: 'success', role: 'status', tabindex: '-1' }, t('report.done'));
    const offers = h('div', { class: 'row offers' });
    /** @param {string} words */
    const settled = (words) => h('span', { class: 'tag', tabindex: '-1' }, words);
    /**
     * @param {'block' | 'mute' | 'hide'} kind
     * @param {string} label
     * @param {string} after
     */
    const offer = (kind, label, after) => {
      const button = h('button', {
        type: 'button',
        class: kind === 'block' ? 'button-quiet small danger' : 'button-quiet small',
        onclick: async () => {
          alert.hidden = true;
          try {
            await busy(button, () => call('PUT', `/users/${spec.author.uid}/${kind}`));
          } catch (error) {
            alert.textContent = error instanceof ApiError ? error.words : t('error.generic');
            alert.hidden = false;
            return;
          }
          const tag = settled(after);
          // A block covers a mute and a hide: nothing else is left to offer.
          if (kind === 'block') fill(offers, tag);
          else button.replaceWith(tag);
          tag.focus();
        },
      }, label);
      return button;
    };
    if (profile?.blocking) {
      fill(offers, settled(t('report.blocked', { name })));
    } else {
      fill(offers,
        offer('block', t('report.block', { name }), t('report.blocked', { name })),
        offer('mute', t('report.mute', { name }), t('report.muted', { name })),
        profile?.followedBy && offer('hide', t('report.hide', { name }), t('report.hidden', { name })));
    }
    fill(panel,
      done,
      h('p', { class: 'muted' }, t('report.offer')),
      offers,
      alert,
      h('div', { class: 'row' }, h('button', { type: 'button', class: 'button-quiet small', onclick: spec.onClose }, t('report.close'))));
    done.focus();
  }
}
