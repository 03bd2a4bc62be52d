// @ts-check
// Who is signed in in this browser. The token lives in localStorage so a
// reload keeps the session; it is sent only to this origin's API (the page
// loads no script from anywhere else, by its Content-Security-Policy).

/** @typedef {import('./types.js').Me} Me */
/** @typedef {{ token: string, expiresAt: number, me: Me }} Session */

const STORAGE_KEY = 'moments.session';

/** @returns {Session | null} */
export function current() {
  try {
    const raw = localStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const s = /** @type {Session} */ (JSON.parse(raw));
    if (!s.token || !s.me || s.expiresAt < Date.now()) return null;
    return s;
  } catch {
    return null;
  }
}

/** @param {Session} session */
export function save(session) {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(session));
}

export function forget() {
  localStorage.removeItem(STORAGE_KEY);
}

/**
 * Keeps the account as the service now describes it (`GET /me`): an
 * admin may have given it a role since it signed in.
 * @param {Me} me
 */
export function updateMe(me) {
  const s = current();
  if (s && s.me.uid === me.uid) save({ ...s, me });
}

/** @returns {boolean} */
export function isAdmin() {
  return current()?.me.roles.includes('admin') ?? false;
}

/** A moderator or an admin: someone who may work the moderation queue. */
export function isModerator() {
  const roles = current()?.me.roles ?? [];
  return roles.includes('moderator') || roles.includes('admin');
}
