// @ts-check
// One expanded post as the feed, an album and the post page show it:
// author, text, pictures, place, time, device, the like and comment
// buttons, the names of those who liked it and the latest comments with
// "A 回复 B". Every action goes through the API and then reads the post
// again, so what the card shows is what the service holds. While it is
// shown, the live stream watches the post: its counts change as others
// like and comment, and a post deleted meanwhile says so. Also the
// banner on a post of mine that moderation removed or holds. The report
// panel a post or a comment opens is report.js's.

import { placeholder } from './blurhash.js';
import { ApiError, call, idempotentCreates } from './api.js';
import { avatar, fill, h, mediaUrl, uniqueId, webUrl } from './dom.js';
import { busy, field, formAlert, onSubmit } from './forms.js';
import { lang, t } from './i18n.js';
import { watchPost } from './live.js';
import { reportButton, reportPanel } from './report.js';
import { current } from './session.js';
import { relativeTime, serverNow } from './time.js';

/** @typedef {import('./types.js').Post} Post */
/** @typedef {import('./types.js').MediaView} MediaView */
/** @typedef {import('./types.js').Comment} Comment */
/** @typedef {import('./types.js').PostCounts} PostCounts */

/**
 * Uploaded pictures as the nine-picture grid (above any `pictureUrls`,
 * though the service takes one kind or the other for a post): each
 * preview over its blurhash placeholder, which shows until the preview
 * has loaded, at its focus point, with its width and height given so
 * nothing moves when it arrives. One picture
 * is shown larger, in its own shape (up to 3:4 or 4:3); two to nine as
 * squares. A tap opens the original in a dialog.
 * @param {MediaView[]} media
 */
function mediaGrid(media) {
  const total = media.length;
  return h(
    'div',
    { class: `pictures pictures-${Math.min(total, 9)}`, 'data-key': 'media' },
    media.map((m, i) => {
      const alt = m.description || t('post.picture', { n: i + 1, total });
      const img = h('img', {
        src: mediaUrl(m.previewUrl),
        alt,
        width: m.previewWidth,
        height: m.previewHeight,
        loading: 'lazy',
        decoding: 'async',
      });
      if (m.focus) img.style.objectPosition = focusPosition(m.focus);
      const tile = h(
        'button',
        { type: 'button', class: 'picture media-tile', 'aria-label': t('post.openPicture', { n: i + 1, total }), 'aria-haspopup': 'dialog',
          onclick: () => openPicture(m, alt) },
        placeholder(m.blurhash),
        img,
      );
      if (total === 1 && m.previewWidth > 0 && m.previewHeight > 0) {
        const ratio = Math.min(4 / 3, Math.max(3 / 4, m.previewWidth / m.previewHeight));
        tile.style.aspectRatio = String(ratio);
      }
      // Until then the placeholder shows through the transparent image.
      const loaded = () => tile.classList.add('loaded');
      if (img.complete && img.naturalWidth > 0) loaded();
      else img.addEventListener('load', loaded, { once: true });
      return tile;
    }),
  );
}

/**
 * A focus point (x, y in −1..1, y up, Mastodon's convention) as
 * `object-position`.
 * @param {{ x: number, y: number }} focus
 */
function focusPosition(focus) {
  const at = (/** @type {number} */ v) => Math.min(100, Math.max(0, ((v + 1) / 2) * 100));
  return `${at(focus.x)}% ${at(-focus.y)}%`;
}

/**
 * The original picture, whole, in a modal dialog: Esc, the close button
 * or a tap beside the picture closes it, and focus goes back to the tile
 * that opened it. Its blurhash shows until the original arrives.
 * @param {MediaView} m
 * @param {string} alt
 */
function openPicture(m, alt) {
  const opener = document.activeElement;
  const img = h('img', { src: mediaUrl(m.url), alt, width: m.width, height: m.height, decoding: 'async' });
  const painted = placeholder(m.blurhash);
  if (painted) img.style.backgroundImage = `url("${painted.toDataURL()}")`;
  img.addEventListener('load', () => {
    img.style.backgroundImage = '';
  }, { once: true });
  const dialog = h(
    'dialog',
    { class: 'lightbox', 'aria-label': alt },
    h('button', { type: 'button', class: 'lightbox-close', 'aria-label': t('post.closePicture'), onclick: () => dialog.close() }, '✕'),
    img,
    m.description && h('p', { class: 'lightbox-alt' }, m.description),
  );
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
  });
  dialog.addEventListener('click', (e) => {
    if (e.target === dialog) dialog.close();
  });
  document.body.append(dialog);
  dialog.showModal();
}

