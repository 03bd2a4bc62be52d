// @ts-check
// Elements are built from data with text nodes and attributes only, never
// from HTML strings: a post's text can hold anything, and none of it may
// become markup.

/** @typedef {Node | string | number | null | undefined | false} Child */

/**
 * An element with attributes, listeners (`onclick: fn`) and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown> | null} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) {
      // Never an inline handler: listeners are functions, or nothing.
      if (typeof value !== 'function') throw new TypeError(`${key} must be a function`);
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === 'style' || key === 'srcdoc') {
      throw new TypeError(`${key} is not set from data`);
    } else if (key === 'value' && 'value' in el) {
      /** @type {HTMLInputElement} */ (/** @type {unknown} */ (el)).value = String(value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {(Child | Child[])[]} children
 */
export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/**
 * Replaces an element's children.
 * @param {Element} el
 * @param {...(Child | Child[])} children
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * The URL if it is http(s), else null. The service accepts no other kind
 * for pictures and avatars; checked again here so that no stored value can
 * ever become a `javascript:` link.
 * @param {string | null | undefined} url
 */
export function webUrl(url) {
  return url && /^https?:\/\//i.test(url) ? url : null;
}

/**
 * A URL of this service's media: http(s), or a path on this origin (the
 * default media base is `/media`); null otherwise.
 * @param {string} url
 */
export function mediaUrl(url) {
  return webUrl(url) ?? (url && url.startsWith('/') && !url.startsWith('//') ? url : null);
}

/**
 * A picture a moderation snapshot shows: a URL the author gave, one of
 * this service's media URLs (a held post's), or the small copy of an
 * uploaded picture the snapshot keeps inline, which outlives the post;
 * null otherwise.
 * @param {string} url
 */
export function snapshotPicture(url) {
  return webUrl(url) ?? (/^(\/media\/|data:image\/(jpeg|png);base64,)/.test(url) ? url : null);
}

/** An id unique in this page, for label/aria wiring. */
let nextId = 0;
export function uniqueId(prefix = 'f') {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/**
 * A round avatar: the picture when there is one, else the name's first
 * character on a colour derived from the uid.
 * @param {{ uid: number, nickName: string, headImg: string }} user
 * @param {'s' | 'm' | 'l'} [size]
 */
export function avatar(user, size = 'm') {
  const src = webUrl(user.headImg);
  if (src) {
    return h('img', { class: `avatar avatar-${size}`, src, alt: '', loading: 'lazy' });
  }
  const hue = Number(BigInt(user.uid) % 360n);
  return h(
    'span',
    { class: `avatar avatar-${size} avatar-letter`, 'aria-hidden': 'true', 'data-hue': String(Math.floor(hue / 30)) },
    Array.from(user.nickName)[0] ?? '?',
  );
}
