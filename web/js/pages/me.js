// @ts-check
// Me: my album, my data (download it), the language, the console for moderators and admins, my
// reports and what became of them, my strikes (with an appeal while one
// may be made), signing out.

import { call } from '../api.js';
import { append, avatar, fill, h, snapshotPicture } from '../dom.js';
import { busy, field, formAlert, onSubmit } from '../forms.js';
import { lang, setLang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { timeText } from '../post_card.js';
import { strikeWords } from '../report.js';
import { current, forget, isModerator, updateMe } from '../session.js';
import { dateText, serverNow } from '../time.js';

/** @typedef {import('../types.js').Report} Report */
/** @typedef {import('../types.js').Strike} Strike */

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('me.title'));
  const me = current()?.me;
  if (!me) return;
  const langSelect = h(
    'select',
    { id: 'me-language', onchange: () => setLang(langSelect.value === 'en' ? 'en' : 'zh') },
    h('option', { value: 'zh', selected: lang() === 'zh' }, '中文'),
    h('option', { value: 'en', selected: lang() === 'en' }, 'English'),
  );
  const signOut = h('button', {
    type: 'button',
    class: 'button-quiet wide danger',
    onclick: async () => {
      await busy(signOut, async () => {
        try {
          await call('DELETE', '/sessions/current');
        } catch {
          // Signed out here either way: the token is dropped below.
        }
      });
      forget();
      location.hash = '#/signin';
    },
  }, t('auth.signout'));
  const menu = h('nav', { class: 'card menu', 'aria-label': t('me.title') });
  const drawMenu = () => fill(menu,
    h('a', { href: `#/u/${me.uid}` }, t('me.album')),
    h('a', { href: '#/me/data' }, t('me.data')),
    isModerator() && h('a', { href: '#/admin' }, t('me.admin')));
  drawMenu();
  // An admin may have given this account a role since it signed in.
  call('GET', '/me')
    .then((fresh) => {
      updateMe(fresh);
      if (menu.isConnected) drawMenu();
    })
    // The menu drawn from what this browser kept stands.
    .catch(() => {});

  const reports = pagedList({
    label: t('me.reports'),
    empty: t('me.reportsEmpty'),
    tag: 'ul',
    load: (cursor) => call('GET', '/me/reports', { query: { cursor, limit: 10 } }),
    render: reportItem,
  });
  const strikes = pagedList({
    label: t('me.strikes'),
    empty: t('me.strikesEmpty'),
    tag: 'ul',
    load: (cursor) => call('GET', '/me/strikes', { query: { cursor, limit: 10 } }),
    render: strikeItem,
  });
  main.append(
    h('section', { class: 'card profile' },
      avatar(me, 'l'),
      h('div', { class: 'profile-main' },
        h('h2', { class: 'profile-name' }, me.nickName),
        h('p', { class: 'muted' }, t('me.username', { name: me.username })))),
    menu,
    h('div', { class: 'card form' },
      h('div', { class: 'field' }, h('label', { for: 'me-language' }, t('me.language')), langSelect)),
    h('section', { class: 'card', 'aria-labelledby': 'my-reports' },
      h('h2', { class: 'section-title', id: 'my-reports' }, t('me.reports')),
      reports.root),
    h('section', { class: 'card', 'aria-labelledby': 'my-strikes' },
      h('h2', { class: 'section-title', id: 'my-strikes' }, t('me.strikes')),
      strikes.root),
    signOut,
  );
  return () => {
    reports.stop();
    strikes.stop();
  };
}

/** @param {number} at */
function date(at) {
  return dateText(at, serverNow(), lang());
}

/**
 * What I reported, where it stands and, once closed, the outcome the
 * moderator shared.
 * @param {Report} r
 */
function reportItem(r) {
  const about = t('me.reportAbout', { kind: t(`target.${r.target.kind}`), category: t(`cat.${r.category}`) });
  const href = r.target.kind === 'post' ? `#/post/${r.target.id}` : r.target.kind === 'user' ? `#/u/${r.target.id}` : null;
  return h(
    'li',
    { class: 'my-report', 'data-report-id': String(r.id), 'data-state': r.state },
    h('p', { class: 'item-head' },
      h('span', { class: `pill state-${r.state}` }, t(`state.${r.state}`)),
      ' ',
      href ? h('a', { href }, about) : h('span', {}, about),
      ' ',
      h('span', { class: 'muted fine' }, timeText(r.createdAt))),
    r.comment && h('p', { class: 'quote' }, t('me.yourComment', { text: r.comment })),
    r.outcome && h('p', { class: 'outcome' }, t('me.outcome', { text: r.outcome })),
  );
}

/**
 * A strike on my account: what was done, to what (as it was when
 * reported), why if the moderator said, until when, and my appeal.
 * @param {Strike} s
 * @returns {HTMLElement}
 */
function strikeItem(s) {
  const item = h('li', { class: 'strike', 'data-strike-id': String(s.id), tabindex: '-1' });
  const pictures = s.snapshot.pictureUrls.flatMap((url) => snapshotPicture(url) ?? []);
  append(item, [
    h('p', { class: 'item-head' },
      h('span', { class: `pill action-${s.action}${s.overturnedAt ? ' overturned' : ''}` }, strikeWords(s.action)),
      ' ',
      h('span', { class: 'muted fine' }, timeText(s.at))),
    s.categories.length > 0 &&
      h('p', { class: 'fine muted' }, t('strike.categories', { list: s.categories.map((c) => t(`cat.${c}`)).join('、') })),
    h('figure', { class: 'snapshot' },
      h('figcaption', { class: 'fine muted' }, t('strike.content')),
      s.snapshot.text && h('p', { class: 'snapshot-text' }, s.snapshot.text),
      pictures.length > 0 && h('div', { class: 'thumbs' },
        pictures.map((url, i) => h('img', { src: url, alt: t('post.picture', { n: i + 1, total: pictures.length }), loading: 'lazy' })))),
    s.reason && h('p', {}, t('strike.reason', { text: s.reason })),
    s.until && h('p', {}, t('strike.until', { date: date(s.until) })),
    s.overturnedAt && h('p', { class: 'success' }, t('strike.overturned', { date: date(s.overturnedAt) })),
    s.appeal && h('p', { class: 'quote' }, t('strike.appeal', { text: s.appeal.text })),
    s.appeal && h('p', { class: `appeal-state appeal-${s.appeal.state}` }, t(`appeal.${s.appeal.state}`)),
    s.appealableUntil && appealForm(s, item),
  ]);
  return item;
}

/**
 * @param {Strike} s
 * @param {HTMLElement} item drawn again from the answer
 */
function appealForm(s, item) {
  const text = field({
    label: t('appeal.text'),
    name: 'text',
    rows: 3,
    maxlength: 1000,
    hint: t('appeal.hint', { date: date(s.appealableUntil ?? 0) }),
  });
  const form = h('form', { class: 'appeal-form', novalidate: true },
    formAlert(),
    text.wrap,
    h('button', { type: 'submit', class: 'button-primary small' }, t('appeal.submit')));
  onSubmit(form, async () => {
    /** @type {Strike} */
    const appealed = await call('POST', `/me/strikes/${s.id}/appeal`, { json: { text: text.input.value } });
    const fresh = strikeItem(appealed);
    item.replaceWith(fresh);
    fresh.focus();
  });
  return h('details', { class: 'appeal' }, h('summary', {}, t('appeal.summary')), form);
}
