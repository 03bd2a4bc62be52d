// @ts-check
// Search: posts by their words (the matched words marked), or people by
// the start of their name, suggested as one types. The address holds the
// query (#/search?q=西湖&type=posts), so a search can be reloaded, shared
// with oneself and gone back to.

import { call } from '../api.js';
import { append, avatar, h } from '../dom.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { postCard } from '../post_card.js';

/** How long typing pauses before people are looked up. */
const TYPING_PAUSE_MS = 250;

/** @typedef {'posts' | 'users'} Kind */

/**
 * The search address for `q` and `kind`.
 * @param {string} q
 * @param {Kind} kind
 */
export function searchHref(q, kind) {
  return `#/search?${new URLSearchParams({ q, type: kind })}`;
}

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title, params }) {
  title(t('search.title'));
  const asked = new URLSearchParams(params[0] ?? '');
  /** @type {Kind} */
  let kind = asked.get('type') === 'users' ? 'users' : 'posts';
  const input = h('input', {
    type: 'search',
    name: 'q',
    id: 'search-q',
    autocomplete: 'off',
    maxlength: 200,
    enterkeyhint: 'search',
    value: asked.get('q') ?? '',
  });
  const label = h('label', { for: 'search-q', class: 'visually-hidden' }, t('search.label'));
  const form = h(
    'form',
    { class: 'card form search', role: 'search', novalidate: true },
    h('div', { class: 'row grow' }, label, input, h('button', { type: 'submit', class: 'button-primary' }, t('search.submit'))),
  );
  /** @type {Record<Kind, HTMLButtonElement>} */
  const tabs = {
    posts: h('button', { type: 'button', role: 'tab', class: 'search-tab', id: 'search-tab-posts' }, t('search.posts')),
    users: h('button', { type: 'button', role: 'tab', class: 'search-tab', id: 'search-tab-users' }, t('search.people')),
  };
  const tabList = h('div', { class: 'search-tabs', role: 'tablist', 'aria-label': t('search.kinds') }, tabs.posts, tabs.users);
  const results = h('div', { class: 'search-results', role: 'tabpanel' });
  /** @type {ReturnType<typeof pagedList> | null} */
  let list = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let typing;

  function drawTabs() {
    for (const [k, tab] of Object.entries(tabs)) {
      tab.setAttribute('aria-selected', String(k === kind));
      tab.tabIndex = k === kind ? 0 : -1;
    }
    results.setAttribute('aria-labelledby', tabs[kind].id);
  }

  /** Shows what the box asks for now; nothing for a box of spaces. */
  function show() {
    list?.stop();
    list = null;
    const q = input.value.trim();
    results.replaceChildren();
    if (!q) return;
    // The address follows the box without a new page: back leaves search.
    history.replaceState(null, '', searchHref(q, kind));
    list = kind === 'posts' ? postsList(q) : peopleList(q);
    results.append(list.root);
  }

  /** @param {string} q */
  function postsList(q) {
    /** @type {Record<string, [number, number][]>} */
    const marks = {};
    return pagedList({
      label: t('search.posts'),
      empty: t('search.noPosts'),
      load: async (cursor) => {
        /** @type {import('../types.js').FoundPosts} */
        const page = await call('GET', '/search', { query: { q, cursor, limit: 10, lang: lang() } });
        Object.assign(marks, page.marks);
        return page;
      },
      render: (/** @type {import('../types.js').Post} */ post) => postCard(post, { marks: marks[String(post.id)] ?? [] }).el,
    });
  }

  /** @param {string} prefix */
  function peopleList(prefix) {
    return pagedList({
      label: t('search.people'),
      empty: t('search.noPeople'),
      tag: 'ul',
      // At most 64 characters, cut between characters, not inside one.
      load: (cursor) => call('GET', '/search/users', { query: { prefix: Array.from(prefix).slice(0, 64).join(''), cursor, limit: 20 } }),
      render: (/** @type {import('../types.js').UserCard} */ user) =>
        h('li', { class: 'person' }, h('a', { href: `#/u/${user.uid}` }, avatar(user, 's'), h('span', {}, user.nickName))),
    });
  }

  /** @param {Kind} next */
  function choose(next) {
    if (next === kind) return;
    kind = next;
    drawTabs();
    show();
  }

  tabs.posts.addEventListener('click', () => choose('posts'));
  tabs.users.addEventListener('click', () => choose('users'));
  // Arrow keys move between the two tabs, as a tab list's do.
  tabList.addEventListener('keydown', (event) => {
    if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') return;
    event.preventDefault();
    choose(kind === 'posts' ? 'users' : 'posts');
    tabs[kind].focus();
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearTimeout(typing);
    show();
  });
  // People are suggested as one types; posts wait for the search button,
  // since every word changes what they are.
  input.addEventListener('input', () => {
    if (kind !== 'users') return;
    clearTimeout(typing);
    typing = setTimeout(show, TYPING_PAUSE_MS);
  });

  drawTabs();
  append(main, [form, tabList, results]);
  show();
  if (!input.value) input.focus();
  return () => {
    clearTimeout(typing);
    list?.stop();
  };
}
