// @ts-check
// Me: my album, the language, the admin console for admins, signing out.

import { call } from '../api.js';
import { avatar, h } from '../dom.js';
import { busy } from '../forms.js';
import { lang, setLang, t } from '../i18n.js';
import { current, forget, isAdmin } from '../session.js';

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
  main.append(
    h('section', { class: 'card profile' },
      avatar(me, 'l'),
      h('div', { class: 'profile-main' },
        h('h2', { class: 'profile-name' }, me.nickName),
        h('p', { class: 'muted' }, t('me.username', { name: me.username })))),
    h('nav', { class: 'card menu', 'aria-label': t('me.title') },
      h('a', { href: `#/u/${me.uid}` }, t('me.album')),
      isAdmin() && h('a', { href: '#/admin' }, t('me.admin'))),
    h('div', { class: 'card form' },
      h('div', { class: 'field' }, h('label', { for: 'me-language' }, t('me.language')), langSelect)),
    signOut,
  );
}
