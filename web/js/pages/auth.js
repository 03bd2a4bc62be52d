// @ts-check
// Signing up and signing in.

import { ApiError, call, idempotentCreates } from '../api.js';
import { h } from '../dom.js';
import { field, formAlert, onSubmit } from '../forms.js';
import { t } from '../i18n.js';
import { save } from '../session.js';

/** @typedef {import('../main.js').PageContext} PageContext */

/**
 * Opens a session and keeps it with the account it belongs to.
 * @param {string} username
 * @param {string} password
 */
async function startSession(username, password) {
  const session = await call('POST', '/sessions', { json: { username, password, device: 'web' } });
  const me = await call('GET', '/me', { headers: { authorization: `Bearer ${session.token}` } });
  save({ token: session.token, expiresAt: session.expiresAt, me });
  const next = sessionStorage.getItem('moments.after-sign-in');
  sessionStorage.removeItem('moments.after-sign-in');
  location.hash = next ? `#${next}` : '#/feed';
}

/**
 * The form both pages share: a welcome, the fields, the submit button and
 * a link to the other page.
 * @param {HTMLElement[]} fields
 * @param {string} submit
 * @param {string} otherHref
 * @param {string} otherText
 */
function accountForm(fields, submit, otherHref, otherText) {
  return h(
    'form',
    { class: 'card form', novalidate: true, 'aria-labelledby': 'page-title' },
    h('p', { class: 'lead' }, t('auth.welcome')),
    formAlert(),
    fields,
    h('button', { type: 'submit', class: 'button-primary wide' }, submit),
    h('p', { class: 'switch' }, h('a', { href: otherHref }, otherText)),
  );
}

/** @param {PageContext} ctx */
export function signIn({ main, title }) {
  title(t('auth.signin'));
  const username = field({ label: t('auth.username'), name: 'username', autocomplete: 'username', required: true });
  const password = field({ label: t('auth.password'), name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const form = accountForm([username.wrap, password.wrap], t('auth.signin'), '#/signup', t('auth.toSignup'));
  onSubmit(form, async () => {
    try {
      await startSession(username.input.value.trim(), password.input.value);
    } catch (error) {
      // The right password for a suspended or banned account: say so, with
      // the service's words on until when.
      if (error instanceof ApiError && error.problem.code === 'account_suspended') {
        throw new ApiError(error.status, { ...error.problem, field: null, detail: t('auth.suspended', { detail: error.words }) }, null);
      }
      throw error;
    }
  });
  main.append(form);
}

/** @param {PageContext} ctx */
export function signUp({ main, title }) {
  title(t('auth.signup'));
  const username = field({
    label: t('auth.username'), name: 'username', autocomplete: 'username', required: true, hint: t('auth.usernameHint'),
  });
  const password = field({
    label: t('auth.password'), name: 'password', type: 'password', autocomplete: 'new-password', required: true, hint: t('auth.passwordHint'),
  });
  const nickName = field({ label: t('auth.nickName'), name: 'nickName', autocomplete: 'nickname' });
  const headImg = field({ label: t('auth.headImg'), name: 'headImg', type: 'url', autocomplete: 'photo', inputmode: 'url' });
  const form = accountForm(
    [username.wrap, password.wrap, nickName.wrap, headImg.wrap], t('auth.signup'), '#/signin', t('auth.toSignin'),
  );
  const create = idempotentCreates();
  onSubmit(form, async () => {
    const name = username.input.value.trim();
    const body = {
      username: name,
      password: password.input.value,
      ...(nickName.input.value.trim() ? { nickName: nickName.input.value.trim() } : {}),
      ...(headImg.input.value.trim() ? { headImg: headImg.input.value.trim() } : {}),
    };
    await create(body, (key) => call('POST', '/users', { json: body, headers: { 'idempotency-key': key } }));
    await startSession(name, password.input.value);
  });
  main.append(form);
}
