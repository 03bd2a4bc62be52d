// The web client in a real browser: Playwright drives Debian's chromium,
// headless, at phone width, against a real moments (scripts/browser.sh
// starts it and says where: MOMENTS_BASE_URL). Two people and an admin,
// each in their own browser context, go through the product's scenarios
// in order; each step finds controls by their role and label, as a screen
// reader would, so an unlabelled control fails the step that needs it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { dateText } from '../../web/js/time.js';

const BASE = process.env.MOMENTS_BASE_URL;
const ADMIN_USERNAME = process.env.MOMENTS_ADMIN_USERNAME;
const ADMIN_PASSWORD = process.env.MOMENTS_ADMIN_PASSWORD;
const SHOTS = process.env.MOMENTS_SCREENSHOTS_DIR || null;
const HOSTILE = '<img src=x onerror="document.title=1">&lt;b&gt;<script>alert(1)</script>';
if (!BASE || !ADMIN_USERNAME || !ADMIN_PASSWORD) {
  throw new Error('run by scripts/browser.sh, which starts moments and sets MOMENTS_BASE_URL and the admin pair');
}

const PHONE = { width: 375, height: 812 };
const PASSWORD = 'correct horse battery';
// Unique per run, so the suite also runs against stores that outlive it.
const RUN = Date.now().toString(36);
const WANG = { username: `wangwu_${RUN}`, nick: '王五' };
const LI = { username: `lisi_${RUN}`, nick: '李四' };
const POST_TEXT = '周末去湖边走走';
const MODEL = 'ONEPLUS A6000';

/** How long any one wait may take: what the page will show comes in seconds. */
const WAIT_MS = 10_000;

/** @typedef {{ method: string, path: string, status: number }} Refusal */

/** @type {import('playwright-core').Browser} */
let browser;
/** Everything the pages logged as an error, by page; checked at the end. */
const consoleErrors = [];
/**
 * The refusals a step provokes on purpose (`refused`), each allowed once
 * while that step waits for it, on the page that provokes it.
 * @type {(Refusal & { page: import('playwright-core').Page, seen: boolean })[]}
 */
const allowedRefusals = [];
/** Every other answer of 400 or more a page got; checked at the end. */
const unexpectedRefusals = [];
/**
 * The API requests each page sent, in order, for what a step must see the
 * page ask (a stream resumed) or not ask (a count read again).
 * @type {Map<import('playwright-core').Page, { method: string, url: URL, body: string | null, request: import('playwright-core').Request }[]>}
 */
const requestLog = new Map();
/** Pages a step took offline on purpose: their failed loads are expected. */
const offline = new Set();

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    // Playwright adds --headless and --no-sandbox, and gives every launch
    // a fresh, temporary profile (its --user-data-dir).
    args: [
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await browser?.close();
});

