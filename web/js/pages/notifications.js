// @ts-check
// Likes, comments, replies, follows and mentions, newest first, and what
// moderation tells me (a report closed, a strike, an appeal decided, a new
// report for moderators). Opening the page marks what it shows as read,
// which clears the badge.

import { call } from '../api.js';
import { avatar, h, webUrl } from '../dom.js';
import { t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { timeText } from '../post_card.js';

/** @typedef {import('../types.js').Notification} Notification */

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('notif.title'));
  let marked = false;
  const list = pagedList({
    label: t('notif.title'),
    empty: t('notif.empty'),
    tag: 'ul',
    load: async (cursor) => {
      const page = await call('GET', '/notifications', { query: { cursor, limit: 20 } });
      const newest = page.items[0];
      if (!marked && newest) {
        // Up to what was shown, not "all": one that arrives meanwhile stays unread.
        marked = true;
        call('POST', '/notifications/read', { json: { upTo: newest.id } })
          .then(() => window.dispatchEvent(new Event('moments:unread-changed')))
          // Not marked: they stay unread and the badge says so; nothing to show.
          .catch(() => {});
      }
      return page;
    },
    render: notificationItem,
  });
  main.append(list.root);
  return list.stop;
}

/** What the service itself says: its actor is no one (uid 0). */
const FROM_SERVICE = { report_closed: '#/me', strike: '#/me', appeal_closed: '#/me', report_opened: '#/admin' };

/** @param {Notification} n */
function notificationItem(n) {
  if (n.kind in FROM_SERVICE) return serviceItem(n, FROM_SERVICE[/** @type {keyof typeof FROM_SERVICE} */ (n.kind)]);
  const target = n.postId ? `#/post/${n.postId}` : `#/u/${n.actor.uid}`;
  const gone = n.kind !== 'follow' && !n.post;
  return h(
    'li',
    { class: `notification${n.read ? '' : ' unread'}`, 'data-kind': n.kind },
    h('a', { href: `#/u/${n.actor.uid}`, class: 'notification-avatar', tabindex: '-1', 'aria-hidden': 'true' }, avatar(n.actor, 's')),
    h('div', { class: 'notification-main' },
      h('p', {},
        !n.read && h('span', { class: 'visually-hidden' }, `${t('notif.unread')}: `),
        h('a', { href: `#/u/${n.actor.uid}`, class: 'user-name' }, n.actor.nickName),
        ' ',
        h('a', { href: target }, t(`notif.${n.kind}`))),
      n.comment && h('p', { class: 'notification-quote' }, n.comment.content),
      gone && h('p', { class: 'notification-quote muted' }, t('notif.gone')),
      h('p', { class: 'comment-meta' }, timeText(n.createtime))),
    n.post && (webUrl(n.post.pictureUrl)
      ? h('img', { class: 'notification-thumb', src: webUrl(n.post.pictureUrl), alt: '' })
      : h('p', { class: 'notification-snippet' }, n.post.content)),
  );
}

/**
 * @param {Notification} n
 * @param {string} target where it is shown in full
 */
function serviceItem(n, target) {
  return h(
    'li',
    { class: `notification${n.read ? '' : ' unread'}`, 'data-kind': n.kind },
    h('span', { class: 'avatar avatar-s avatar-service', 'aria-hidden': 'true' }, '⚑'),
    h('div', { class: 'notification-main' },
      h('p', {},
        !n.read && h('span', { class: 'visually-hidden' }, `${t('notif.unread')}: `),
        h('span', { class: 'user-name' }, t('notif.service')),
        ' ',
        h('a', { href: target }, t(`notif.${/** @type {keyof typeof FROM_SERVICE} */ (n.kind)}`))),
      h('p', { class: 'comment-meta' }, timeText(n.createtime))),
  );
}
