// @ts-check
// Finding someone by the username they told you, and the people I follow.

import { ApiError, call } from '../api.js';
import { append, avatar, h } from '../dom.js';
import { field, formAlert, onSubmit } from '../forms.js';
import { t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { current } from '../session.js';
import { drawProfile } from './album.js';

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('people.title'));
  const username = field({ label: t('people.username'), name: 'username', autocomplete: 'off', required: true });
  const result = h('section', { class: 'card profile', hidden: true, 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'card form search', novalidate: true, role: 'search' },
    formAlert(),
    h('div', { class: 'row grow' }, username.wrap, h('button', { type: 'submit', class: 'button-primary' }, t('people.find'))),
  );
  const announce = h('p', { class: 'visually-hidden', role: 'status' });
  onSubmit(form, async () => {
    result.hidden = true;
    announce.textContent = '';
    const name = username.input.value.trim();
    if (!name) {
      throw new ApiError(400, { type: 'about:blank', title: '', status: 400, code: 'invalid_input', field: 'username', detail: t('people.required') }, null);
    }
    try {
      const profile = await call('GET', '/users', { query: { username: name } });
      drawProfile(result, profile, { albumLink: true, followed: () => void following?.reload() });
      result.hidden = false;
      announce.textContent = profile.nickName;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        throw new ApiError(404, { ...error.problem, field: 'username', detail: t('people.notFound') }, null);
      }
      throw error;
    }
  });
  const me = current()?.me;
  const following = me
    ? pagedList({
        label: t('people.following'),
        empty: t('people.emptyFollowing'),
        tag: 'ul',
        load: (cursor) => call('GET', `/users/${me.uid}/following`, { query: { cursor, limit: 20 } }),
        render: (/** @type {import('../types.js').UserCard} */ user) =>
          h('li', { class: 'person' }, h('a', { href: `#/u/${user.uid}` }, avatar(user, 's'), h('span', {}, user.nickName))),
      })
    : null;
  append(main, [
    form,
    announce,
    result,
    following && h('section', { class: 'card', 'aria-labelledby': 'following-title' },
      h('h2', { class: 'section-title', id: 'following-title' }, t('people.following')),
      following.root),
  ]);
  return following?.stop;
}