/** A phone-sized page in a context of its own (its own localStorage). */
async function phone(locale = 'zh-CN') {
  const context = await browser.newContext({
    viewport: PHONE,
    deviceScaleFactor: 2,
    locale,
    timezoneId: 'Asia/Shanghai',
    isMobile: true,
    hasTouch: true,
  });
  // Every wait below is for something the page will show; one that never
  // comes fails the step in seconds rather than Playwright's 30.
  context.setDefaultTimeout(WAIT_MS);
  const page = await context.newPage();
  // A confirm() is the page asking before a deletion, which the steps
  // mean; an alert() is the page giving up on showing a problem where it
  // belongs (next to a field, in the form), which is a failure.
  page.on('dialog', (dialog) => {
    if (dialog.type() !== 'confirm') consoleErrors.push(`${page.url()}: ${dialog.type()}: ${dialog.message()}`);
    void dialog.accept();
  });
  page.on('pageerror', (error) => consoleErrors.push(`${page.url()}: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // The browser logs every answer of 400 or more it gets; those are
    // judged by the response listener below, which can tell the deliberate
    // ones apart by method, path and status.
    if (/^Failed to load resource: the server responded with a status of \d{3}\b/.test(message.text())) return;
    if (offline.has(page) && /net::ERR_INTERNET_DISCONNECTED/.test(message.text())) return;
    consoleErrors.push(`${page.url()}: ${message.text()}`);
  });
  requestLog.set(page, []);
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.pathname.startsWith('/api/v1/')) requestLog.get(page)?.push({ method: req.method(), url, body: req.postData(), request: req });
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const allowed = allowedRefusals.find((r) => r.page === page && !r.seen && isRefusal(response, r));
    if (allowed) allowed.seen = true;
    else unexpectedRefusals.push(`${page.url()}: ${response.request().method()} ${response.url()} answered ${response.status()}`);
  });
  return page;
}

/**
 * @param {import('playwright-core').Response} response
 * @param {Refusal} refusal
 */
function isRefusal(response, { method, path, status }) {
  return response.status() === status && response.request().method() === method && new URL(response.url()).pathname === path;
}

/**
 * Runs `action`, which is meant to be refused with `refusal`, and waits
 * for that answer: it is then the one such answer the page may get, and
 * the step fails if it never comes.
 * @param {import('playwright-core').Page} page
 * @param {Refusal} refusal
 * @param {() => Promise<void>} action
 */
async function refused(page, refusal, action) {
  const { method, path, status } = refusal;
  const allowance = { ...refusal, page, seen: false };
  allowedRefusals.push(allowance);
  try {
    const answered = page
      .waitForResponse((response) => isRefusal(response, refusal))
      .catch((error) => assert.fail(`${method} ${path} was not answered ${status}: ${error.message}`));
    await Promise.all([answered, action()]);
    assert.ok(allowance.seen, `the ${status} to ${method} ${path} was taken as the deliberate one`);
  } finally {
    allowedRefusals.splice(allowedRefusals.indexOf(allowance), 1);
  }
}

/**
 * @param {import('playwright-core').Page} page
 * @param {string} name
 * @param {import('playwright-core').Locator} [at] a part further down to show at the top
 */
async function screenshot(page, name, at) {
  if (!SHOTS) return;
  // From the top (or from `at`), with no focus ring, once the pictures are in.
  await page.evaluate(() => {
    window.scrollTo(0, 0);
    if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
  });
  if (at) await at.evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.waitForFunction(() => [...document.images].every((img) => img.complete));
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** @param {import('playwright-core').Page} page @param {string} title */
async function onPage(page, title) {
  await page.getByRole('heading', { level: 1, name: title, exact: true }).waitFor();
  // Every list has finished loading (or says it is empty).
  await page.waitForFunction(() => [...document.querySelectorAll('[aria-busy="true"]')].length === 0);
  await assertLabelled(page);
}

/**
 * Every control the page shows has a name a screen reader can read: its
 * label, an aria-label or its text.
 * @param {import('playwright-core').Page} page
 */
async function assertLabelled(page) {
  const unnamed = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll('input, select, textarea, button, a[href]')) {
      if (!(el instanceof HTMLElement) || el.closest('[hidden]') || el.getAttribute('aria-hidden') === 'true') continue;
      const labelled =
        ('labels' in el && el.labels && el.labels.length > 0) ||
        el.getAttribute('aria-label') ||
        el.getAttribute('aria-labelledby') ||
        (el.textContent ?? '').trim() ||
        el.querySelector('img[alt]:not([alt=""])');
      if (!labelled) out.push(el.outerHTML.slice(0, 120));
    }
    return out;
  });
  assert.deepEqual(unnamed, [], 'controls without a name');
}

/** @param {import('playwright-core').Page} page @param {{username: string, nick: string}} who */
async function signUp(page, who) {
  await page.goto(`${BASE}/#/signup`);
  await onPage(page, '注册');
  await page.getByLabel('用户名').fill(who.username);
  await page.getByLabel('密码').fill(PASSWORD);
  await page.getByLabel('昵称').fill(who.nick);
  await page.getByRole('button', { name: '注册' }).click();
  await onPage(page, '朋友圈');
}

/** The article of the post with this text. @param {import('playwright-core').Page} page */
function postWith(page, text) {
  return page.getByRole('article').filter({ hasText: text });
}

/**
 * Waits until the home feed of the person signed in on `page`, read
 * through the API, holds `count` posts starting with one that has
 * `newest`: a new post reaches followers' timelines by a fan-out that runs
 * after the post is acknowledged. A fan-out that never comes fails here.
 * @param {import('playwright-core').Page} page
 * @param {string} newest
 * @param {number} count
 */
async function feedHolds(page, newest, count) {
  const { token, me } = await session(page);
  const deadline = Date.now() + WAIT_MS;
  /** @type {{ content: string }[]} */
  let items = [];
  while (Date.now() < deadline) {
    const res = await request('/api/v1/feed?limit=100', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    ({ items } = await res.json());
    if (items.length >= count && items[0].content.startsWith(newest)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(
    `${me.username}'s feed did not hold ${count} posts, the newest "${newest}…", within ${WAIT_MS} ms: ` +
      `it held ${items.length}, the newest ${JSON.stringify(items[0]?.content ?? null)}`,
  );
}

/**
 * A request from the test itself, bounded like every wait here, so a
 * service that stops answering fails the step instead of hanging it.
 * @param {string} path from the service's root
 * @param {RequestInit} [init]
 */
function request(path, init = {}) {
  return fetch(`${BASE}${path}`, { ...init, signal: AbortSignal.timeout(WAIT_MS) });
}

/**
 * Opens an address of the client, loading the page afresh even when it is
 * already there (a same-address `goto` would not).
 * @param {import('playwright-core').Page} page
 * @param {string} path after `#`
 */
async function visit(page, path) {
  const url = `${BASE}/#${path}`;
  if (page.url() === url) await page.reload();
  else await page.goto(url);
}

/**
 * The session the client keeps for the person signed in on `page`.
 * @param {import('playwright-core').Page} page
 * @returns {Promise<{ token: string, me: { uid: number, username: string } }>}
 */
async function session(page) {
  const kept = await page.evaluate(() => JSON.parse(localStorage.getItem('moments.session') ?? 'null'));
  assert.ok(kept?.token, `signed in on ${page.url()}`);
  return kept;
}

/**
 * The scenarios build on each other: once one fails, the later ones fail
 * at once, saying so, instead of timing out one by one.
 * @param {string} name
 * @param {() => Promise<void> | void} body
 */
function step(name, body) {
  test(name, async () => {
    if (broken) throw new Error(`not run: "${broken}" failed`);
    try {
      await body();
    } catch (error) {
      broken = name;
      // What each person's page showed when it failed, for the log.
      for (const [who, page] of [['wang', wang], ['li', li], ['admin', admin], ['zhao', zhao], ['sun', sun], ['qian', qian]]) {
        if (!page || page.isClosed()) continue;
        const path = join(tmpdir(), `moments-browser-failure-${who}.png`);
        await page.screenshot({ path, fullPage: true }).catch(() => {});
        console.error(`# ${who} was at ${page.url()}; screenshot: ${path}`);
      }
      throw error;
    }
  });
}
/** @type {string | false} */
let broken = false;

/** @type {import('playwright-core').Page} */ let wang;
/** @type {import('playwright-core').Page} */ let li;
/** @type {import('playwright-core').Page} */ let admin;
/** @type {import('playwright-core').Page} */ let zhao;
/** @type {import('playwright-core').Page} */ let sun;
/** @type {import('playwright-core').Page} */ let qian;
let postId = '';

step('the pages are served with a strict Content-Security-Policy', async () => {
  const res = await request('/');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
  const csp = res.headers.get('content-security-policy') ?? '';
  for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(directive), `${directive} in ${csp}`);
  }
  assert.ok(!csp.includes('unsafe'), csp);
  const html = await res.text();
  assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), 'no inline script');
});

step('a bad sign-up shows its error next to the field and makes no account', async () => {
  wang = await phone();
  await wang.goto(`${BASE}/#/signup`);
  await onPage(wang, '注册');
  const username = wang.getByLabel('用户名');
  const password = wang.getByLabel('密码');
  await username.fill(WANG.username);
  await password.fill('short');
  await refused(wang, { method: 'POST', path: '/api/v1/users', status: 400 }, () =>
    wang.getByRole('button', { name: '注册' }).click());
  const errorId = `${await password.getAttribute('id')}-error`;
  const error = wang.locator(`#${errorId}`);
  await error.waitFor();
  assert.match(await error.innerText(), /8/);
  assert.equal(await password.getAttribute('aria-invalid'), 'true');
  assert.ok((await password.getAttribute('aria-describedby'))?.split(' ').includes(errorId));
  assert.ok(await password.evaluate((el) => el === document.activeElement), 'the bad field has focus');
  // The username was fine: no error there, and (below) it is still free.
  assert.equal(await username.getAttribute('aria-invalid'), null);
});

step('two people sign up and land on an empty feed', async () => {
  // The name the refused sign-up above tried is free: it made nothing.
  await signUp(wang, WANG);
  li = await phone();
  await signUp(li, LI);
  await li.getByText('还没有动态').waitFor();
});

step('one finds the other by username and follows them', async () => {
  await li.getByRole('link', { name: '找人' }).click();
  await onPage(li, '找人');
  await li.getByText('你还没有关注任何人').waitFor();
  await li.getByLabel('对方的用户名').fill('nobody_here');
  await refused(li, { method: 'GET', path: '/api/v1/users', status: 404 }, () =>
    li.getByRole('button', { name: '查找' }).click());
  await li.getByText('没有找到这个用户名').waitFor();
  await li.getByLabel('对方的用户名').fill(WANG.username.toUpperCase());
  await li.getByRole('button', { name: '查找' }).click();
  await li.getByRole('heading', { name: WANG.nick }).waitFor();
  const follow = li.getByRole('button', { name: '关注', exact: true });
  await follow.click();
  const unfollow = li.getByRole('button', { name: '取消关注' });
  await unfollow.waitFor();
  await li.getByText('关注者 1').waitFor();
});

step('a bad picture URL is shown next to that picture and nothing is posted', async () => {
  await wang.getByRole('link', { name: '发表' }).click();
  await onPage(wang, '发表动态');
  await wang.getByLabel('这一刻的想法').fill('不会发出去');
  await wang.getByRole('button', { name: '添加图片' }).click();
  const picture = wang.getByLabel('图片地址 1');
  await picture.fill('ftp://example.com/a.jpg');
  await refused(wang, { method: 'POST', path: '/api/v1/posts', status: 400 }, () =>
    wang.getByRole('button', { name: '发表', exact: true }).click());
  const error = wang.locator(`#${await picture.getAttribute('id')}-error`);
  await error.waitFor();
  assert.match(await error.innerText(), /http or https URL/);
  assert.equal(await picture.getAttribute('aria-invalid'), 'true');
  await wang.getByRole('button', { name: '移除图片 1' }).click();
  await wang.getByLabel('这一刻的想法').fill('');
});

step('one posts text with emoji, three pictures, a device and a place', async () => {
  await wang.getByLabel('这一刻的想法').fill(POST_TEXT);
  await wang.getByRole('button', { name: '插入表情 🎉' }).click();
  await wang.getByRole('button', { name: '用示例图片' }).click();
  assert.equal(await wang.getByRole('group', { name: '图片预览' }).getByRole('img').count(), 3);
  await wang.getByLabel('设备型号').fill(MODEL);
  await wang.getByText('添加位置').click();
  await wang.getByLabel('地点名称').fill('西湖');
  await wang.getByLabel('纬度').fill('30.2431');
  await wang.getByLabel('经度').fill('120.1500');
  await wang.getByLabel('谁可以看').selectOption('public');
  await screenshot(wang, 'compose');
  await wang.getByRole('button', { name: '发表', exact: true }).click();
  await onPage(wang, '详情');
  postId = /#\/post\/(\d+)$/.exec(wang.url())?.[1] ?? '';
  assert.ok(postId, wang.url());
  const card = postWith(wang, POST_TEXT);
  assert.equal(await card.locator('.post-content').innerText(), `${POST_TEXT}🎉`);
  assert.equal(await card.getByRole('img', { name: /^图片 \d\/3$/ }).count(), 3);
  await card.getByText(`来自 ${MODEL}`).waitFor();
  await card.getByText('西湖').waitFor();
  await card.getByText('刚刚').waitFor();
});

step('the other sees it in their feed, likes it and comments', async () => {
  await feedHolds(li, POST_TEXT, 1);
  await li.getByRole('link', { name: '朋友圈' }).click();
  await onPage(li, '朋友圈');
  const card = postWith(li, POST_TEXT);
  await card.waitFor();
  const like = card.getByRole('button', { name: '赞', exact: true });
  assert.equal(await like.getAttribute('aria-pressed'), 'false');
  await like.click();
  const liked = card.getByRole('button', { name: '赞 1', exact: true, pressed: true });
  await liked.waitFor();
  await card.locator('.likes-row').getByRole('link', { name: LI.nick }).waitFor();

  await card.getByRole('button', { name: /评论/ }).click();
  const box = card.getByLabel('评论', { exact: true });
  await box.fill('沙发！');
  await card.getByRole('button', { name: '发送' }).click();
  await card.locator('.comment').filter({ hasText: `${LI.nick}：沙发！` }).waitFor();
  await card.getByRole('button', { name: /评论 1$/ }).waitFor();
});

step('the author sees the unread badge, reads the notifications and it clears', async () => {
  await wang.reload();
  // Followed, liked, commented on.
  const tab = wang.getByRole('link', { name: '消息，3 条未读' });
  await tab.waitFor();
  await tab.click();
  await onPage(wang, '消息');
  await wang.getByRole('listitem').filter({ hasText: `${LI.nick} 赞了你的动态` }).waitFor();
  await wang.getByRole('listitem').filter({ hasText: `${LI.nick} 评论了你的动态` }).waitFor();
  await wang.getByRole('listitem').filter({ hasText: `${LI.nick} 关注了你` }).waitFor();
  await wang.getByRole('link', { name: '消息', exact: true }).waitFor();
  assert.equal(await wang.locator('.badge').isHidden(), true);
});

step('the author replies on the post page; counts and texts show on both sides', async () => {
  await visit(wang, `/post/${postId}`);
  await onPage(wang, '详情');
  const card = postWith(wang, POST_TEXT);
  await card.locator('.likes-row').getByRole('link', { name: LI.nick }).waitFor();
  const comments = wang.getByRole('list', { name: '全部评论' });
  await comments.getByText('沙发！').waitFor();
  await comments.getByRole('button', { name: `回复 ${LI.nick}` }).click();
  const box = card.getByLabel(`回复 ${LI.nick}`);
  assert.ok(await box.evaluate((el) => el === document.activeElement), 'the reply box has focus');
  await box.fill('谢谢～');
  await card.getByRole('button', { name: '发送' }).click();
  await comments.locator('.comment').filter({ hasText: `${WANG.nick} 回复 ${LI.nick}：谢谢～` }).waitFor();
  await card.getByRole('button', { name: '赞 1', exact: true, pressed: false }).waitFor();
  await card.getByRole('button', { name: /评论 2$/ }).waitFor();
  await screenshot(wang, 'post');

  await li.reload();
  await onPage(li, '朋友圈');
  const seen = postWith(li, POST_TEXT);
  await seen.locator('.comment').filter({ hasText: `${WANG.nick} 回复 ${LI.nick}：谢谢～` }).waitFor();
  await seen.getByRole('button', { name: '赞 1', exact: true, pressed: true }).waitFor();
  await seen.getByRole('button', { name: /评论 2$/ }).waitFor();
  await screenshot(li, 'feed');
});

step('the like is undone and redone from the keyboard', async () => {
  const card = postWith(li, POST_TEXT);
  const like = card.getByRole('button', { name: '赞 1', exact: true, pressed: true });
  await like.focus();
  await li.keyboard.press('Enter');
  const unliked = card.getByRole('button', { name: '赞', exact: true, pressed: false });
  await unliked.waitFor();
  assert.equal(await unliked.getAttribute('aria-pressed'), 'false');
  assert.ok(await unliked.evaluate((el) => el === document.activeElement), 'focus stays on the like button');
  await li.keyboard.press('Space');
  await card.getByRole('button', { name: '赞 1', exact: true, pressed: true }).waitFor();
});

step('an admin maps the device model; the post shows the name after a reload', async () => {
  admin = await phone();
  await admin.goto(`${BASE}/#/signin`);
  await onPage(admin, '登录');
  await admin.getByLabel('用户名').fill(ADMIN_USERNAME);
  await admin.getByLabel('密码').fill(ADMIN_PASSWORD);
  await admin.getByRole('button', { name: '登录' }).click();
  await onPage(admin, '朋友圈');
  await admin.getByRole('link', { name: '我', exact: true }).click();
  await admin.getByRole('link', { name: '管理后台' }).click();
  await onPage(admin, '管理后台');
  await admin.getByText('表里还没有型号').waitFor();

  // A blank name is refused next to its field.
  await admin.getByText('添加或替换一个型号').click();
  const form = admin.locator('details.add-model');
  await form.getByLabel('型号').fill(MODEL);
  await form.getByLabel('英文名').fill('OnePlus 6');
  await refused(admin, { method: 'PUT', path: `/api/v1/admin/device-models/${encodeURIComponent(MODEL)}`, status: 400 }, () =>
    form.getByRole('button', { name: '保存型号' }).click());
  const zh = form.getByLabel('中文名');
  const error = admin.locator(`#${await zh.getAttribute('id')}-error`);
  await error.waitFor();
  assert.equal(await zh.getAttribute('aria-invalid'), 'true');
  await admin.getByText('表里还没有型号').waitFor();

  await zh.fill('一加 6');
  await form.getByRole('button', { name: '保存型号' }).click();
  await admin.locator('tr[data-model="oneplus a6000"]').getByText('一加 6').waitFor();
  await admin.getByText('共 1 个型号').waitFor();

  await visit(wang, `/post/${postId}`);
  await onPage(wang, '详情');
  await postWith(wang, POST_TEXT).getByText('来自 一加 6').waitFor();
});

step('a bulk import shows what it adds and changes before it is applied', async () => {
  const text = admin.getByLabel('导入内容');
  await text.fill('model,zh,en,brand\nONEPLUS A6000,一加 6,OnePlus 6,OnePlus\nM2004J19C,红米 9,Redmi 9,Xiaomi\n');
  const apply = admin.getByRole('button', { name: '应用导入' });
  assert.equal(await apply.isDisabled(), true, 'nothing to apply before a preview');
  await admin.getByRole('button', { name: '预览' }).click();
  await admin.getByText('新增 1', { exact: true }).first().waitFor();
  await admin.getByText('修改 1', { exact: true }).first().waitFor();
  await admin.locator('.preview-added tr[data-model="m2004j19c"]').getByText('红米 9 / Redmi 9 · Xiaomi').waitFor();
  await admin.locator('.preview-changed tr[data-model="oneplus a6000"] ins').getByText('一加 6 / OnePlus 6 · OnePlus').waitFor();
  // The preview wrote nothing.
  await admin.getByText('共 1 个型号').waitFor();
  await screenshot(admin, 'admin-import');

  await apply.click();
  await admin.getByText('已导入 2 行').waitFor();
  await admin.getByText('共 2 个型号').waitFor();

  // A bad row is named, next to the text, and nothing is written.
  await text.fill('model,zh,en\nGOOD1,好,Good\n,空,Empty\n');
  await refused(admin, { method: 'POST', path: '/api/v1/admin/device-models/import/preview', status: 400 }, () =>
    admin.getByRole('button', { name: '预览' }).click());
  const error = admin.locator(`#${await text.getAttribute('id')}-error`);
  await error.waitFor();
  assert.match(await error.innerText(), /^第 2 行：/);
});

step('the admin searches, edits and deletes rows, and checks and rebuilds the live state', async () => {
  const search = admin.getByLabel('搜索型号或名称');
  await search.fill('redmi');
  await admin.getByText('共 1 个型号').waitFor();
  await admin.getByRole('button', { name: '编辑 m2004j19c' }).click();
  const row = admin.locator('tr[data-model="m2004j19c"]');
  const zh = row.getByLabel('中文名');
  assert.ok(await zh.evaluate((el) => el === document.activeElement), 'the edit form has focus');
  await zh.fill('红米 9 Pro');
  await row.getByRole('button', { name: '保存' }).click();
  await admin.locator('tr[data-model="m2004j19c"]').getByText('红米 9 Pro').waitFor();
  await admin.getByRole('button', { name: '删除 m2004j19c' }).click();
  await admin.getByText('已删除 m2004j19c').waitFor();
  await search.fill('');
  await admin.getByText('共 1 个型号').waitFor();
  await screenshot(admin, 'admin');

  // One post so far, by one of the three accounts.
  await admin.getByRole('button', { name: '检查' }).click();
  await admin.getByText('检查了 1 条动态和 3 个用户：不一致 0').waitFor();
  await admin.getByRole('button', { name: '重建' }).click();
  await admin.getByText('已重建 1 条动态和 3 个用户').waitFor();
});

step('someone without the admin role gets no console', async () => {
  await visit(li, '/admin');
  await onPage(li, '管理后台');
  await li.getByText('这里需要审核员或管理员身份。').waitFor();
  await li.getByRole('link', { name: '我', exact: true }).click();
  await onPage(li, '我');
  // The console's link would be in this menu, drawn with the album's.
  const menu = li.getByRole('navigation', { name: '我', exact: true });
  await menu.getByRole('link', { name: '我的相册' }).waitFor();
  assert.deepEqual(await menu.getByRole('link').allTextContents(), ['我的相册', '下载我的数据']);
});

step('the feed loads its next pages by cursor as it scrolls', async () => {
  const { token } = await session(wang);
  for (let i = 1; i <= 14; i += 1) {
    const res = await request('/api/v1/posts', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ category: 'TEXT', content: `第 ${i} 条` }),
    });
    assert.equal(res.status, 201, await res.text());
  }
  await feedHolds(li, '第 14 条', 15);
  await visit(li, '/feed');
  await onPage(li, '朋友圈');
  // A page is 10 posts; the 15th (the first one) arrives only by scrolling.
  await postWith(li, '第 14 条').waitFor();
  assert.equal(await postWith(li, POST_TEXT).count(), 0);
  // Scrolled to the end until the first post shows, within one wait's
  // time: each time the end comes into view the next page is asked for.
  await li
    .waitForFunction((text) => {
      window.scrollTo(0, document.body.scrollHeight);
      return [...document.querySelectorAll('article')].some((card) => card.textContent?.includes(text));
    }, POST_TEXT, { polling: 100 })
    .catch((error) => assert.fail(`scrolling to the end of the feed did not bring the first post "${POST_TEXT}": ${error.message}`));
  await li.getByText('没有更多了').waitFor();
  assert.equal(await li.getByRole('article').count(), 15);
  const ids = await li.getByRole('article').evaluateAll((els) => els.map((el) => el.getAttribute('data-post-id')));
  assert.equal(new Set(ids).size, ids.length, 'no post twice');
});