/**
 * @typedef {{
 *   detail?: boolean,
 *   onDeleted?: () => void,
 *   onCommented?: () => void,
 *   onGone?: () => void,
 *   marks?: [number, number][],
 * }} CardOptions
 */

/**
 * A post's text with the spans a search matched marked: `[start, end)` in
 * UTF-16 units, which is how a JavaScript string is indexed. Text nodes
 * and `<mark>` only: the text stays text.
 * @param {string} text
 * @param {[number, number][]} marks in order, not overlapping
 * @returns {(Node | string)[]}
 */
export function markedText(text, marks) {
  /** @type {(Node | string)[]} */
  const out = [];
  let at = 0;
  for (const [start, end] of marks) {
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < at || end <= start || end > text.length) continue;
    if (start > at) out.push(text.slice(at, start));
    out.push(h('mark', {}, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/**
 * A `<time>` that main.js keeps current ("刚刚" becomes "1分钟前").
 * @param {number} at epoch ms
 */
export function timeText(at) {
  return h(
    'time',
    { datetime: new Date(at).toISOString(), 'data-t': String(at) },
    relativeTime(at, serverNow(), lang()),
  );
}

/**
 * @param {import('./types.js').UserCard} user
 * @param {string} [key] what focus is found again by when the card is drawn again
 */
function userLink(user, key) {
  return h('a', { class: 'user-name', href: `#/u/${user.uid}`, 'data-key': key }, user.nickName);
}

/**
 * @typedef {{ el: HTMLElement, replyTo: (c: Comment) => void, refresh: () => Promise<void> }} PostCard
 */

/**
 * @param {Post} initial
 * @param {CardOptions} [options]
 * @returns {PostCard}
 */
export function postCard(initial, options = {}) {
  let post = initial;
  const nameId = uniqueId('post-author');
  const card = h('article', { class: 'post', 'data-post-id': String(post.id), 'aria-labelledby': nameId });
  /** @type {Comment | null} */
  let replyingTo = null;
  let composerOpen = Boolean(options.detail);
  /** The open report panel: kept while the card is drawn again (after a like). */
  /** @type {HTMLElement | null} */
  let reportEl = null;
  const sendComment = idempotentCreates();
  /** The comment being written. */
  let draft = '';

  /** Counts the stream sent while an action of this card was under way. */
  /** @type {PostCounts | null} */
  let heldCounts = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let heldTimer;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let rereadTimer;
  /** Deleted, or no longer mine to see: the card only says so. */
  let gone = false;
  const unwatch = watchPost(card, post.id, { counts: liveCounts, deleted: markGone });

  /** @param {string} [focusKey] the control to focus once drawn again */
  async function refresh(focusKey) {
    post = await call('GET', `/posts/${post.id}`, { query: { lang: lang() } });
    render(focusKey);
  }

  /**
   * Draws the card again, keeping focus on the control that had it (or
   * on `focusKey`'s: a busy button loses focus while it is disabled).
   * @param {string} [focusKey]
   */
  function render(focusKey) {
    const focused = focusKey ?? (document.activeElement instanceof HTMLElement && card.contains(document.activeElement)
      ? document.activeElement.dataset.key
      : undefined);
    fill(card, ...parts());
    if (focused) {
      const again = card.querySelector(`[data-key="${CSS.escape(focused)}"]`);
      if (again instanceof HTMLElement) again.focus();
    }
  }

  /**
   * Others liked, commented or shared (or I did, on another device): the
   * counts change at once, the names and latest comments once read.
   * @param {PostCounts} counts
   */
  function liveCounts(counts) {
    if (gone) return;
    // An action under way reads the post when it ends. Counts sent
    // meanwhile wait for it, the newest kept, and apply after: each event
    // says how things stood when it was sent, so the last one is right.
    if (card.querySelector('[aria-busy="true"]')) {
      heldCounts = counts;
      clearTimeout(heldTimer);
      heldTimer = setTimeout(() => {
        const held = heldCounts;
        heldCounts = null;
        if (held) liveCounts(held);
      }, 250);
      return;
    }
    const moved = counts.likeCount !== post.likeCount || counts.commentCount !== post.commentCount;
    if (!moved && counts.shareCount === post.shareCount && counts.likedByMe === post.likedByMe) return;
    post = {
      ...post,
      likeCount: counts.likeCount,
      commentCount: counts.commentCount,
      shareCount: counts.shareCount,
      likedByMe: counts.likedByMe,
    };
    redraw();
    if (moved) {
      clearTimeout(rereadTimer);
      rereadTimer = setTimeout(() => void reread(), 500);
    }
  }

  /** The post again, for who liked it and the latest comments. */
  async function reread() {
    if (gone || !card.isConnected || card.querySelector('[aria-busy="true"]')) return;
    try {
      post = await call('GET', `/posts/${post.id}`, { query: { lang: lang() } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) markGone();
      return;
    }
    if (!gone) redraw();
  }

  /**
   * Draws what the stream changed. Focus in a field (a comment being
   * written, in the middle of an IME composition perhaps) or on what a
   * new drawing could not give it back to is left alone: then only the
   * buttons change, and the rest waits for the card's next drawing.
   */
  function redraw() {
    const active = document.activeElement;
    const delicate = active instanceof HTMLElement && card.contains(active) &&
      (active.matches('input, textarea, select') || !active.dataset.key);
    if (!delicate) {
      render();
      return;
    }
    card.querySelector('.post-actions')?.replaceWith(actions());
  }

  /** The stream says the post is gone (deleted, removed, or hidden from me). */
  function markGone() {
    if (gone) return;
    gone = true;
    unwatch();
    clearTimeout(heldTimer);
    clearTimeout(rereadTimer);
    const hadFocus = card.contains(document.activeElement);
    const note = h('p', { class: 'post-gone', tabindex: '-1' }, t('post.gone'));
    card.removeAttribute('aria-labelledby');
    card.classList.add('gone');
    fill(card, note);
    // Focus was in what is no longer there: it stays on the card's place.
    if (hadFocus) note.focus();
    options.onGone?.();
  }

  function parts() {
    const me = current()?.me.uid;
    const mine = me === post.author.uid;
    const pictures = post.pictureUrls.flatMap((url) => webUrl(url) ?? []);
    const media = (post.media ?? []).filter((m) => mediaUrl(m.previewUrl) && mediaUrl(m.url));
    return [
      h('a', { class: 'post-avatar', href: `#/u/${post.author.uid}`, tabindex: '-1', 'aria-hidden': 'true' }, avatar(post.author)),
      h(
        'div',
        { class: 'post-main' },
        h('h2', { class: 'post-author', id: nameId }, userLink(post.author, 'author')),
        post.moderation && moderationBanner(post.moderation),
        post.content && h('p', { class: 'post-content' }, options.marks ? markedText(post.content, options.marks) : post.content),
        media.length > 0 && mediaGrid(media),
        pictures.length > 0 &&
          h(
            'div',
            { class: `pictures pictures-${Math.min(pictures.length, 9)}` },
            pictures.map((url, i) =>
              h(
                'a',
                { href: url, target: '_blank', rel: 'noopener noreferrer', class: 'picture' },
                h('img', { src: url, alt: t('post.picture', { n: i + 1, total: pictures.length }), loading: 'lazy' }),
              ),
            ),
          ),
        post.geo &&
          h('p', { class: 'post-place' }, h('span', { class: 'visually-hidden' }, `${t('post.place')}: `),
            post.geo.name || `${post.geo.lat.toFixed(4)}, ${post.geo.lon.toFixed(4)}`),
        h(
          'div',
          { class: 'post-meta' },
          options.detail
            ? timeText(post.createtime)
            : h('a', { href: `#/post/${post.id}`, class: 'post-time', title: t('post.open'), 'data-key': 'time' }, timeText(post.createtime)),
          post.device && h('span', { class: 'post-device' }, t('post.device', { device: post.device })),
          post.visibility !== 'public' && h('span', { class: 'post-visibility' }, t(`vis.${post.visibility}`)),
          options.detail && post.viewCount > 0 && h('span', { class: 'post-views' }, t('post.views', { n: post.viewCount })),
          mine &&
            h('button', { type: 'button', class: 'link-button danger', 'data-key': 'delete', onclick: deletePost }, t('post.delete')),
          !mine &&
            h('button', {
              type: 'button',
              class: 'link-button',
              'data-key': 'report',
              'aria-label': t('report.post'),
              'aria-expanded': String(reportEl !== null),
              onclick: toggleReport,
            }, t('report.report')),
        ),
        actions(),
        reportEl,
        social(),
        composerOpen && composer(),
      ),
    ];
  }

  /** The like and comment buttons, with their counts. */
  function actions() {
    return h(
      'div',
      { class: 'post-actions', role: 'group', 'aria-label': t('post.actions') },
      h(
        'button',
        {
          type: 'button',
          class: 'action like',
          'aria-pressed': String(post.likedByMe),
          'data-key': 'like',
          onclick: toggleLike,
        },
        h('span', { 'aria-hidden': 'true', class: 'icon' }, post.likedByMe ? '♥' : '♡'),
        ' ',
        // The name stays "赞": whether it is on is aria-pressed's to say.
        t('post.like'),
        post.likeCount > 0 && h('span', { class: 'count' }, ` ${post.likeCount}`),
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'action comment',
          'data-key': 'comment',
          'aria-expanded': String(composerOpen),
          onclick: () => openComposer(null),
        },
        h('span', { 'aria-hidden': 'true', class: 'icon' }, '💬'),
        ' ',
        t('post.comment'),
        post.commentCount > 0 && h('span', { class: 'count' }, ` ${post.commentCount}`),
      ),
    );
  }

  function social() {
    const likes = post.likes;
    const showComments = !options.detail && post.comments.length > 0;
    if (likes.length === 0 && !showComments) return null;
    return h(
      'div',
      { class: 'post-social' },
      likes.length > 0 &&
        h(
          'p',
          { class: 'likes-row' },
          h('span', { class: 'icon', 'aria-hidden': 'true' }, '♥ '),
          h('span', { class: 'visually-hidden' }, `${t('post.likedBy')}: `),
          likes.flatMap((like, i) => (i === 0 ? [userLink(like.user)] : ['，', userLink(like.user)])),
          post.likeCount > likes.length && ` ${t('post.andMore', { n: post.likeCount })}`,
        ),
      showComments &&
        h(
          'ul',
          { class: 'comments', 'aria-label': t('post.commentsOf') },
          post.comments.map((c) => commentItem(c, post, { onReply: openComposer, onDeleted: refreshAfterComment })),
        ),
    );
  }

  function composer() {
    const label = replyingTo ? t('post.replyTo', { name: replyingTo.author.nickName }) : t('post.commentField');
    const { wrap, input } = field({ label, name: 'content', rows: 2, placeholder: replyingTo ? label : t('post.commentPlaceholder'), value: draft });
    input.dataset.key = 'composer';
    // What is typed outlives the card being drawn again (after a like).
    input.addEventListener('input', () => {
      draft = input.value;
    });
    const form = h(
      'form',
      { class: 'comment-form', novalidate: true },
      formAlert(),
      wrap,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'submit', class: 'button-primary small', 'data-key': 'send' }, t('post.send')),
        !options.detail &&
          h('button', { type: 'button', class: 'button-quiet small', onclick: closeComposer }, t('post.cancel')),
        options.detail && replyingTo &&
          h('button', { type: 'button', class: 'button-quiet small', onclick: () => openComposer(null) }, t('post.cancel')),
      ),
    );
    onSubmit(form, async () => {
      const body = { content: input.value, ...(replyingTo ? { replyToCommentId: replyingTo.id } : {}) };
      await sendComment(body, (key) => call('POST', `/posts/${post.id}/comments`, {
        json: body,
        headers: { 'idempotency-key': key },
      }));
      draft = '';
      replyingTo = null;
      composerOpen = Boolean(options.detail);
      await refreshAfterComment();
    });
    input.addEventListener('keydown', (e) => {
      if (e instanceof KeyboardEvent && e.key === 'Escape' && !options.detail) closeComposer();
    });
    return form;
  }

  function toggleReport() {
    if (reportEl) {
      closeReport();
      return;
    }
    reportEl = reportPanel({
      targetType: 'post',
      targetId: post.id,
      author: post.author,
      label: t('report.post'),
      onClose: closeReport,
    });
    render('report');
  }

  function closeReport() {
    reportEl = null;
    render('report');
  }

  /** @param {Comment | null} target */
  function openComposer(target) {
    replyingTo = target;
    composerOpen = true;
    render();
    const input = card.querySelector('[data-key="composer"]');
    if (input instanceof HTMLElement) input.focus();
  }

  function closeComposer() {
    replyingTo = null;
    composerOpen = false;
    render();
    const button = card.querySelector('[data-key="comment"]');
    if (button instanceof HTMLElement) button.focus();
  }

  async function refreshAfterComment() {
    await refresh(options.detail ? 'composer' : 'comment');
    options.onCommented?.();
  }

  /** @param {Event} event */
  async function toggleLike(event) {
    const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
    const liked = !post.likedByMe;
    // The highlight answers at once; the card then shows what the service holds.
    button.setAttribute('aria-pressed', String(liked));
    const hadFocus = document.activeElement === button;
    await busy(button, async () => {
      try {
        await call(liked ? 'PUT' : 'DELETE', `/posts/${post.id}/like`);
      } catch (error) {
        button.setAttribute('aria-pressed', String(!liked));
        showActionError(card, error);
        return;
      }
      try {
        await refresh(hadFocus ? 'like' : undefined);
      } catch (error) {
        showActionError(card, error);
      }
    });
  }

  /** @param {Event} event */
  async function deletePost(event) {
    if (!window.confirm(t('post.confirmDelete'))) return;
    const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
    try {
      await busy(button, () => call('DELETE', `/posts/${post.id}`));
    } catch (error) {
      showActionError(card, error);
      return;
    }
    if (options.onDeleted) {
      options.onDeleted();
      return;
    }
    // Focus goes on to the next post (or the page), not to nowhere.
    const neighbour = card.nextElementSibling ?? card.previousElementSibling;
    card.remove();
    const target = neighbour?.querySelector('.post-author a') ?? document.getElementById('page-title');
    if (target instanceof HTMLElement) target.focus();
  }

  render();
  return { el: card, replyTo: openComposer, refresh };
}

