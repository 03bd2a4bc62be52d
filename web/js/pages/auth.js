// @ts-check
// Signing up and signing in.

import { ApiError, call, idempotentCreates } from '../api.js';
import { h } from '../dom.js';
import { field, formAlert, invalid, onSubmit } from '../forms.js';
import { lang, t } from '../i18n.js';
import { save } from '../session.js';
import { dateText, serverNow } from '../time.js';

/** @typedef {import('../main.js').PageContext} PageContext */
/** @typedef {import('../types.js').Problem} Problem */

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
  /** @type {HTMLElement | null} */
  let suspended = null;
  onSubmit(form, async () => {
    suspended?.remove();
    suspended = null;
    const name = username.input.value.trim();
    const secret = password.input.value;
    try {
      await startSession(name, secret);
    } catch (error) {
      // The right password for a suspended or banned account: say so, and
      // below the form until when, in the reader's words and zone, with the
      // appeal it may make without a session.
      if (error instanceof ApiError && error.problem.code === 'account_suspended') {
        suspended = suspendedPanel(error.problem, name, secret);
        form.after(suspended);
        throw new ApiError(error.status, { ...error.problem, field: null, detail: t('auth.suspended') }, null);
      }
      throw error;
    }
  });
  main.append(form);
}

/**
 * What a suspended or banned account is told at sign-in: until when (in
 * the reader's language and zone), or that it is banned; and, when the
 * service names the strike that holds it, the appeal of that strike.
 * @param {Problem} problem the refused sign-in's
 * @param {string} username as the sign-in sent it
 * @param {string} password as the sign-in sent it
 */
function suspendedPanel(problem, username, password) {
  const until = problem.until;
  return h(
    'section',
    { class: 'card suspended', 'aria-labelledby': 'suspended-title' },
    h('h2', { class: 'section-title', id: 'suspended-title' },
      until ? t('auth.suspendedUntil', { date: dateText(until, serverNow(), lang()) }) : t('auth.banned')),
    problem.strikeId && appealForm(problem.strikeId, username, password),
  );
}

/**
 * An account that cannot sign in appeals with its username and password
 * in place of a session (Me offers the appeal to one that can).
 * @param {number} strikeId
 * @param {string} username
 * @param {string} password
 */
function appealForm(strikeId, username, password) {
  const text = field({
    label: t('appeal.text'), name: 'text', rows: 3, maxlength: 1000, required: true, hint: t('auth.appealHint'),
  });
  const form = h(
    'form',
    { class: 'appeal-form', novalidate: true, 'aria-label': t('appeal.summary') },
    h('p', { class: 'muted' }, t('auth.appealHelp')),
    formAlert(),
    text.wrap,
    h('button', { type: 'submit', class: 'button-primary small' }, t('appeal.submit')),
  );
  onSubmit(form, async () => {
    if (!text.input.value.trim()) throw invalid('text', t('auth.appealRequired'));
    try {
      await call('POST', '/appeals', { json: { username, password, strikeId, text: text.input.value } });
    } catch (error) {
      // One appeal per strike: this one was made already (here, or from
      // Me before the suspension).
      if (error instanceof ApiError && error.status === 409) {
        throw new ApiError(error.status, { ...error.problem, field: null, detail: t('auth.appealedAlready') }, null);
      }
      throw error;
    }
    const done = h('p', { class: 'success', role: 'status', tabindex: '-1' }, t('auth.appealSent'));
    form.replaceWith(done);
    done.focus();
  });
  return form;
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
