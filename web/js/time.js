// @ts-check
// When something happened, as a reader sees it. The server sends only
// epoch milliseconds (`createtime`) and its clock (`serverTime`); the
// client says it in words, by the rule Moments apps follow (the server's
// `createtimeText` keeps the same one, in `domain/time_text.rs`):
//   under a minute           刚刚 / just now
//   under an hour            N分钟前 / N min ago
//   under a day              N小时前 / N h ago (1 h 27 min shows 1小时前)
//   older                    the date and time, in the reader's time zone
// The words are i18n.js's (`time.*`). Ages count on the server's clock, so
// a phone set wrong does not show posts from "the future". This module
// touches no DOM, so the tests run the very same file in Node.

import { words } from './i18n.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The server's clock minus this browser's, from the last answer. */
let skew = 0;

/** @param {number} serverTime the `serverTime` of an answer just received */
export function noteServerTime(serverTime) {
  if (Number.isFinite(serverTime)) skew = serverTime - Date.now();
}

/** Now, on the server's clock. */
export function serverNow() {
  return Date.now() + skew;
}

/**
 * @param {number} createtime epoch ms
 * @param {number} now epoch ms on the same clock
 * @param {'zh' | 'en'} lang
 * @param {string} [timeZone] an IANA zone; the reader's own when absent
 */
export function relativeTime(createtime, now, lang, timeZone) {
  const age = Math.max(0, now - createtime);
  if (age < MINUTE) return words(lang, 'time.justNow');
  if (age < HOUR) return words(lang, 'time.minutes', { n: Math.floor(age / MINUTE) });
  if (age < DAY) return words(lang, 'time.hours', { n: Math.floor(age / HOUR) });
  return dateText(createtime, now, lang, timeZone);
}

/**
 * "11月30日 14:05" / "Nov 30, 14:05", with the year when it is not this one.
 * @param {number} at
 * @param {number} now
 * @param {'zh' | 'en'} lang
 * @param {string} [timeZone]
 */
export function dateText(at, now, lang, timeZone) {
  const parts = (/** @type {number} */ t) => {
    const fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    /** @type {Record<string, string>} */
    const out = {};
    for (const p of fmt.formatToParts(t)) out[p.type] = p.value;
    return out;
  };
  const p = parts(at);
  const sameYear = p.year === parts(now).year;
  const clock = `${p.hour}:${p.minute}`;
  if (lang === 'zh') {
    return `${sameYear ? '' : `${p.year}年`}${p.month}月${p.day}日 ${clock}`;
  }
  const month = MONTHS[Number(p.month) - 1];
  return `${month} ${p.day}${sameYear ? '' : `, ${p.year}`}, ${clock}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