step('the author deletes their reply, then a post', async () => {
  await visit(wang, `/post/${postId}`);
  await onPage(wang, '详情');
  const comments = wang.getByRole('list', { name: '全部评论' });
  const reply = comments.locator('.comment').filter({ hasText: '谢谢～' });
  await reply.getByRole('button', { name: '删除评论' }).click();
  await reply.waitFor({ state: 'detached' });
  await postWith(wang, POST_TEXT).getByRole('button', { name: /评论 1$/ }).waitFor();

  const { me } = await session(wang);
  await wang.goto(`${BASE}/#/u/${me.uid}`);
  await onPage(wang, WANG.nick);
  const doomed = postWith(wang, '第 14 条');
  await doomed.getByRole('button', { name: '删除' }).click();
  await doomed.waitFor({ state: 'detached' });
  const res = await request(`/api/v1/users/${me.uid}/posts?limit=100`);
  assert.equal(res.status, 200);
  const page = await res.json();
  assert.ok(!page.items.some((p) => p.content === '第 14 条'), 'the post is gone');
});

step('one unfollows from the album; the other\'s posts leave their feed', async () => {
  const { me } = await session(wang);
  await visit(li, `/u/${me.uid}`);
  await onPage(li, WANG.nick);
  await li.getByText('关注者 1').waitFor();
  await li.getByRole('button', { name: '取消关注' }).click();
  const follow = li.getByRole('button', { name: '关注', exact: true });
  await follow.waitFor();
  await li.getByText('关注者 0').waitFor();
  // A public album stays open to anyone (its newest post: 第 14 条 was deleted).
  await postWith(li, '第 13 条').waitFor();
  await li.getByRole('link', { name: '朋友圈' }).click();
  await onPage(li, '朋友圈');
  await li.getByText('还没有动态').waitFor();
});

step('in English the words, times and device names change', async () => {
  await visit(wang, `/post/${postId}`);
  await onPage(wang, '详情');
  await wang.getByRole('button', { name: 'Switch to English' }).click();
  await onPage(wang, 'Post');
  const card = postWith(wang, POST_TEXT);
  await card.getByText('from OnePlus 6').waitFor();
  await card.getByText(/^(just now|\d+ min ago)$/).waitFor();
  await wang.getByRole('link', { name: 'Moments', exact: true }).waitFor();
  await wang.getByRole('button', { name: '切换到中文' }).click();
  await onPage(wang, '详情');
});

step('markup in names, posts and comments is shown as text, never run', async () => {
  const mallory = await phone();
  await signUp(mallory, { username: `mallory_${RUN}`, nick: '<b>M</b>' });
  await mallory.getByRole('link', { name: '发表' }).click();
  await onPage(mallory, '发表动态');
  await mallory.getByLabel('这一刻的想法').fill(HOSTILE);
  await mallory.getByLabel('设备型号').fill('<svg onload=alert(1)>');
  await mallory.getByRole('button', { name: '发表', exact: true }).click();
  await onPage(mallory, '详情');
  const card = mallory.getByRole('article');
  await card.getByRole('button', { name: /评论/ }).click();
  await card.getByLabel('评论', { exact: true }).fill(HOSTILE);
  await card.getByRole('button', { name: '发送' }).click();
  await mallory.getByRole('list', { name: '全部评论' }).locator('.comment-content').waitFor();
  assert.equal(await card.locator('.post-content').textContent(), HOSTILE);
  assert.equal(await card.locator('.post-author').textContent(), '<b>M</b>');
  assert.equal(await card.locator('.post-device').textContent(), '来自 <svg onload=alert(1)>');
  assert.equal(await mallory.locator('.comment-content').textContent(), HOSTILE);
  // Nothing became an element, and nothing ran.
  assert.equal(await mallory.locator('main img[src="x"], main script, main b, main svg').count(), 0);
  assert.ok((await mallory.title()).startsWith('详情'), await mallory.title());
  await mallory.context().close();
});

// Reporting and moderation. 赵六 follows 王五 and reports his comment, his
// account and his post; the admin makes 李四 a moderator, who works the
// queue: removes the post, overturns the strike on appeal, holds a term,
// dismisses two cases at once and suspends the account.
const ZHAO = { username: `zhaoliu_${RUN}`, nick: '赵六' };
const RULES = ['友善待人', '不发广告'];
const AD_TEXT = '限时特价，私信我下单';
const AD_COMMENT = '加我微信 abc123';
const NOTE = '广告内容，已移除';
const APPEAL = '这是我自己做的东西，不是广告';
const SUSPENSION_APPEAL = '那些私信是老客户问的，不是骚扰';
const HOLD_TERM = '代购';
const HELD_TEXT = '代购名牌包，需要的私信';
// A second held post of the same author joins the first's case.
const HELD_AGAIN = '代购手表，也私信';
let wangUid = 0;
let adPostId = 0;
let adCaseId = '';
let heldPostId = '';

/**
 * A call of the API as the person signed in on `page`.
 * @param {import('playwright-core').Page} page
 * @param {string} method
 * @param {string} path under /api/v1
 * @param {unknown} [body]
 */
