// The client's time words (web/js/time.js, the very module the pages
// load), by field note 003's rule, against a table of ages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dateText, relativeTime } from '../../web/js/time.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
// 2026-12-01 14:30:00 in Shanghai (UTC+8).
const NOW = Date.UTC(2026, 11, 1, 6, 30, 0);
const ZONE = 'Asia/Shanghai';

test('ages read as 刚刚, minutes, hours, then the date', () => {
  const table = [
    [0, '刚刚', 'just now'],
    [59 * SECOND, '刚刚', 'just now'],
    [60 * SECOND, '1分钟前', '1 min ago'],
    [5 * MINUTE + 30 * SECOND, '5分钟前', '5 min ago'],
    [59 * MINUTE + 59 * SECOND, '59分钟前', '59 min ago'],
    [HOUR, '1小时前', '1 h ago'],
    [HOUR + 27 * MINUTE, '1小时前', '1 h ago'],
    [23 * HOUR + 59 * MINUTE, '23小时前', '23 h ago'],
    [24 * HOUR, '11月30日 14:30', 'Nov 30, 14:30'],
    [40 * 24 * HOUR, '10月22日 14:30', 'Oct 22, 14:30'],
    [400 * 24 * HOUR, '2025年10月27日 14:30', 'Oct 27, 2025, 14:30'],
  ];
  for (const [age, zh, en] of table) {
    assert.equal(relativeTime(NOW - age, NOW, 'zh', ZONE), zh, `zh, ${age} ms`);
    assert.equal(relativeTime(NOW - age, NOW, 'en', ZONE), en, `en, ${age} ms`);
  }
});

test('a time ahead of the clock reads as just now, never as the future', () => {
  assert.equal(relativeTime(NOW + 5 * MINUTE, NOW, 'zh', ZONE), '刚刚');
});

test('dates are in the reader\'s zone: the same instant is another day elsewhere', () => {
  const at = Date.UTC(2026, 10, 20, 17, 5, 0);
  assert.equal(dateText(at, NOW, 'zh', 'Asia/Shanghai'), '11月21日 01:05');
  assert.equal(dateText(at, NOW, 'en', 'America/New_York'), 'Nov 20, 12:05');
});
