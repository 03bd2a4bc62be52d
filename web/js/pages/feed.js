// @ts-check
// The home feed: what the people I follow (and I) posted, newest first,
// the next page read by cursor as the end scrolls into view.

import { call } from '../api.js';
import { append, avatar, h } from '../dom.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { postCard } from '../post_card.js';
import { current } from '../session.js';

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('feed.title'));
  const me = current()?.me;
  const list = pagedList({
    label: t('feed.title'),
    empty: t('feed.empty'),
    load: (cursor) => call('GET', '/feed', { query: { cursor, limit: 10, lang: lang() } }),
    render: (post) => postCard(post).el,
  });
  append(main, [
    me
      ? h(
          'div',
          { class: 'cover' },
          h('a', { href: `#/u/${me.uid}`, class: 'cover-me' }, h('span', { class: 'cover-name' }, me.nickName), avatar(me, 'l')),
        )
      : null,
    list.root,
  ]);
  return list.stop;
}
