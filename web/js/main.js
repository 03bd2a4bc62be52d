// @ts-check
// The page shell and its router. Pages live at `#/…` addresses, so the
// service serves one document and every address can be bookmarked and
// reloaded: #/feed, #/search?q=, #/compose, #/post/{id}, #/u/{uid},
// #/people, #/notifications, #/me, #/admin, #/signin, #/signup.

import { SIGNED_OUT_EVENT, call } from './api.js';
import { fill, h } from './dom.js';
import { LANG_EVENT, lang, setLang, t } from './i18n.js';
import { REFETCH_EVENT, isLive, onLive, scheduleWatch, startLive, stopLive } from './live.js';
import { current } from './session.js';
import { relativeTime, serverNow } from './time.js';
import * as admin from './pages/admin.js';
import * as album from './pages/album.js';
import * as auth from './pages/auth.js';
import * as compose from './pages/compose.js';
import * as data from './pages/data.js';
import * as feed from './pages/feed.js';
import * as me from './pages/me.js';
import * as notifications from './pages/notifications.js';
import * as people from './pages/people.js';
import * as post from './pages/post.js';
import * as search from './pages/search.js';

/**
 * What a page gets: where to draw, how to name itself, the address's parts.
 * @typedef {{ main: HTMLElement, title: (text: string) => void, params: string[] }} PageContext
 * A page draws itself and may return what stops its observers and timers.
 * @typedef {(ctx: PageContext) => void | (() => void) | Promise<void | (() => void)>} Page
 * @typedef {{ pattern: RegExp, page: Page, public?: boolean, tab?: string }} Route
 */

/** @type {Route[]} */
const ROUTES = [
  { pattern: /^\/signin$/, page: auth.signIn, public: true },
  { pattern: /^\/signup$/, page: auth.signUp, public: true },
  { pattern: /^\/feed$/, page: feed.render, tab: 'feed' },
  { pattern: /^\/search(?:\?(.*))?$/, page: search.render, tab: 'feed' },
  { pattern: /^\/compose$/, page: compose.render, tab: 'compose' },
  { pattern: /^\/post\/(\d{1,17})$/, page: post.render },
  { pattern: /^\/u\/(\d{1,17})$/, page: album.render },
  { pattern: /^\/people$/, page: people.render, tab: 'people' },
  { pattern: /^\/notifications$/, page: notifications.render, tab: 'notifications' },
  { pattern: /^\/me$/, page: me.render, tab: 'me' },
  { pattern: /^\/me\/data$/, page: data.render, tab: 'me' },
  { pattern: /^\/admin$/, page: admin.render, tab: 'me' },
];

const TABS = /** @type {const} */ ([
  ['feed', 'nav.feed', '◎'],
  ['compose', 'nav.compose', '＋'],
  ['people', 'nav.people', '⌕'],
  ['notifications', 'nav.notifications', '✉'],
  ['me', 'nav.me', '☺'],
]);

const titleEl = h('h1', { id: 'page-title', tabindex: '-1' });
const langButton = h('button', { type: 'button', class: 'lang-toggle', onclick: toggleLang });
const main = h('main', { id: 'main' });
const badge = h('span', { class: 'badge', 'aria-hidden': 'true', hidden: true });
const nav = h('nav', { class: 'tabs' });
/** @type {(() => void) | null} */
let stopPage = null;
/** How many routes were drawn: the latest one owns the page. */
let routes = 0;
let unread = 0;
/** Bumped by each `unread` event: a count asked for before one is older than it. */
let unreadHeard = 0;

function drawChrome() {
  fill(langButton, t('lang.switch'));
  langButton.setAttribute('aria-label', t('lang.switchLabel'));
  nav.setAttribute('aria-label', t('nav.main'));
  fill(
    nav,
    TABS.map(([tab, key, icon]) =>
      h(
        'a',
{ href: `#/${tab}`, class: 'tab', 'data-tab': tab },
        h('span', { class: 'tab-icon', 'aria-hidden': 'true' }, icon),
        h('span', { class: 'tab-label' }, t(key)),
        tab === 'notifications' && badge,
      ),
    ),
  );
  drawBadge();
}

function toggleLang() {
  setLang(lang() === 'zh' ? 'en' : 'zh');
}

/** @param {string} text */
function setTitle(text) {
  titleEl.textContent = text;
  document.title = `${text} · ${t('app.name')}`;
}

