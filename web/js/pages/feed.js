// @ts-check
// The home feed: what the people I follow (and I) posted, newest first,
// the next page read by cursor as the end scrolls into view. Posts that
// arrive while it is open are not pushed in under the reader: a button
// at the top says how many there are, and shows them when tapped.

import { call } from '../api.js';
import { append, avatar, h } from '../dom.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { REFETCH_EVENT, onLive } from '../live.js';
import { postCard } from '../post_card.js';
import { current } from '../session.js';
import { searchHref } from './search.js';

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('feed.title'));
  const me = current()?.me;
  /** Posts the stream says entered the feed that the list does not show. */
  const arrived = new Set();
  /** The stream could not resume: what it missed is unknown, so offer a reload. */
  let stale = false;
  const list = pagedList({
    label: t('feed.title'),
    empty: t('feed.empty'),
    load: (cursor) => call('GET', '/feed', { query: { cursor, limit: 10, lang: lang() } }),
    render: (post) => {
      // Told of before the page that holds it came: not new after all.
      if (arrived.delete(post.id)) drawPill();
      return postCard(post).el;
    },
  });
  const pill = h('button', { type: 'button', class: 'new-posts-button', hidden: true, onclick: showArrived });
  // Polite: said when the reader pauses, and only the button's words.
  const pillRegion = h('div', { class: 'new-posts', 'aria-live': 'polite' }, pill);

  function drawPill() {
    const n = arrived.size;
    pill.hidden = n === 0 && !stale;
    pill.textContent = n === 0 ? t('feed.refresh') : n === 1 ? t('feed.newPost') : t('feed.newPosts', { n });
  }

  async function showArrived() {
    arrived.clear();
    stale = false;
    drawPill();
    window.scrollTo(0, 0);
    await list.reload();
    // The button is gone: focus goes to the newest post rather than nowhere.
    const first = list.items.querySelector('.post-author a');
    if (first instanceof HTMLElement) first.focus({ preventScroll: true });
  }

  const stopNew = onLive('post.new', ({ postId }) => {
    if (arrived.has(postId) || list.items.querySelector(`[data-post-id="${postId}"]`)) return;
    arrived.add(postId);
    drawPill();
  });
  const refetch = () => {
    stale = true;
    drawPill();
  };
  window.addEventListener(REFETCH_EVENT, refetch);

  // The search box: words for posts, or the start of a name for people
  // (the search page has both).
  const query = h('input', { type: 'search', name: 'q', id: 'feed-search', autocomplete: 'off', maxlength: 200, enterkeyhint: 'search' });
  const searchBox = h(
    'form',
    { class: 'feed-search', role: 'search' },
    h('label', { for: 'feed-search', class: 'visually-hidden' }, t('search.label')),
    query,
    h('button', { type: 'submit', class: 'button-quiet' }, t('search.submit')),
  );
  searchBox.addEventListener('submit', (event) => {
    event.preventDefault();
    const q = query.value.trim();
    location.hash = q ? searchHref(q, 'posts') : '#/search';
  });

  append(main, [
    searchBox,
    me
      ? h(
          'div',
          { class: 'cover' },
          h('a', { href: `#/u/${me.uid}`, class: 'cover-me' }, h('span', { class: 'cover-name' }, me.nickName), avatar(me, 'l')),
        )
      : null,
    pillRegion,
    list.root,
  ]);
  return () => {
    list.stop();
    stopNew();
    window.removeEventListener(REFETCH_EVENT, refetch);
  };
}