async function api(page, method, path, body) {
  const { token } = await session(page);
  return request(`/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/**
 * Waits until `check` holds, asking again every 100 ms for one wait's time:
 * for what the service does in the background after it answered.
 * @param {string} what
 * @param {() => Promise<boolean>} check
 */
async function eventually(what, check) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`${what}: not within ${WAIT_MS} ms`);
}

/** The texts of the posts anyone may see in this account's album. @param {number} uid */
async function albumTexts(uid) {
  const res = await request(`/api/v1/users/${uid}/posts?limit=100`);
  assert.equal(res.status, 200);
  return (await res.json()).items.map((/** @type {{ content: string }} */ p) => p.content);
}

/**
 * The moderation case shown on `page` of this kind holding this text.
 * @param {import('playwright-core').Page} page
 * @param {'post' | 'comment' | 'user' | 'appeal'} kind
 * @param {string} text
 */
function caseIn(page, kind, text) {
  return page.getByRole('list', { name: '举报队列' }).locator(`.queue-item[data-kind="${kind}"]`).filter({ hasText: text });
}

step('a comment and an account are reported from the post page and the album', async () => {
  ({ me: { uid: wangUid } } = await session(wang));
  // The service's rules, which a report may cite by number.
  let res = await api(admin, 'PUT', '/admin/instance', { name: 'moments', contact: 'mod@example.com', rules: RULES });
  assert.equal(res.status, 200, await res.text());
  zhao = await phone();
  await signUp(zhao, ZHAO);
  res = await api(zhao, 'PUT', `/users/${wangUid}/follow`);
  assert.equal(res.status, 200, await res.text());
  res = await api(wang, 'POST', '/posts', { category: 'TEXT', content: AD_TEXT });
  const posted = await res.text();
  assert.equal(res.status, 201, posted);
  adPostId = JSON.parse(posted).id;
  res = await api(wang, 'POST', `/posts/${adPostId}/comments`, { content: AD_COMMENT });
  assert.equal(res.status, 201, await res.text());

  await visit(zhao, `/post/${adPostId}`);
  await onPage(zhao, '详情');
  const comment = zhao.getByRole('list', { name: '全部评论' }).locator('.comment').filter({ hasText: AD_COMMENT });
  await comment.getByRole('button', { name: `投诉 ${WANG.nick} 的评论` }).click();
  const panel = zhao.getByRole('region', { name: `投诉 ${WANG.nick} 的评论` });
  const reason = panel.getByLabel('投诉原因');
  await reason.waitFor();
  assert.ok(await reason.evaluate((el) => el === document.activeElement), 'the reason has focus');
  await reason.selectOption({ label: '垃圾广告' });
  await panel.getByRole('button', { name: '提交投诉' }).click();
  await panel.getByText('已投诉，谢谢').waitFor();
  await panel.getByRole('button', { name: '完成' }).click();
  await panel.waitFor({ state: 'detached' });

  await visit(zhao, `/u/${wangUid}`);
  await onPage(zhao, WANG.nick);
  await zhao.getByRole('button', { name: `投诉 ${WANG.nick}`, exact: true }).click();
  const account = zhao.getByRole('region', { name: `投诉 ${WANG.nick}`, exact: true });
  await account.getByLabel('投诉原因').selectOption({ label: '骚扰' });
  await account.getByLabel('补充说明（可选）').fill('一直私信推销');
  await account.getByRole('button', { name: '提交投诉' }).click();
  await account.getByText('已投诉，谢谢').waitFor();
  await account.getByRole('button', { name: '完成' }).click();
  await account.waitFor({ state: 'detached' });
});

step('a post is reported from the feed, citing a rule, and its author blocked from the offer', async () => {
  await feedHolds(zhao, AD_TEXT, 1);
  await visit(zhao, '/feed');
  await onPage(zhao, '朋友圈');
  const card = postWith(zhao, AD_TEXT);
  await card.getByRole('button', { name: '投诉这条动态' }).click();
  const panel = card.getByRole('region', { name: '投诉这条动态' });
  const reason = panel.getByLabel('投诉原因');
  await reason.waitFor();
  // No reason: said next to the field, and nothing is sent.
  await panel.getByRole('button', { name: '提交投诉' }).click();
  const error = zhao.locator(`#${await reason.getAttribute('id')}-error`);
  await error.waitFor();
  assert.equal(await error.innerText(), '请选择投诉原因');
  assert.equal(await reason.getAttribute('aria-invalid'), 'true');
  await reason.selectOption({ label: '垃圾广告' });
  await panel.getByLabel('补充说明（可选）').fill('一直发广告');
  assert.deepEqual(
    await panel.getByRole('group', { name: '违反了哪些社区规则（可选）' }).getByRole('checkbox').evaluateAll(
      (boxes) => boxes.map((box) => box.labels?.[0]?.textContent)),
    ['1. 友善待人', '2. 不发广告'],
  );
  await panel.getByLabel('2. 不发广告').check();
  await panel.getByRole('button', { name: '提交投诉' }).click();
  await panel.getByText('已投诉，谢谢').waitFor();
  await screenshot(zhao, 'report', card);
  // 王五 does not follow 赵六: there is nothing to hide from him.
  assert.equal(await panel.getByRole('button', { name: /不让/ }).count(), 0);
  await panel.getByRole('button', { name: `不看 ${WANG.nick} 的朋友圈` }).waitFor();
  await panel.getByRole('button', { name: `拉黑 ${WANG.nick}` }).click();
  await panel.getByText(`已拉黑 ${WANG.nick}`).waitFor();
  // A block covers a mute: it is no longer offered.
  assert.equal(await panel.getByRole('button', { name: /不看/ }).count(), 0);

  await visit(zhao, '/feed');
  await onPage(zhao, '朋友圈');
  await zhao.getByText('还没有动态').waitFor();
  assert.equal(await postWith(zhao, AD_TEXT).count(), 0);
});

step('the reporter finds the reports under My reports, under review', async () => {
  await zhao.getByRole('link', { name: '我', exact: true }).click();
  await onPage(zhao, '我');
  const reports = zhao.getByRole('list', { name: '我的投诉' });
  const post = reports.getByRole('listitem').filter({ hasText: '动态 · 垃圾广告' });
  await post.getByText('审核中').waitFor();
  await post.getByText('你的说明：一直发广告').waitFor();
  await reports.getByRole('listitem').filter({ hasText: '评论 · 垃圾广告' }).getByText('审核中').waitFor();
  await reports.getByRole('listitem').filter({ hasText: '账号 · 骚扰' }).getByText('审核中').waitFor();
  assert.equal(await reports.getByRole('listitem').count(), 3);
  await zhao.getByRole('list', { name: '我的违规记录' }).waitFor({ state: 'attached' });
  await zhao.getByText('没有违规记录').waitFor();
});

step('an admin makes someone a moderator; they get the queue but not the admin tools', async () => {
  await visit(admin, '/admin');
  await onPage(admin, '管理后台');
  const roles = admin.getByRole('region', { name: '角色' });
  await roles.getByLabel('用户 uid 或用户名').fill(LI.username);
  await roles.getByLabel('角色', { exact: true }).selectOption({ label: '审核员' });
  await roles.getByRole('button', { name: '设置角色' }).click();
  await roles.getByText(`已将 ${LI.nick} (${LI.username}) 设为审核员`).waitFor();

  // The role is read afresh: the Me page now links the console.
  await visit(li, '/me');
  await onPage(li, '我');
  await li.getByRole('navigation', { name: '我', exact: true }).getByRole('link', { name: '管理后台' }).click();
  await onPage(li, '管理后台');
  await li.getByRole('heading', { name: '举报队列' }).waitFor();
  assert.deepEqual(await li.getByRole('navigation', { name: '管理功能' }).getByRole('link').allTextContents(), ['举报队列', '过滤词']);
  for (const admins of ['设备型号', '批量导入', '实时状态', '角色', '审计日志']) {
    assert.equal(await li.getByRole('heading', { name: admins, exact: true }).count(), 0, `${admins} is for admins`);
  }
  assert.equal(await li.getByRole('button', { name: '检查' }).count(), 0);
});

step('the moderator reads the reported post in the queue and removes it with a shared note', async () => {
  const item = caseIn(li, 'post', AD_TEXT);
  await item.locator('.queue-account').getByRole('link', { name: WANG.nick }).waitFor();
  await item.getByText('1 人投诉').waitFor();
  await item.locator('.categories').getByText('垃圾广告').waitFor();
  assert.equal(await item.locator('.snapshot-text').innerText(), AD_TEXT);
  await item.getByRole('list', { name: '全部投诉' }).getByText('一直发广告').waitFor();
  adCaseId = (await item.getAttribute('data-case-id')) ?? '';
  assert.ok(adCaseId);

  await item.getByRole('button', { name: '全部投诉与账号记录' }).click();
  const detail = item.locator('.queue-detail');
  await detail.getByText('违反规则：2. 不发广告').waitFor();
  await detail.getByText('这个账号没有更早的处理记录').waitFor();
  await screenshot(li, 'admin-queue', item);

  await item.getByText('处理', { exact: true }).click();
  const form = item.locator('form.act-form');
  await form.getByLabel('处理方式').selectOption({ label: '移除内容' });
  await form.getByLabel('把备注告知投诉人和被处理的账号').check();
  // Sharing needs a note: said next to the note.
  await refused(li, { method: 'POST', path: `/api/v1/admin/reports/${adCaseId}/actions`, status: 422 }, () =>
    form.getByRole('button', { name: '确定' }).click());
  const note = form.getByLabel('备注（可选）');
  const error = li.locator(`#${await note.getAttribute('id')}-error`);
  await error.waitFor();
  assert.match(await error.innerText(), /note is needed/);
  assert.equal(await note.getAttribute('aria-invalid'), 'true');
  await note.fill(NOTE);
  await form.getByRole('button', { name: '确定' }).click();
  await item.getByText('已处理：移除内容').waitFor();
  await item.getByText(`备注：${NOTE}`).waitFor();
  await item.getByText('已告知投诉人').waitFor();
  assert.equal(await item.getByRole('checkbox').count(), 0, 'a closed item is not offered for a bulk action');
  assert.ok(!(await albumTexts(wangUid)).includes(AD_TEXT), 'the post is gone for everyone else');
});

step('the reporter sees the outcome under My reports', async () => {
  await visit(zhao, '/me');
  await onPage(zhao, '我');
  const post = zhao.getByRole('list', { name: '我的投诉' }).getByRole('listitem').filter({ hasText: '动态 · 垃圾广告' });
  await post.getByText('已处理', { exact: true }).waitFor();
  await post.getByText(`审核员说明：${NOTE}`).waitFor();
  await screenshot(zhao, 'me-reports', zhao.getByRole('region', { name: '我的投诉' }));

  // Reporters are told in the background: once the service holds the
  // notification, the page shows it as the service's, linking to My reports.
  await eventually(`赵六 is told the report was closed`, async () => {
    const res = await api(zhao, 'GET', '/notifications?limit=20');
    assert.equal(res.status, 200);
    return (await res.json()).items.some((/** @type {{ kind: string }} */ n) => n.kind === 'report_closed');
  });
  await visit(zhao, '/notifications');
  await onPage(zhao, '消息');
  const told = zhao.locator('li[data-kind="report_closed"]');
  await told.getByText('审核通知').waitFor();
  await told.getByRole('link', { name: '你的投诉有了处理结果' }).click();
  await onPage(zhao, '我');
});

step('the author sees the post removed, the strike on the Me page, and appeals it', async () => {
  await visit(wang, `/post/${adPostId}`);
  await onPage(wang, '详情');
  const card = postWith(wang, AD_TEXT);
  await card.getByText('已被审核移除').waitFor();
  await card.getByRole('link', { name: '查看处理记录和申诉' }).click();
  await onPage(wang, '我');
  const strike = wang.getByRole('list', { name: '我的违规记录' }).getByRole('listitem').filter({ hasText: AD_TEXT });
  await strike.getByText('内容被移除').waitFor();
  await strike.getByText('类别：垃圾广告').waitFor();
  await strike.getByText(`原因：${NOTE}`).waitFor();
  await strike.getByText('申诉', { exact: true }).click();
  const text = strike.getByLabel('申诉理由');
  await refused(wang, { method: 'POST', path: `/api/v1/me/strikes/${adCaseId}/appeal`, status: 400 }, () =>
    strike.getByRole('button', { name: '提交申诉' }).click());
  const error = wang.locator(`#${await text.getAttribute('id')}-error`);
  await error.waitFor();
  assert.match(await error.innerText(), /blank/);
  await text.fill(APPEAL);
  await strike.getByRole('button', { name: '提交申诉' }).click();
  await strike.getByText('申诉审核中').waitFor();
  await strike.getByText(`我的申诉：${APPEAL}`).waitFor();
  assert.equal(await strike.getByRole('button', { name: '提交申诉' }).count(), 0, 'one appeal per strike');
  await screenshot(wang, 'me-strikes', wang.getByRole('region', { name: '我的违规记录' }));
});