async function route() {
  const path = location.hash.replace(/^#/, '') || '/feed';
  const signedIn = current() !== null;
  /** @type {RegExpMatchArray | null} */
  let match = null;
  const found = ROUTES.find((r) => (match = path.match(r.pattern)));
  if (!found || !match) {
    location.replace(signedIn ? '#/feed' : '#/signin');
    return;
  }
  if (!found.public && !signedIn) {
    sessionStorage.setItem('moments.after-sign-in', path);
    location.replace('#/signin');
    return;
  }
  if (found.public && signedIn) {
    location.replace('#/feed');
    return;
  }
  stopPage?.();
  stopPage = null;
  // One stream for the tab, whichever page: opened once, kept across pages.
  if (signedIn) startLive();
  else stopLive();
  const mine = ++routes;
  nav.hidden = !signedIn;
  for (const tab of nav.querySelectorAll('a[data-tab]')) {
    if (tab instanceof HTMLElement && tab.dataset.tab === found.tab) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  // Each page draws into a view of its own: one still loading when the
  // reader has moved on draws into a view nobody shows any more.
  const view = h('div', { class: 'view' });
  fill(main, view);
  window.scrollTo(0, 0);
  const params = /** @type {RegExpMatchArray} */ (match).slice(1);
  const title = (/** @type {string} */ text) => {
    if (mine === routes) setTitle(text);
  };
  const stop = await found.page({ main: view, title, params });
  if (mine !== routes) {
    if (typeof stop === 'function') stop();
    return;
  }
  if (typeof stop === 'function') stopPage = stop;
  // The stream watches the posts this page shows, or none.
  scheduleWatch();
  // Each new page is announced from its heading, as a new document would be.
  titleEl.focus({ preventScroll: true });
  void refreshUnread();
}

/** The unread badge on the notifications tab. */
export async function refreshUnread() {
  if (!current()) return;
  const heard = unreadHeard;
  try {
    const answer = await call('GET', '/notifications/unread');
    if (heard !== unreadHeard) return;
    unread = answer.unread;
  } catch {
    return;
  }
  drawBadge();
}

/** The badge and the tab's name ("消息，3 条未读") from the last count. */
function drawBadge() {
  badge.textContent = unread > 99 ? '99+' : String(unread);
  badge.hidden = unread === 0;
  const link = nav.querySelector('a[data-tab="notifications"]');
  if (!link) return;
  if (unread > 0) link.setAttribute('aria-label', t('nav.notificationsUnread', { n: unread }));
  else link.removeAttribute('aria-label');
}

/** Keeps "刚刚" and "5分钟前" true while a page stays open. */
function refreshTimes() {
  const now = serverNow();
  for (const el of document.querySelectorAll('time[data-t]')) {
    el.textContent = relativeTime(Number(/** @type {HTMLElement} */ (el).dataset.t), now, lang());
  }
}

function start() {
  setLang(lang());
  const app = h(
    'div',
    { class: 'app' },
    h('header', { class: 'topbar' }, h('span', { class: 'brand', 'aria-hidden': 'true' }, '◎'), titleEl, langButton),
    // Before main: a keyboard reaches the tabs without paging through an
    // endless feed. It is fixed at the bottom all the same.
    nav,
    main,
  );
  document.body.replaceChildren(app);
  drawChrome();
  window.addEventListener('hashchange', () => void route());
  window.addEventListener(SIGNED_OUT_EVENT, () => {
    stopLive();
    location.hash = '#/signin';
  });
  window.addEventListener('moments:unread-changed', () => void refreshUnread());
  onLive('unread', (answer) => {
    unreadHeard += 1;
    unread = answer.unread;
    drawBadge();
  });
  // A stream that could not resume may have missed an `unread`.
  window.addEventListener(REFETCH_EVENT, () => void refreshUnread());
  onLive('ready', ({ resumed }) => {
    if (!resumed) void refreshUnread();
  });
  window.addEventListener(LANG_EVENT, () => {
    drawChrome();
    void route();
  });
  // Signed in or out in another tab: this one must not go on as the
  // previous account.
  window.addEventListener('storage', (event) => {
    if (event.key === 'moments.session') location.reload();
  });
  setInterval(refreshTimes, 30_000);
  // Only while the stream is down: while it is up, `unread` events say it.
  setInterval(() => {
    if (document.visibilityState === 'visible' && !isLive()) void refreshUnread();
  }, 30_000);
  void route();
}

start();