/**
 * One comment: "A: text" or "A 回复 B: text", with reply and (for its
 * author or the post's author) delete.
 * @param {Comment} comment
 * @param {{ author: import('./types.js').UserCard }} post
 * @param {{ onReply: (c: Comment) => void, onDeleted: () => void | Promise<void> }} handlers
 */
export function commentItem(comment, post, handlers) {
  const me = current()?.me.uid;
  const mayDelete = me === comment.author.uid || me === post.author.uid;
  const report = me !== comment.author.uid && reportButton({
    targetType: 'comment',
    targetId: comment.id,
    author: comment.author,
    label: t('report.comment', { name: comment.author.nickName }),
    place: (panel) => item.append(panel),
  });
  const item = h(
    'li',
    { class: 'comment', 'data-comment-id': String(comment.id) },
    h(
      'p',
      { class: 'comment-text' },
      userLink(comment.author),
      comment.replyTo && [
        h('span', { class: 'replied-to' }, ` ${t('post.repliedTo')} `),
        h('a', { class: 'user-name', href: `#/u/${comment.replyTo.uid}` }, comment.replyTo.nickName),
      ],
      h('span', { class: 'colon' }, lang() === 'zh' ? '：' : ': '),
      h('span', { class: 'comment-content' }, comment.content),
    ),
    h(
      'p',
      { class: 'comment-meta' },
      timeText(comment.createtime),
      h(
        'button',
        {
          type: 'button',
          class: 'link-button',
          'data-key': `reply-${comment.id}`,
          'aria-label': t('post.replyTo', { name: comment.author.nickName }),
          onclick: () => handlers.onReply(comment),
        },
        t('post.reply'),
      ),
      mayDelete &&
        h(
          'button',
          {
            type: 'button',
            class: 'link-button danger',
            'data-key': `delete-${comment.id}`,
            'aria-label': t('post.deleteComment'),
            onclick: async (/** @type {Event} */ e) => {
              if (!window.confirm(t('post.confirmDeleteComment'))) return;
              const button = /** @type {HTMLButtonElement} */ (e.currentTarget);
              try {
                await busy(button, () => call('DELETE', `/comments/${comment.id}`));
                await handlers.onDeleted();
              } catch (error) {
                showActionError(item, error);
              }
            },
          },
          t('post.delete'),
        ),
      report,
    ),
  );
  return item;
}

/**
 * What moderation did to a post of mine (nobody else is ever shown such a
 * post): removed, or held by a content filter until a moderator approves.
 * @param {'held' | 'removed'} state
 */
function moderationBanner(state) {
  const removed = state === 'removed';
  return h(
    'p',
    { class: `moderation-banner ${state}` },
    h('strong', {}, t(removed ? 'moderation.removed' : 'moderation.held')),
    ' ',
    t(removed ? 'moderation.removedHelp' : 'moderation.heldHelp'),
    removed && [' ', h('a', { href: '#/me' }, t('moderation.toStrikes'))],
  );
}

/**
 * A problem with an action that has no form (a like, a delete): shown in
 * words at the end of the card until it is drawn again.
 * @param {Element} where
 * @param {unknown} error
 */
export function showActionError(where, error) {
  const host = where.querySelector('.post-main') ?? where;
  let slot = host.querySelector(':scope > .action-error');
  if (!slot) {
    slot = h('p', { class: 'form-error action-error', role: 'alert' });
    host.append(slot);
  }
  slot.textContent = error instanceof ApiError ? error.words : t('error.generic');
}
