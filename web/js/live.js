// @ts-check
// Live updates: one Server-Sent Events stream per tab (`GET /stream`),
// shared by every page, so the feed, the cards and the badge change as
// things happen instead of being asked for again. Events carry ids and
// counts only; what a page shows is still read through the API.
//
// An `EventSource` cannot send the session's token, so each connection is
// opened with a ticket (`POST /stream/tickets`) that works once. The
// browser's own reconnect would send the spent ticket again, so on any
// error the source is closed and a new one opened from here, with a new
// ticket and `?lastEventId=`: the service sends what was missed meanwhile.

import { ApiError, call } from './api.js';
import { current } from './session.js';

/** @typedef {import('./types.js').LiveEvents} LiveEvents */
/** @typedef {import('./types.js').PostCounts} PostCounts */

/**
 * Sent when the stream could not resume from where it got to: what was
 * missed cannot be told, so a page reads again what it shows.
 */
export const REFETCH_EVENT = 'moments:refetch';

/** The service watches at most this many posts for one stream. */
const MAX_WATCHED = 50;
/** The first wait before a reconnect, doubled after each failure up to the cap. */
const FIRST_RETRY_MS = 2_000;
const MAX_RETRY_MS = 30_000;
/** Cards come in bursts (a page drawn, the next page of a list): one PUT per burst. */
const WATCH_DELAY_MS = 300;

/** @type {(keyof LiveEvents)[]} */
const NAMES = ['ready', 'post.new', 'post.deleted', 'post.counts', 'comment.new', 'notification', 'unread', 'reset'];

/**
 * off: signed out, or stopped. connecting: a ticket or `ready` is awaited.
 * open: `ready` came. waiting: a reconnect is due (after a backoff, or
 * once the browser is online again). replaced: the account opened a newer
 * stream elsewhere, which took this one's place.
 * @type {'off' | 'connecting' | 'open' | 'waiting' | 'replaced'}
 */
let state = 'off';
/** The session the stream is for: another account's is stopped, never reused. */
let token = '';
/** Bumped by each connection and stop: an answer for an older one is dropped. */
let generation = 0;
/** @type {EventSource | null} */
let source = null;
/** @type {number | null} */
let streamId = null;
/**
 * The id of the last event received, where the next connection resumes.
 * @type {string | null}
 */
let lastEventId = null;
let failures = 0;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let retryTimer;

/** @type {Map<keyof LiveEvents, Set<(data: any) => void>>} */
const listeners = new Map();

/**
 * Calls `handler` with the data of each `name` event, until the function
 * returned is called (a page's stop).
 * @template {keyof LiveEvents} K
 * @param {K} name
 * @param {(data: LiveEvents[K]) => void} handler
 * @returns {() => void}
 */
export function onLive(name, handler) {
  const set = listeners.get(name) ?? new Set();
  listeners.set(name, set);
  set.add(handler);
  return () => {
    set.delete(handler);
  };
}

/** Whether events arrive now: while they do, nothing needs asking again on a timer. */
export function isLive() {
  return state === 'open';
}

/** Opens the stream for the session signed in, unless one is open or on its way. */
export function startLive() {
  const session = current();
  if (!session) {
    stopLive();
    return;
  }
  if (session.token === token && state !== 'off') return;
  if (session.token !== token) {
    stopLive();
    // Event ids are the account's: another account's mean nothing here.
    lastEventId = null;
    token = session.token;
  }
  failures = 0;
  void connect();
}

/** Closes the stream, and gives up any reconnect (signed out). */
export function stopLive() {
  generation += 1;
  clearTimeout(retryTimer);
  close();
  state = 'off';
}

function close() {
  source?.close();
  source = null;
  streamId = null;
  watching = '';
}

async function connect() {
  const mine = ++generation;
  clearTimeout(retryTimer);
  close();
  const session = current();
  if (!session || session.token !== token) {
    stopLive();
    return;
  }
  if (!navigator.onLine) {
    // Asked again from the `online` listener.
    state = 'waiting';
    return;
  }
  state = 'connecting';
  /** @type {string} */
  let ticket;
  try {
    ({ ticket } = await call('POST', '/stream/tickets'));
  } catch (error) {
    if (mine !== generation) return;
    // The session is over: api.js has already said so (SIGNED_OUT_EVENT).
    if (error instanceof ApiError && error.status === 401) {
      stopLive();
      return;
    }
    retryLater(error instanceof ApiError ? error.retryAfter : null);
    return;
  }
  if (mine !== generation) return;
  const url = new URL('/api/v1/stream', location.origin);
  url.searchParams.set('ticket', ticket);
  const posts = wanted();
  if (posts.length > 0) url.searchParams.set('watch', posts.join(','));
  if (lastEventId) url.searchParams.set('lastEventId', lastEventId);
  const es = new EventSource(url);
  source = es;
  watching = keyOf(posts);
  for (const name of NAMES) {
    es.addEventListener(name, (event) => {
      if (source === es && event instanceof MessageEvent) receive(name, event);
    });
  }
  es.addEventListener('error', () => {
    if (source !== es) return;
    // Never the browser's reconnect: it would send the spent ticket.
    close();
    retryLater(null);
  });
}

/**
 * Reconnects after a wait that doubles with each failure in a row, with
 * jitter, so that clients cut off together do not come back together.
 * @param {number | null} retryAfter seconds the service asked for (429, 503)
 */
