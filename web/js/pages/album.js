// @ts-check
// A user's album: who they are, how we relate, follow or unfollow (or
// report them, in report.js's panel), and the posts of theirs I may see,
// page by page.

import { ApiError, call } from '../api.js';
import { avatar, fill, h } from '../dom.js';
import { busy } from '../forms.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { postCard, showActionError } from '../post_card.js';
import { reportButton } from '../report.js';
import { current } from '../session.js';

/** @typedef {import('../types.js').Profile} Profile */

/** @param {import('../main.js').PageContext} ctx */
export async function render({ main, title, params }) {
  const uid = params[0];
  title(t('album.title'));
  const header = h('section', { class: 'card profile', 'aria-live': 'polite' },
    h('p', { class: 'list-status', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading')));
  main.append(header);
  /** @type {Profile} */
  let profile;
  try {
    profile = await call('GET', `/users/${uid}`);
  } catch (error) {
    fill(header, h('p', { class: 'error-text' }, error instanceof ApiError && error.status === 404 ? t('error.notFound') : error instanceof ApiError ? error.words : t('error.generic')));
    return;
  }
  title(profile.nickName);
  drawProfile(header, profile);
  const list = pagedList({
    label: t('album.title'),
    empty: t('album.empty'),
    load: (cursor) => call('GET', `/users/${uid}/posts`, { query: { cursor, limit: 10, lang: lang() } }),
    render: (post) => postCard(post).el,
  });
  main.append(list.root);
  return list.stop;
}

/**
 * A profile card with its follow button; `albumLink` adds a link to the
 * album, `followed` hears of a follow or unfollow.
 * @param {HTMLElement} header
 * @param {Profile} profile
 * @param {{ albumLink?: boolean, followed?: () => void }} [options]
 */
export function drawProfile(header, profile, options = {}) {
  const self = current()?.me.uid === profile.uid;
  const following = Boolean(profile.following);
  const report = !self && reportButton({
    targetType: 'user',
    targetId: profile.uid,
    author: profile,
    label: t('report.user', { name: profile.nickName }),
    className: 'link-button report-user',
    place: (panel) => header.append(panel),
  });
  fill(
    header,
    avatar(profile, 'l'),
    h('div', { class: 'profile-main' },
      h('h2', { class: 'profile-name' }, profile.nickName),
      h('p', { class: 'profile-counts' },
        h('span', { 'data-count': 'followers' }, t('album.followers', { n: profile.followersCount })),
        ' · ',
        h('span', { 'data-count': 'following' }, t('album.following', { n: profile.followingCount }))),
      !self && (profile.following && profile.followedBy
        ? h('p', { class: 'tag' }, t('album.friends'))
        : profile.followedBy && h('p', { class: 'tag' }, t('album.followsYou'))),
      options.albumLink && h('a', { class: 'profile-link', href: `#/u/${profile.uid}` }, t('people.album')),
      // The label is the action ("关注" / "取消关注"), so no aria-pressed.
      !self && h('div', { class: 'row profile-actions' }, h('button', {
        type: 'button',
        class: following ? 'button-quiet follow' : 'button-primary follow',
        onclick: async (/** @type {Event} */ e) => {
          const button = /** @type {HTMLButtonElement} */ (e.currentTarget);
          try {
            await busy(button, () => call(following ? 'DELETE' : 'PUT', `/users/${profile.uid}/follow`));
            const fresh = await call('GET', `/users/${profile.uid}`);
            drawProfile(header, fresh, options);
            options.followed?.();
            const again = header.querySelector('button.follow');
            if (again instanceof HTMLElement) again.focus();
          } catch (error) {
            showActionError(header, error);
          }
        },
      }, following ? t('album.unfollow') : t('album.follow')),
      report)),
  );
}