step('the moderator finds the appeal in the queue and overturns the strike', async () => {
  await visit(li, '/admin');
  await onPage(li, '管理后台');
  const item = caseIn(li, 'appeal', APPEAL);
  await item.getByText('对“移除内容”的申诉：').waitFor();
  assert.equal(await item.locator('.snapshot-text').innerText(), AD_TEXT);
  // The case's detail lists the account's strikes: the removal, appealed
  // and not (yet) withdrawn.
  await item.getByRole('button', { name: '全部投诉与账号记录' }).click();
  const strikes = item.locator('.queue-detail').getByRole('list', { name: '这个账号的违规记录' });
  const removal = strikes.locator(`li[data-strike-id="${adCaseId}"]`);
  await removal.waitFor();
  assert.equal(await strikes.getByRole('listitem').count(), 1);
  assert.equal(await removal.getAttribute('data-action'), 'remove_content');
  await removal.getByText('内容被移除', { exact: true }).waitFor();
  await removal.getByText('已申诉', { exact: true }).waitFor();
  await removal.getByText('类别：垃圾广告').waitFor();
  assert.equal(await removal.getByRole('link', { name: '动态' }).getAttribute('href'), `#/post/${adPostId}`);
  assert.equal(await removal.getByText('已撤销').count(), 0, 'not withdrawn before the overturn');
  await item.getByText('处理', { exact: true }).click();
  const action = item.getByLabel('处理方式');
  assert.deepEqual(await action.locator('option').allTextContents(), ['请选择', '驳回申诉（维持处罚）', '撤销处罚']);
  await action.selectOption({ label: '撤销处罚' });
  await item.getByRole('button', { name: '确定' }).click();
  await item.getByText('已处理：撤销处罚').waitFor();

  // The post is back, for its author without the banner, and for everyone.
  await visit(wang, `/post/${adPostId}`);
  await onPage(wang, '详情');
  await postWith(wang, AD_TEXT).locator('.post-content').waitFor();
  assert.equal(await wang.locator('.moderation-banner').count(), 0);
  assert.ok((await albumTexts(wangUid)).includes(AD_TEXT), 'the post is back');
  await visit(wang, '/me');
  await onPage(wang, '我');
  const strike = wang.getByRole('list', { name: '我的违规记录' }).getByRole('listitem').filter({ hasText: AD_TEXT });
  await strike.getByText('申诉成功，处罚已撤销').waitFor();
  await strike.getByText(/^已撤销（/).waitFor();
});

step('a moderator adds a hold filter; a post with its term waits for review', async () => {
  const filters = li.getByRole('region', { name: '过滤词' });
  await filters.getByText('还没有过滤词').waitFor();
  await filters.getByText('添加过滤词').click();
  const form = filters.locator('details.add-filter');
  await form.getByLabel('词语').fill(HOLD_TERM);
  await form.getByLabel('命中时').selectOption({ label: '暂扣待审' });
  await refused(li, { method: 'POST', path: '/api/v1/admin/filters', status: 400 }, () =>
    form.getByRole('button', { name: '添加', exact: true }).click());
  const reason = form.getByLabel('公开的原因');
  const error = li.locator(`#${await reason.getAttribute('id')}-error`);
  await error.waitFor();
  assert.equal(await reason.getAttribute('aria-invalid'), 'true');
  await reason.fill('疑似代购广告');
  await form.getByRole('button', { name: '添加', exact: true }).click();
  const row = filters.getByRole('listitem').filter({ hasText: HOLD_TERM });
  await row.getByText('暂扣待审').waitFor();
  await row.getByText('疑似代购广告').waitFor();
  await filters.getByText(`已保存“${HOLD_TERM}”`).waitFor();
  await screenshot(li, 'admin-filters', filters);

  await visit(wang, '/compose');
  await onPage(wang, '发表动态');
  await wang.getByLabel('这一刻的想法').fill(HELD_TEXT);
  await wang.getByRole('button', { name: '发表', exact: true }).click();
  await onPage(wang, '详情');
  heldPostId = /#\/post\/(\d+)$/.exec(wang.url())?.[1] ?? '';
  assert.ok(heldPostId, wang.url());
  await postWith(wang, HELD_TEXT).getByText('等待审核').waitFor();
  assert.ok(!(await albumTexts(wangUid)).includes(HELD_TEXT), 'a held post is its author\'s alone');
  const res = await api(wang, 'POST', '/posts', { category: 'TEXT', content: HELD_AGAIN });
  const again = await res.text();
  assert.equal(res.status, 201, again);
  assert.equal(JSON.parse(again).moderation, 'held');
});

step('a bulk dismiss closes two items at once, and publishes the held post', async () => {
  await visit(li, '/admin');
  await onPage(li, '管理后台');
  const held = caseIn(li, 'post', HELD_TEXT);
  // One case for both of the author's held posts, the newest listed.
  await held.getByText('被过滤词暂扣的 2 条动态（第一条：疑似代购广告）。驳回即全部发布，其他处理全部移除。').waitFor();
  await held.getByRole('list', { name: '最新暂扣的动态' }).getByText(HELD_AGAIN).waitFor();
  const comment = caseIn(li, 'comment', AD_COMMENT);
  await held.getByRole('checkbox').check();
  await comment.getByRole('checkbox').check();
  const queue = li.getByRole('region', { name: '举报队列' });
  await queue.getByText('批量处理选中的项').click();
  const bulk = queue.locator('form.bulk-form');
  await bulk.getByLabel('处理方式').selectOption({ label: '驳回' });
  await bulk.getByLabel('备注（可选）').fill('没有违规');
  await screenshot(li, 'admin-bulk', queue);
  await bulk.getByRole('button', { name: '处理选中的 2 项' }).click();
  await queue.getByText('已处理 2 项').waitFor();
  await held.waitFor({ state: 'detached' });
  await comment.waitFor({ state: 'detached' });
  // The account's report is still open.
  await caseIn(li, 'user', '一直私信推销').waitFor();

  await queue.getByLabel('状态').selectOption({ label: '已驳回' });
  await held.getByText('已处理：驳回').waitFor();
  await comment.getByText('已处理：驳回').waitFor();
  assert.equal(await caseIn(li, 'user', '一直私信推销').count(), 0);

  await visit(wang, `/post/${heldPostId}`);
  await onPage(wang, '详情');
  await postWith(wang, HELD_TEXT).locator('.post-content').waitFor();
  assert.equal(await wang.locator('.moderation-banner').count(), 0);
  assert.ok((await albumTexts(wangUid)).includes(HELD_TEXT), 'published');
  assert.ok((await albumTexts(wangUid)).includes(HELD_AGAIN), 'both published');
});

step('a suspended account is told why at sign-in and appeals from there; a moderator finds the appeal, and an admin lifts the suspension', async () => {
  // 王五 signs out here first, so his page asks nothing with a session
  // the suspension is about to end.
  await wang.evaluate(() => localStorage.removeItem('moments.session'));
  await visit(wang, '/signin');
  await onPage(wang, '登录');

  await visit(li, '/admin');
  await onPage(li, '管理后台');
  const item = caseIn(li, 'user', '一直私信推销');
  await item.getByText('处理', { exact: true }).click();
  const form = item.locator('form.act-form');
  const action = form.getByLabel('处理方式');
  assert.deepEqual(await action.locator('option').allTextContents(), ['请选择', '驳回（没有违规）', '警告', '暂停使用', '封禁']);
  const days = form.getByLabel('暂停天数');
  assert.equal(await days.isVisible(), false, 'days only for a suspension');
  await action.selectOption({ label: '暂停使用' });
  await days.fill('3');
  await form.getByRole('button', { name: '确定' }).click();
  await item.getByText('已处理：暂停使用').waitFor();

  await wang.getByLabel('用户名').fill(WANG.username);
  await wang.getByLabel('密码').fill(PASSWORD);
  const answered = wang.waitForResponse((response) => new URL(response.url()).pathname === '/api/v1/sessions');
  await refused(wang, { method: 'POST', path: '/api/v1/sessions', status: 403 }, () =>
    wang.getByRole('button', { name: '登录' }).click());
  /** @type {{ code: string, until: number, strikeId: number }} */
  const problem = await (await answered).json();
  assert.equal(problem.code, 'account_suspended');
  assert.ok(problem.until > Date.now() && problem.strikeId > 0, JSON.stringify(problem));
  // The sign-in form's own alert: the page now holds the appeal's form too.
  const alert = wang.getByRole('form', { name: '登录' }).locator('.form-error');
  await alert.waitFor();
  assert.equal(await alert.innerText(), '这个账号现在不能登录。');
  // Until when, in the reader's words and zone, and the appeal of the
  // strike that holds the account, sent with the username and password
  // just typed: it has no session to appeal from Me.
  const until = dateText(problem.until, Date.now(), 'zh', 'Asia/Shanghai');
  const suspended = wang.getByRole('region', { name: `这个账号暂停使用至 ${until}，到时可以再登录。` });
  await suspended.waitFor();
  await screenshot(wang, 'signin-suspended');
  const appeal = suspended.getByRole('form', { name: '申诉' });
  const reason = appeal.getByLabel('申诉理由');
  // Nothing said: told next to the field, and nothing is sent.
  await appeal.getByRole('button', { name: '提交申诉' }).click();
  const blank = wang.locator(`#${await reason.getAttribute('id')}-error`);
  await blank.waitFor();
  assert.equal(await blank.innerText(), '请填写申诉理由');
  assert.equal(await reason.getAttribute('aria-invalid'), 'true');
  await reason.fill(SUSPENSION_APPEAL);
  await appeal.getByRole('button', { name: '提交申诉' }).click();
  await suspended.getByText('申诉已提交，审核员会复核。').waitFor();
  assert.equal(await appeal.count(), 0, 'the form gives way to the answer');
  // One appeal per strike: signing in again offers it again, and says so.
  await refused(wang, { method: 'POST', path: '/api/v1/sessions', status: 403 }, () =>
    wang.getByRole('button', { name: '登录' }).click());
  await reason.fill('再申诉一次');
  await refused(wang, { method: 'POST', path: '/api/v1/appeals', status: 409 }, () =>
    appeal.getByRole('button', { name: '提交申诉' }).click());
  const again = appeal.locator('.form-error');
  await again.waitFor();
  assert.equal(await again.innerText(), '这次处罚已经申诉过了，请等待审核结果。');
  assert.ok(await wang.evaluate(() => localStorage.getItem('moments.session') === null), 'still signed out');

  // The appeal is in the moderators' queue, about the suspension.
  await visit(li, '/admin');
  await onPage(li, '管理后台');
  const appealed = caseIn(li, 'appeal', SUSPENSION_APPEAL);
  await appealed.getByText('对“暂停使用”的申诉：').waitFor();
  // A suspended account has no card (no name) for the service to give:
  // the case names it by its uid.
  await appealed.locator('.queue-account').getByText(`uid ${wangUid}`).waitFor();

  await visit(admin, '/admin');
  await onPage(admin, '管理后台');
  const lift = admin.getByRole('region', { name: '解除暂停或封禁' });
  const who = lift.getByLabel('用户 uid 或用户名');
  await who.fill(String(wangUid));
  await lift.getByRole('button', { name: '解除', exact: true }).click();
  await lift.getByText(`已解除 uid ${wangUid} 的暂停或封禁`).waitFor();
  // Lifted already: said next to the field.
  await refused(admin, { method: 'DELETE', path: `/api/v1/admin/users/${wangUid}/suspension`, status: 409 }, () =>
    lift.getByRole('button', { name: '解除', exact: true }).click());
  const error = admin.locator(`#${await who.getAttribute('id')}-error`);
  await error.waitFor();
  assert.match(await error.innerText(), /not suspended/);

  await wang.getByRole('button', { name: '登录' }).click();
  await onPage(wang, '朋友圈');
});

