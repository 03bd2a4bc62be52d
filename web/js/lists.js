// @ts-check
// A list read page by page with the API's keyset cursors: the next page
// loads when the end of the list scrolls into view (and from a button, for
// keyboards), with a loading state, an empty state and a retry.

import { ApiError } from './api.js';
import { h, fill } from './dom.js';
import { t } from './i18n.js';

/**
 * @template T
 * @typedef {{
 *   load: (cursor: string | null) => Promise<import('./types.js').Page<T>>,
 *   render: (item: T) => Node,
 *   empty: string,
 *   label: string,
 *   tag?: 'ul' | 'ol' | 'div',
 * }} ListSpec
 */

/**
 * @template T
 * @param {ListSpec<T>} spec
 * @returns {{ root: HTMLElement, items: HTMLElement, stop: () => void, reload: () => Promise<void> }}
 */
export function pagedList(spec) {
  const items = h(spec.tag ?? 'div', { class: 'list-items', 'aria-label': spec.label });
  const status = h('p', { class: 'list-status', role: 'status', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'button-quiet list-more', hidden: true }, t('list.more'));
  const sentinel = h('div', { class: 'list-sentinel', 'aria-hidden': 'true' });
  const root = h('section', { class: 'list', 'aria-busy': 'false' }, items, status, more, sentinel);

  /** @type {string | null} */
  let cursor = null;
  let done = false;
  let loading = false;
  let stopped = false;
  /** Bumped by `reload`: an answer to an older request is dropped. */
  let generation = 0;

  async function next() {
    if (loading || done || stopped) return;
    loading = true;
    const mine = generation;
    root.setAttribute('aria-busy', 'true');
    more.hidden = true;
    fill(status, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading'));
    status.hidden = false;
    let loaded = false;
    try {
      const page = await spec.load(cursor);
      if (mine !== generation || stopped) return;
      for (const item of page.items) items.append(spec.render(item));
      cursor = page.nextCursor ?? null;
      done = !cursor;
      loaded = true;
      if (!items.childElementCount) {
        fill(status, h('span', { class: 'empty' }, spec.empty));
      } else if (done) {
        fill(status, t('list.end'));
      } else {
        fill(status);
        status.hidden = true;
        more.hidden = false;
      }
    } catch (error) {
      if (mine !== generation || stopped) return;
      // Only the reader retries, from the button (after the time a 429 or
      // 503 asked for): a list that failed must not ask again by itself.
      const words = error instanceof ApiError ? error.words : t('error.generic');
      const retry = h('button', { type: 'button', class: 'button-quiet', onclick: () => void next() }, t('list.retry'));
      const wait = error instanceof ApiError && error.retryAfter ? error.retryAfter : 0;
      if (wait) {
        retry.disabled = true;
        setTimeout(() => { retry.disabled = false; }, wait * 1000);
      }
      fill(status, h('span', { class: 'error-text' }, words), ' ', retry);
    } finally {
      if (mine === generation) {
        loading = false;
        root.setAttribute('aria-busy', 'false');
      }
    }
    // A short page may leave the end in view: read on, while the list is
    // still on the page and the last page came.
    if (loaded && !done && !stopped && mine === generation && sentinel.isConnected && isNearView(sentinel)) {
      void next();
    }
  }

  more.addEventListener('click', () => void next());
  const observer = new IntersectionObserver(
    (entries) => {
      // An entry may be older than the page it arrives after (measured while
      // the list was still empty): ask the layout as it is now, or a first
      // page that filled the screen would fetch a second one unasked.
      if (entries.some((e) => e.isIntersecting) && isNearView(sentinel)) void next();
    },
    { rootMargin: '400px 0px' },
  );
  observer.observe(sentinel);

  async function reload() {
    generation += 1;
    cursor = null;
    done = false;
    loading = false;
    items.replaceChildren();
    await next();
  }

  function stop() {
    stopped = true;
    observer.disconnect();
  }

  void next();
  return { root, items, stop, reload };
}

/** @param {Element} el */
function isNearView(el) {
  const r = el.getBoundingClientRect();
  return r.top < window.innerHeight + 400;
}