function retryLater(retryAfter) {
  state = 'waiting';
  if (!navigator.onLine) return;
  failures += 1;
  const ceiling = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (failures - 1));
  const wait = Math.max(ceiling / 2 + Math.random() * (ceiling / 2), (retryAfter ?? 0) * 1000);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(() => void connect(), wait);
}

/**
 * @param {keyof LiveEvents} name
 * @param {MessageEvent} event
 */
function receive(name, event) {
  if (event.lastEventId) lastEventId = event.lastEventId;
  /** @type {any} */
  let data;
  try {
    data = JSON.parse(event.data);
  } catch {
    return;
  }
  if (name === 'ready') {
    state = 'open';
    failures = 0;
    streamId = data.streamId;
    // The cards drawn while it connected are not in its `?watch=`.
    scheduleWatch();
  } else if (name === 'reset') {
    if (data.reason === 'replaced') {
      // The account's newest streams are kept: reconnecting would close
      // another tab's in turn. This one comes back when it is looked at.
      close();
      generation += 1;
      state = 'replaced';
    } else {
      window.dispatchEvent(new Event(REFETCH_EVENT));
    }
  }
  for (const handler of [...(listeners.get(name) ?? [])]) {
    try {
      handler(data);
    } catch (error) {
      // One page's failure must not stop the others hearing of the event.
      reportError(error);
    }
  }
}

window.addEventListener('online', () => {
  if (state === 'waiting') {
    failures = 0;
    // Spread a little: a network back for a building is back for all of it.
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => void connect(), Math.random() * 500);
  }
});
window.addEventListener('offline', () => {
  // A dead connection may not fail for minutes: start again once online.
  if (state === 'open' || state === 'connecting' || state === 'waiting') {
    generation += 1;
    clearTimeout(retryTimer);
    close();
    state = 'waiting';
  }
});
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && state === 'replaced') {
    state = 'off';
    startLive();
  }
});

// The posts on screen, for the stream to watch: each card says it is
// shown, and the set sent is those in the document now, in its order
// (newest first on the feed), the ones in view before the rest.

/**
 * @typedef {{ counts: (counts: PostCounts) => void, deleted: () => void }} CardHandlers
 * @typedef {CardHandlers & { postId: number, since: number, seen: boolean, visible: boolean }} Watched
 */

/** @type {Map<Element, Watched>} */
const cards = new Map();
/** The set the stream watches, as `keyOf` gives it. */
let watching = '';
/** @type {ReturnType<typeof setTimeout> | undefined} */
let watchTimer;
let watchSending = false;

const inView = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      const card = cards.get(entry.target);
      if (card) card.visible = entry.isIntersecting;
    }
    scheduleWatch();
  },
  { rootMargin: '200px 0px' },
);

/**
 * Watches the post a card shows, while the card is in the document, and
 * gives it that post's events. Returns what stops it.
 * @param {Element} el the card
 * @param {number} postId
 * @param {CardHandlers} handlers
 * @returns {() => void}
 */
export function watchPost(el, postId, handlers) {
  cards.set(el, { ...handlers, postId, since: Date.now(), seen: false, visible: false });
  inView.observe(el);
  scheduleWatch();
  return () => {
    cards.delete(el);
    inView.unobserve(el);
    scheduleWatch();
  };
}

/** Sends the watch again soon: a page was drawn, and may show no cards at all. */
export function scheduleWatch() {
  clearTimeout(watchTimer);
  watchTimer = setTimeout(() => void sendWatch(), WATCH_DELAY_MS);
}

/** The cards in the document, in its order; those gone from it are forgotten. */
function shownCards() {
  const now = Date.now();
  /** @type {[Element, Watched][]} */
  const shown = [];
  for (const [el, card] of cards) {
    if (el.isConnected) {
      card.seen = true;
      shown.push([el, card]);
    } else if (card.seen || now - card.since > 10_000) {
      // Drawn and then taken away (another page), or never put up.
      cards.delete(el);
      inView.unobserve(el);
    }
  }
  return shown.sort(([a], [b]) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
}

/** @returns {number[]} */
function wanted() {
  const shown = shownCards();
  /** @type {number[]} */
  const ids = [];
  for (const pass of [true, false]) {
    for (const [, card] of shown) {
      if (card.visible === pass && !ids.includes(card.postId)) ids.push(card.postId);
    }
  }
  return ids.slice(0, MAX_WATCHED);
}

/** @param {number[]} ids */
function keyOf(ids) {
  return [...ids].sort((a, b) => a - b).join(',');
}

async function sendWatch() {
  // Without a stream, the next one names the posts in its `?watch=`.
  if (state !== 'open' || streamId === null) return;
  if (watchSending) {
    scheduleWatch();
    return;
  }
  const posts = wanted();
  const key = keyOf(posts);
  if (key === watching) return;
  const mine = generation;
  watchSending = true;
  try {
    await call('PUT', `/stream/${streamId}/watch`, { json: { posts } });
    if (mine === generation) watching = key;
  } catch {
    // The stream closed meanwhile: the next one names them in `?watch=`.
  } finally {
    watchSending = false;
  }
}

/**
 * A card's events go to the cards that show the post.
 * @param {number} postId
 * @param {(card: Watched) => void} deliver
 */
function toCards(postId, deliver) {
  for (const [el, card] of [...cards]) {
    if (card.postId === postId && el.isConnected) deliver(card);
  }
}
onLive('post.counts', (counts) => toCards(counts.postId, (card) => card.counts(counts)));
onLive('post.deleted', ({ postId }) => toCards(postId, (card) => card.deleted()));