step('the admin reads every moderation action in the audit log', async () => {
  const audit = admin.getByRole('region', { name: '审计日志' });
  await audit.getByRole('button', { name: '刷新' }).click();
  const entries = audit.getByRole('listitem');
  await entries.filter({ hasText: 'account.lift_suspension' }).getByText(`user:${wangUid}`).waitFor();
  await entries.filter({ hasText: 'report.remove_content' }).getByText(NOTE).waitFor();
  await entries.filter({ hasText: 'report.overturn' }).getByText(`case:`).waitFor();
  await entries.filter({ hasText: 'report.suspend' }).waitFor();
  await entries.filter({ hasText: 'filter.create' }).getByText(HOLD_TERM).waitFor();
  await entries.filter({ hasText: 'role.set' }).getByText('moderator').waitFor();
  await entries.filter({ hasText: 'report.dismiss' }).nth(1).waitFor();
  assert.equal(await entries.filter({ hasText: 'report.dismiss' }).count(), 2);
  await screenshot(admin, 'admin-audit', audit);
});

// Live updates. 孙七 keeps her feed open while 周八, whom she follows and
// who exists only through the API, posts, likes, comments and follows:
// her page changes as it happens, over the live-update stream, without
// being reloaded, and after a cut in the network it resumes from the last
// event it had.
const SUN = { username: `sunqi_${RUN}`, nick: '孙七' };
const ZHOU = { username: `zhouba_${RUN}`, nick: '周八' };
const ZHOU_POSTS = ['周八的第一条', '周八的第二条', '周八的第三条'];
/** @type {{ uid: number, token: string }} */
let zhouAccount;
let zhouPost = 0;

/**
 * An account made through the API alone, and a session of it.
 * @param {{ username: string, nick: string }} who
 */
async function apiAccount(who) {
  let res = await request('/api/v1/users', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: who.username, password: PASSWORD, nickName: who.nick }),
  });
  const made = await res.text();
  assert.equal(res.status, 201, made);
  res = await request('/api/v1/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: who.username, password: PASSWORD }),
  });
  const signedIn = await res.text();
  assert.equal(res.status, 201, signedIn);
  return { uid: JSON.parse(made).uid, token: JSON.parse(signedIn).token };
}

/**
 * A call of the API with a session made through the API.
 * @param {{ token: string }} account
 * @param {string} method
 * @param {string} path under /api/v1
 * @param {unknown} [body]
 */
function apiAs(account, method, path, body) {
  return request(`/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${account.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/**
 * Runs `action` (a page load) and waits until the page's new live-update
 * stream is answered: from then on, whatever happens reaches it.
 * @param {import('playwright-core').Page} page
 * @param {() => Promise<void>} action
 */
async function withStream(page, action) {
  const opened = page
    .waitForResponse((response) => new URL(response.url()).pathname === '/api/v1/stream' && response.status() === 200)
    .catch((error) => assert.fail(`the page opened no live-update stream: ${error.message}`));
  await action();
  await opened;
}

/**
 * The requests `page` sent with this method and path.
 * @param {import('playwright-core').Page} page
 * @param {string} method
 * @param {string} path
 */
function sent(page, method, path) {
  return (requestLog.get(page) ?? []).filter((r) => r.method === method && r.url.pathname === path);
}

/**
 * Waits until the page's stream watches this post: the post is named in
 * the stream's `?watch=` or in the last `PUT /stream/{id}/watch`, answered.
 * @param {import('playwright-core').Page} page
 * @param {number} post
 */
async function watched(page, post) {
  await eventually(`the live-update stream watches post ${post}`, async () => {
    const asked = (requestLog.get(page) ?? []).filter(
      (r) => (r.method === 'GET' && r.url.pathname === '/api/v1/stream') || (r.method === 'PUT' && /^\/api\/v1\/stream\/\d+\/watch$/.test(r.url.pathname)),
    );
    const last = asked.at(-1);
    if (!last) return false;
    const posts = last.method === 'GET'
      ? (last.url.searchParams.get('watch') ?? '').split(',').map(Number)
      : JSON.parse(last.body ?? '{}').posts;
    if (!posts.includes(post)) return false;
    return (await last.request.response())?.status() === 200;
  });
}

step('a post by someone followed shows as "1 new post" on the open feed; tapping it shows the post', async () => {
  sun = await phone();
  await signUp(sun, SUN);
  zhouAccount = await apiAccount(ZHOU);
  const { token } = await session(sun);
  const res = await apiAs({ token }, 'PUT', `/users/${zhouAccount.uid}/follow`);
  assert.equal(res.status, 200, await res.text());
  await withStream(sun, () => visit(sun, '/feed'));
  await onPage(sun, '朋友圈');
  await sun.getByText('还没有动态').waitFor();
  const pill = sun.getByRole('button', { name: '有 1 条新动态', exact: true });
  assert.equal(await pill.count(), 0, 'no pill before anything is posted');
  const feedReads = sent(sun, 'GET', '/api/v1/feed').length;

  const posted = await apiAs(zhouAccount, 'POST', '/posts', { category: 'TEXT', content: ZHOU_POSTS[0] });
  const text = await posted.text();
  assert.equal(posted.status, 201, text);
  zhouPost = JSON.parse(text).id;
  await pill.waitFor();
  // Said politely, and not pushed in under the reader.
  assert.equal(await pill.evaluate((el) => el.closest('[aria-live]')?.getAttribute('aria-live')), 'polite');
  assert.equal(await postWith(sun, ZHOU_POSTS[0]).count(), 0, 'the post waits for the tap');
  assert.equal(sent(sun, 'GET', '/api/v1/feed').length, feedReads, 'the feed was not read again by itself');
  await screenshot(sun, 'feed-new-posts');

  await pill.click();
  await postWith(sun, ZHOU_POSTS[0]).waitFor();
  await pill.waitFor({ state: 'hidden' });
  assert.equal(
    await sun.evaluate(() => document.activeElement?.closest('article')?.querySelector('.post-author')?.textContent),
    ZHOU.nick,
    'focus is on the new post',
  );
});

step('counts on a shown post change as someone else likes and comments; a deleted one says so', async () => {
  const card = postWith(sun, ZHOU_POSTS[0]);
  await card.getByRole('button', { name: '赞', exact: true, pressed: false }).waitFor();
  await watched(sun, zhouPost);
  const feedReads = sent(sun, 'GET', '/api/v1/feed').length;

  let res = await apiAs(zhouAccount, 'PUT', `/posts/${zhouPost}/like`);
  assert.equal(res.status, 200, await res.text());
  await card.getByRole('button', { name: '赞 1', exact: true, pressed: false }).waitFor();
  // Who liked it comes with the post, read again.
  await card.locator('.likes-row').getByRole('link', { name: ZHOU.nick }).waitFor();

  res = await apiAs(zhouAccount, 'POST', `/posts/${zhouPost}/comments`, { content: '自己先评论一下' });
  assert.equal(res.status, 201, await res.text());
  await card.getByRole('button', { name: '评论 1', exact: true }).waitFor();
  await card.locator('.comment').filter({ hasText: `${ZHOU.nick}：自己先评论一下` }).waitFor();

  // Her own like from another device: the button turns on here too.
  const { token } = await session(sun);
  res = await apiAs({ token }, 'PUT', `/posts/${zhouPost}/like`);
  assert.equal(res.status, 200, await res.text());
  await card.getByRole('button', { name: '赞 2', exact: true, pressed: true }).waitFor();
  await card.locator('.likes-row').getByRole('link', { name: SUN.nick }).waitFor();
  assert.equal(sent(sun, 'GET', '/api/v1/feed').length, feedReads, 'the feed was not read again');

  res = await apiAs(zhouAccount, 'DELETE', `/posts/${zhouPost}`);
  assert.equal(res.status, 204, await res.text());
  const gone = sun.locator(`article[data-post-id="${zhouPost}"]`);
  await gone.getByText('这条动态已被删除或不可见').waitFor();
  assert.equal(await gone.getByRole('button').count(), 0, 'nothing left to like or comment on');
});

step('the unread badge changes as soon as someone follows, and clears when read on another device', async () => {
  const tab = sun.getByRole('link', { name: '消息', exact: true });
  await tab.waitFor();
  assert.equal(await sun.locator('.badge').isHidden(), true);
  const asked = sent(sun, 'GET', '/api/v1/notifications/unread').length;
  let res = await apiAs(zhouAccount, 'PUT', `/users/${(await session(sun)).me.uid}/follow`);
  assert.equal(res.status, 200, await res.text());
  await sun.getByRole('link', { name: '消息，1 条未读' }).waitFor();
  assert.equal(await sun.locator('.badge').innerText(), '1');

  const { token } = await session(sun);
  res = await apiAs({ token }, 'POST', '/notifications/read');
  assert.equal(res.status, 200, await res.text());
  await tab.waitFor();
  await sun.locator('.badge').waitFor({ state: 'hidden' });
  assert.equal(sent(sun, 'GET', '/api/v1/notifications/unread').length, asked, 'told by the stream, not by asking');
});

step('after a cut in the network the stream resumes from its last event: what happened meanwhile shows without a reload', async () => {
  let res = await apiAs(zhouAccount, 'POST', '/posts', { category: 'TEXT', content: ZHOU_POSTS[1] });
  let text = await res.text();
  assert.equal(res.status, 201, text);
  const shown = JSON.parse(text).id;
  const pill = sun.getByRole('button', { name: '有 1 条新动态', exact: true });
  await pill.click();
  const card = postWith(sun, ZHOU_POSTS[1]);
  await card.getByRole('button', { name: '赞', exact: true, pressed: false }).waitFor();
  await watched(sun, shown);
  const streams = sent(sun, 'GET', '/api/v1/stream').length;
  const feedReads = sent(sun, 'GET', '/api/v1/feed').length;

  offline.add(sun);
  try {
    await sun.context().setOffline(true);
    await sun.waitForFunction(() => !navigator.onLine);
    // While she is cut off: a like on the post she sees, and a new post.
    res = await apiAs(zhouAccount, 'PUT', `/posts/${shown}/like`);
    assert.equal(res.status, 200, await res.text());
    res = await apiAs(zhouAccount, 'POST', '/posts', { category: 'TEXT', content: ZHOU_POSTS[2] });
    assert.equal(res.status, 201, await res.text());
    await feedHolds(sun, ZHOU_POSTS[2], 2);
    assert.equal(await pill.count(), 0, 'nothing reaches a page that is offline');
    await sun.context().setOffline(false);

    await pill.waitFor();
    await card.getByRole('button', { name: '赞 1', exact: true, pressed: false }).waitFor();
  } finally {
    await sun.context().setOffline(false);
    offline.delete(sun);
  }
  const opened = sent(sun, 'GET', '/api/v1/stream').slice(streams);
  assert.ok(opened.length >= 1, 'a new stream was opened');
  for (const stream of opened) {
    assert.match(stream.url.searchParams.get('lastEventId') ?? '', /^\d+-\d+$/, `resumed from the last event: ${stream.url.search}`);
    assert.ok(stream.url.searchParams.get('ticket'), 'with a ticket of its own');
  }
  const tickets = opened.map((stream) => stream.url.searchParams.get('ticket'));
  assert.equal(new Set(tickets).size, tickets.length, 'a ticket is used once');
  assert.equal(sent(sun, 'GET', '/api/v1/feed').length, feedReads, 'the page was not reloaded');

  await pill.click();
  await postWith(sun, ZHOU_POSTS[2]).waitFor();
});

step('Me → Download my data shows the export\'s progress, then downloads it; its index.html shows the posts offline', async () => {
  const { token, me } = await session(wang);
  await visit(wang, '/me');
  await wang.getByRole('link', { name: /下载我的数据|Download my data/ }).click();
  await wang.getByRole('button', { name: /开始导出|Start an export/ }).click();
  // The export shows as queued or running, with the button to start
  // another disabled, until its download appears.
  const exportItem = wang.locator('li.export').first();
  await exportItem.waitFor();
  const download = wang.getByRole('button', { name: /下载（|Download \(/ });
  await download.waitFor({ timeout: 30_000 });
  const [file] = await Promise.all([wang.waitForEvent('download'), download.click()]);
  const dir = mkdtempSync(join(tmpdir(), 'moments-archive-'));
  try {
    const zip = join(dir, 'archive.zip');
    await file.saveAs(zip);
    execFileSync('python3', ['-m', 'zipfile', '-e', zip, join(dir, 'archive')]);
    const res = await request(`/api/v1/users/${me.uid}/posts?limit=100`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const mine = (await res.json()).items.map((/** @type {{ content: string }} */ p) => p.content);
    assert.ok(mine.length > 0, 'the account has posts to show');
    // Offline, and every request the page makes recorded: it may make
    // none but for the files beside it.
    const context = await browser.newContext({ offline: true, viewport: PHONE });
    try {
      const album = await context.newPage();
      /** @type {string[]} */
      const fetched = [];
      album.on('request', (r) => fetched.push(r.url()));
      /** @type {string[]} */
      const errors = [];
      album.on('pageerror', (e) => errors.push(e.message));
      album.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      await album.goto(pathToFileURL(join(dir, 'archive', 'index.html')).href);
      await album.locator('article').first().waitFor();
      const shown = await album.locator('article .text').allTextContents();
      assert.deepEqual(shown, mine.slice(0, 100));
      assert.match(await album.locator('#name').innerText(), new RegExp(me.username));
      assert.deepEqual(fetched.filter((u) => !u.startsWith('file:')), [], 'nothing but the files beside it');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

step('My data → Import previews a Mastodon list row by row, says when it went stale, and applies exactly the preview', async () => {
  const { token } = await session(wang);
  const sunUid = (await session(sun)).me.uid;
  const muted = async () => {
    const res = await request('/api/v1/me/muted?limit=100', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    return new Set((await res.json()).items.map((/** @type {{ uid: number }} */ u) => u.uid));
  };
  const before = await muted();
  assert.ok(!before.has(sunUid) && !before.has(zhouAccount.uid), 'neither is muted yet');
  const host = new URL(BASE ?? '').hostname;
  // Mastodon's muted_accounts.csv, with rows it cannot use.
  const csv = 'Account address,Hide notifications\n' +
    `${SUN.username}@${host},true\n` +
    `${ZHOU.username},true\n` +
    `nobody_${RUN},true\n` +
    'someone@mastodon.social,true\n' +
    `${WANG.username}@${host},true\n`;
  await visit(wang, '/me/data');
  const section = wang.locator('section', { has: wang.getByRole('heading', { name: '导入名单' }) });
  await section.getByLabel('名单').selectOption('mutes');
  await section.getByLabel('选择 CSV 文件').setInputFiles({ name: 'muted_accounts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  // The file is read into the form as it is chosen.
  await wang.waitForFunction(() => (document.querySelector('textarea[name="csv"]')?.value ?? '').length > 0);
  assert.equal(await section.getByLabel('或粘贴 CSV').inputValue(), csv, 'the file is read into the form');
  await section.getByRole('button', { name: '预览' }).click();
  const summary = section.locator('.import-summary');
  await summary.waitFor();
  assert.deepEqual(await summary.locator('li').allTextContents(),
    ['将添加 2 人', '将移除 0 人', '已在名单中 0 人', '无法导入 3 行']);
  const rows = section.locator('table.rejected-rows tbody tr');
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent))), [
    ['4', `nobody_${RUN}`, '本站没有这个用户'],
    ['5', 'someone@mastodon.social', '其他网站的账号'],
    ['6', `${WANG.username}@${host}`, '是你自己'],
  ]);
  await section.getByText('将添加 2 人', { exact: true }).and(section.locator('summary')).click();
  assert.deepEqual(await section.locator('.import-people.adds li').allTextContents(), [SUN.username, ZHOU.username]);
  await screenshot(wang, 'import-preview', section);

  // Muted by hand since the preview: the plan is another now, so the
  // import is refused and the preview shown anew.
  const res = await request(`/api/v1/users/${sunUid}/mute`, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, await res.text());
  await refused(wang, { method: 'POST', path: '/api/v1/me/imports', status: 409 }, () =>
    section.getByRole('button', { name: '导入', exact: true }).click());
  await section.getByText('名单或你的账号在预览之后有了变化，请重新预览。').waitFor();
  assert.deepEqual(await summary.locator('li').allTextContents(),
    ['将添加 1 人', '将移除 0 人', '已在名单中 1 人', '无法导入 3 行']);

  await section.getByRole('button', { name: '导入', exact: true }).click();
  const done = section.locator('li.import[data-state="done"]').first();
  await done.waitFor({ timeout: 30_000 });
  assert.match(await done.innerText(), /不看他们的朋友圈（合并）[\s\S]*已完成 1 项/);
  assert.equal(await section.locator('.import-preview').isHidden(), true, 'the applied preview is put away');
  const after = await muted();
  assert.deepEqual([...after].filter((uid) => !before.has(uid)).sort(), [sunUid, zhouAccount.uid].sort());
});

/**
 * Whether a JPEG has an APP1 segment (EXIF or XMP) before its scan; fails
 * on anything that is not a well-formed JPEG up to there, so "no" is
 * never an answer about bytes it could not read.
 * @param {Uint8Array} bytes
 */
function hasApp1(bytes) {
  assert.ok(bytes[0] === 0xff && bytes[1] === 0xd8, 'a JPEG starts with SOI');
  let i = 2;
  while (i + 4 <= bytes.length) {
    assert.equal(bytes[i], 0xff, `a marker at byte ${i}`);
    const marker = bytes[i + 1];
    if (marker === 0xda) return false;
    if (marker === 0xe1) return true;
    i += 2 + ((bytes[i + 2] << 8) | bytes[i + 3]);
  }
  return assert.fail('the JPEG ended before its scan');
}

/**
 * Holds the page's requests that `url` matches (and `method`, when
 * given) until `release` is called: what the page shows meanwhile is
 * what a slow network shows. Routing also turns the HTTP cache off.
 * @param {import('playwright-core').Page} page
 * @param {string} url a glob
 * @param {string} [method]
 */
async function holdRequests(page, url, method) {
  /** @type {() => void} */
  let release = () => {};
  const gate = new Promise((resolve) => {
    release = () => resolve(undefined);
  });
  /** @type {Promise<void>[]} */
  const handled = [];
  let held = 0;
  /** @param {import('playwright-core').Route} route */
  const handler = (route) => {
    const done = (async () => {
      if (!method || route.request().method() === method) {
        held += 1;
        await gate;
      }
      await route.continue();
    })();
    handled.push(done);
    return done;
  };
  await page.route(url, handler);
  return {
    held: () => held,
    release: async () => {
      // Every request held goes on before the route is taken away.
      release();
      await Promise.all(handled);
      await page.unroute(url, handler);
    },
  };
}

/**
 * The colour of a few pixels of an image the page shows (or a canvas), as
 * the page draws them: [r, g, b] at (x, y) given as fractions of its size.
 * @param {import('playwright-core').Locator} element
 * @param {[number, number][]} points
 */
function pixels(element, points) {
  return element.evaluate((el, at) => {
    const source = /** @type {HTMLImageElement | HTMLCanvasElement} */ (el);
    const w = source instanceof HTMLImageElement ? source.naturalWidth : source.width;
    const ht = source instanceof HTMLImageElement ? source.naturalHeight : source.height;
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = ht;
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
    ctx.drawImage(source, 0, 0);
    return at.map(([fx, fy]) => [...ctx.getImageData(Math.floor(fx * (w - 1)), Math.floor(fy * (ht - 1)), 1, 1).data.slice(0, 3)]);
  }, points);
}

/** Red above blue: the sample photo, upright. @param {number[][]} colours [top, bottom] */
function redOverBlue([top, bottom]) {
  const [tr, , tb] = top;
  const [br, , bb] = bottom;
  return tr > 2 * tb && bb > 2 * br;
}


step('compose: photos picked on the phone upload at once with their progress, and can be removed, retried and described', async () => {
  const photo = process.env.MOMENTS_SAMPLE_PHOTO;
  assert.ok(photo, 'scripts/browser.sh writes a phone JPEG (GPS and Orientation in its EXIF) and names it');
  const { readFileSync } = await import('node:fs');
  const sent = readFileSync(photo);
  assert.ok(hasApp1(sent), 'the photo as the phone wrote it carries EXIF');

  qian = await phone();
  // The width of the most common phones now.
  await qian.setViewportSize({ width: 390, height: 844 });
  await signUp(qian, { username: `qianjiu_${RUN}`, nick: '钱九' });
  await qian.getByRole('link', { name: '发表' }).click();
  await onPage(qian, '发表动态');
  const picker = qian.getByLabel('从相册选择照片');
  assert.equal(await picker.getAttribute('type'), 'file');
  assert.equal(await picker.getAttribute('accept'), 'image/*');
  // The picker is reached from the keyboard, like every control.
  await qian.getByLabel('这一刻的想法').focus();
  let tabs = 0;
  while (!(await picker.evaluate((el) => el === document.activeElement)) && tabs < 30) {
    await qian.keyboard.press('Tab');
    tabs += 1;
  }
  assert.ok(await picker.evaluate((el) => el === document.activeElement), 'Tab reaches the photo picker');

  // Uploads held on the way: each tile shows its progress and the phone's
  // own copy of the photo, and Publish waits.
  const uploads = await holdRequests(qian, '**/api/v1/media', 'POST');
  const file = (/** @type {string} */ name) => ({ name, mimeType: 'image/jpeg', buffer: sent });
  await picker.setInputFiles([file('IMG_0001.jpg'), file('IMG_0002.jpg'), file('IMG_0003.jpg'), file('IMG_0004.jpg')]);
  const tiles = qian.getByRole('list', { name: '照片（最多 9 张）' }).getByRole('listitem');
  assert.equal(await tiles.count(), 4);
  const publish = qian.getByRole('button', { name: '发表', exact: true });
  // Three go up at once (the service takes four per account); the fourth
  // waits its turn, saying so.
  for (let i = 0; i < 4; i++) {
    await tiles.nth(i).getByText(i < 3 ? '上传中…' : '等待上传…').waitFor();
    await tiles.nth(i).getByRole('progressbar', { name: `照片 ${i + 1} 上传进度` }).waitFor();
    assert.match((await tiles.nth(i).locator('img').getAttribute('src')) ?? '', /^blob:/);
  }
  assert.ok(await publish.isDisabled(), 'Publish waits for the uploads');
  await qian.getByText('照片还在上传，传完即可发表').waitFor();
  // A post has photos or picture URLs: the URL controls wait.
  assert.ok(await qian.getByRole('button', { name: '添加图片' }).isDisabled());
  await qian.waitForFunction(() => document.querySelectorAll('.photo-tile').length === 4);
  assert.equal(uploads.held(), 3, 'three uploads at once, not four');
  await uploads.release();
  for (let i = 0; i < 4; i++) await tiles.nth(i).getByText('已上传').waitFor();
  assert.ok(await publish.isEnabled());
  // Each tile now shows the service's preview: what readers will see.
  for (let i = 0; i < 4; i++) {
    await qian.waitForFunction((n) => {
      const img = document.querySelectorAll('.photo-tile img')[n];
      return img instanceof HTMLImageElement && /\/preview\.jpg$/.test(img.src) && img.complete && img.naturalWidth > 0;
    }, i);
  }

  // One is removed before posting: its upload is deleted, and not posted.
  const deleted = qian.waitForResponse((r) => r.request().method() === 'DELETE' && /\/api\/v1\/media\/\d+$/.test(r.url()));
  await qian.getByRole('button', { name: '移除照片 4' }).click();
  const deleteAnswer = await deleted;
  assert.equal(deleteAnswer.status(), 204);
  const removedId = /\/media\/(\d+)$/.exec(deleteAnswer.url())?.[1];
  assert.equal(await tiles.count(), 3);
  const { token } = await session(qian);
  const auth = { headers: { authorization: `Bearer ${token}` } };
  assert.equal((await request(`/api/v1/media/${removedId}`, auth)).status, 404);

  // A file that is no picture is refused on its own tile, in the
  // service's words; a retry is refused again; the rest post.
  const answer = qian.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/v1/media'));
  await refused(qian, { method: 'POST', path: '/api/v1/media', status: 422 }, () =>
    picker.setInputFiles([{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a picture at all') }]));
  const problem = await (await answer).json();
  assert.equal(problem.field, 'file');
  const bad = tiles.nth(3);
  const words = String(problem.detail).replace(/^file: /, '');
  await bad.getByText(`上传失败：${words}`).waitFor();
  await refused(qian, { method: 'POST', path: '/api/v1/media', status: 422 }, () =>
    bad.getByRole('button', { name: '重试照片 4' }).click());
  await bad.getByText(/上传失败/).waitFor();
  await bad.getByRole('button', { name: '移除照片 4' }).click();
  assert.equal(await tiles.count(), 3);

  await qian.getByLabel('照片 2 的描述').fill('湖边的落日');
  await qian.getByLabel('这一刻的想法').fill('三张照片');
  const shownPreviews = await qian.locator('.photo-tile img').evaluateAll((imgs) => imgs.map((i) => i.getAttribute('src')));
  await screenshot(qian, 'compose-photos', qian.getByRole('group', { name: '照片（最多 9 张）' }));
  await publish.click();
  await onPage(qian, '详情');
  const postId = /#\/post\/(\d+)$/.exec(qian.url())?.[1];
  const post = await (await request(`/api/v1/posts/${postId}`, auth)).json();
  assert.equal(post.category, 'PICTURE');
  assert.equal(post.media.length, 3);
  // In the order the tiles showed, with the alt text typed after its upload.
  assert.deepEqual(post.media.map((/** @type {{ previewUrl: string }} */ m) => m.previewUrl), shownPreviews);
  assert.deepEqual(post.media.map((/** @type {{ description: string }} */ m) => m.description), ['', '湖边的落日', '']);
  assert.ok(!post.media.some((/** @type {{ id: number }} */ m) => String(m.id) === removedId));
  assert.deepEqual(post.pictureUrls, []);
});

step('uploaded photos show as a grid over their blurhash, and a tap opens the upright original, without EXIF', async () => {
  const card = postWith(qian, '三张照片');
  const grid = card.locator('[data-key="media"]');
  const postId = /#\/post\/(\d+)$/.exec(qian.url())?.[1];
  const { token } = await session(qian);
  const post = await (await request(`/api/v1/posts/${postId}`, { headers: { authorization: `Bearer ${token}` } })).json();

  // Before any preview arrives each tile shows its blurhash, painted from
  // the post's JSON alone: red above blue, as the photo is once upright.
  const previews = await holdRequests(qian, '**/preview.jpg');
  await visit(qian, `/post/${postId}`);
  await onPage(qian, '详情');
  assert.equal(await grid.getByRole('button', { name: /^查看原图 \d\/3$/ }).count(), 3);
  const placeholders = grid.locator('canvas.blurhash');
  assert.equal(await placeholders.count(), 3);
  await qian.waitForFunction(() => document.querySelectorAll('[data-key="media"] img').length === 3);
  assert.equal(await grid.locator('.media-tile.loaded').count(), 0);
  assert.ok(previews.held() > 0, 'the previews were asked for, and held');
  for (let i = 0; i < 3; i++) {
    assert.ok(redOverBlue(await pixels(placeholders.nth(i), [[0.5, 0.1], [0.5, 0.9]])), `placeholder ${i + 1} is painted upright`);
    assert.ok(await placeholders.nth(i).isVisible());
  }
  await previews.release();
  await qian.waitForFunction(() => document.querySelectorAll('[data-key="media"] .media-tile.loaded').length === 3);

  // The previews, with the size they will have, and the alt text typed.
  const imgs = grid.locator('img');
  const attrs = await imgs.evaluateAll((all) => all.map((i) => ({
    src: i.getAttribute('src'), alt: i.getAttribute('alt'), width: i.getAttribute('width'), height: i.getAttribute('height'),
  })));
  assert.deepEqual(attrs, post.media.map((/** @type {any} */ m, /** @type {number} */ i) => ({
    src: m.previewUrl, alt: i === 1 ? '湖边的落日' : `图片 ${i + 1}/3`, width: String(m.previewWidth), height: String(m.previewHeight),
  })));
  assert.ok(post.media[0].previewHeight > post.media[0].previewWidth, 'the preview is upright too');

  // Its author's feed shows the same grid.
  await qian.getByRole('link', { name: '朋友圈' }).click();
  await onPage(qian, '朋友圈');
  const inFeed = postWith(qian, '三张照片').locator('[data-key="media"]');
  assert.equal(await inFeed.locator('canvas.blurhash').count(), 3);
  assert.deepEqual(await inFeed.locator('img').evaluateAll((all) => all.map((i) => i.getAttribute('src'))),
    post.media.map((/** @type {{ previewUrl: string }} */ m) => m.previewUrl));
  await qian.waitForFunction(() => document.querySelectorAll('[data-key="media"] .media-tile.loaded').length === 3);
  await screenshot(qian, 'photos');

  // A tap opens the original in a dialog: upright (the phone held it
  // turned), red above blue.
  const first = inFeed.getByRole('button', { name: '查看原图 1/3' });
  await first.click();
  const dialog = qian.getByRole('dialog', { name: '图片 1/3' });
  const opened = dialog.getByRole('img', { name: '图片 1/3' });
  await opened.waitFor();
  await qian.waitForFunction(() => {
    const img = document.querySelector('dialog.lightbox img');
    return img instanceof HTMLImageElement && img.complete && img.naturalWidth > 0;
  });
  assert.equal(await opened.getAttribute('src'), post.media[0].url);
  const size = await opened.evaluate((img) => [/** @type {HTMLImageElement} */ (img).naturalWidth, /** @type {HTMLImageElement} */ (img).naturalHeight]);
  assert.deepEqual(size, [480, 640]);
  assert.ok(redOverBlue(await pixels(opened, [[0.5, 0.05], [0.5, 0.95]])), 'the original is upright: red at the top');
  await assertLabelled(qian);
  await screenshot(qian, 'photo-open');
  // Esc closes it, and focus is back on the picture that opened it.
  await qian.keyboard.press('Escape');
  await qian.getByRole('dialog').waitFor({ state: 'detached' });
  assert.ok(await first.evaluate((el) => el === document.activeElement), 'focus is back on the picture');
  // So does its close button; the second picture's dialog says its alt text.
  await inFeed.getByRole('button', { name: '查看原图 2/3' }).click();
  await qian.getByRole('dialog', { name: '湖边的落日' }).getByRole('img', { name: '湖边的落日' }).waitFor();
  await qian.getByRole('button', { name: '关闭原图' }).click();
  await qian.getByRole('dialog').waitFor({ state: 'detached' });

  // The original as anyone downloads it keeps no EXIF: no location.
  const original = await qian.evaluate(async (url) => [...new Uint8Array(await (await fetch(url)).arrayBuffer())], post.media[0].url);
  const bytes = Uint8Array.from(original);
  assert.ok(!hasApp1(bytes), 'the stored original has no APP1 (EXIF) segment');
  assert.ok(!Buffer.from(bytes).includes('Exif\0\0'), 'nor any EXIF header anywhere');
});

step('the feed\'s search box finds a post by a word, the word marked, and people by the start of a name as one types', async () => {
  await qian.getByRole('link', { name: '朋友圈' }).click();
  await onPage(qian, '朋友圈');
  const box = qian.getByRole('search');
  await box.getByLabel('搜索动态或用户').fill('照片');
  await box.getByRole('button', { name: '搜索' }).click();
  await onPage(qian, '搜索');
  assert.match(qian.url(), /#\/search\?q=%E7%85%A7%E7%89%87&type=posts$/);
  const found = postWith(qian, '三张照片');
  await found.waitFor();
  assert.deepEqual(await found.locator('.post-content mark').allInnerTexts(), ['照片']);
  assert.equal(await found.locator('.post-content').innerText(), '三张照片');
  assert.equal(await qian.getByRole('tab', { name: '动态' }).getAttribute('aria-selected'), 'true');
  await screenshot(qian, 'search');
  // A word no post holds: said so.
  const field = qian.getByRole('search').getByLabel('搜索动态或用户');
  await field.fill('不存在的词语');
  await qian.getByRole('search').getByRole('button', { name: '搜索' }).click();
  await qian.getByText('没有找到含这些词的动态').waitFor();

  // People, suggested as one types the start of a username.
  await qian.getByRole('tab', { name: '用户' }).click();
  await field.fill('');
  await field.pressSequentially(WANG.username.slice(0, 9));
  const person = qian.getByRole('list', { name: '用户' }).getByRole('link', { name: WANG.nick });
  await person.waitFor();
  assert.equal(await qian.getByRole('tab', { name: '用户' }).getAttribute('aria-selected'), 'true');
  const { token } = await session(wang);
  const me = await (await request('/api/v1/me', { headers: { authorization: `Bearer ${token}` } })).json();
  assert.equal(await person.getAttribute('href'), `#/u/${me.uid}`);
  // The address holds the search: a reload shows the same.
  await qian.reload();
  await onPage(qian, '搜索');
  await qian.getByRole('list', { name: '用户' }).getByRole('link', { name: WANG.nick }).waitFor();

  // In English the same page says its words in English.
  await qian.getByRole('button', { name: 'English' }).click();
  await onPage(qian, 'Search');
  await qian.getByRole('tab', { name: 'People' }).waitFor();
  await qian.getByRole('button', { name: '中文' }).click();
  await onPage(qian, '搜索');
});

step('no page logged an error', () => {
  assert.deepEqual(consoleErrors, []);
});

step('no page got an answer of 400 or more it did not provoke on purpose', () => {
  assert.deepEqual(unexpectedRefusals, []);
});
