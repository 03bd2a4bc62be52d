// @ts-check
// One post, expanded: the card, then every comment page by page, where
// the reader comments, replies and deletes. Comments others write while
// it is open are added at the top, where the newest are.

import { ApiError, call } from '../api.js';
import { fill, h } from '../dom.js';
import { lang, t } from '../i18n.js';
import { pagedList } from '../lists.js';
import { REFETCH_EVENT, onLive } from '../live.js';
import { commentItem, postCard } from '../post_card.js';

/** @param {import('../main.js').PageContext} ctx */
export async function render({ main, title, params }) {
  title(t('post.title'));
  const id = params[0];
  const status = h('p', { class: 'list-status', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading'));
  main.append(status);
  /** @type {import('../types.js').Post} */
  let post;
  try {
    post = await call('GET', `/posts/${id}`, { query: { lang: lang() } });
  } catch (error) {
    const words = error instanceof ApiError && error.status === 404 ? t('error.notFound') : error instanceof ApiError ? error.words : t('error.generic');
    fill(status, h('span', { class: 'error-text' }, words));
    return;
  }
  status.remove();
  const comments = pagedList({
    label: t('post.allComments'),
    empty: t('post.noComments'),
    tag: 'ul',
    load: (cursor) => call('GET', `/posts/${id}/comments`, { query: { cursor, limit: 20, lang: lang() } }),
    render: (comment) => commentItem(comment, post, {
      onReply: (c) => card.replyTo(c),
      onDeleted: async () => {
        await card.refresh();
        await comments.reload();
        document.getElementById('all-comments')?.focus();
      },
    }),
  });
  const section = h('section', { class: 'card comments-section', 'aria-labelledby': 'all-comments' },
    h('h2', { id: 'all-comments', class: 'section-title', tabindex: '-1' }, t('post.allComments')),
    comments.root);
  const card = postCard(post, {
    detail: true,
    onCommented: () => void comments.reload(),
    onDeleted: () => {
      location.hash = '#/feed';
    },
    onGone: () => {
      stopListening();
      comments.stop();
      section.remove();
    },
  });
  comments.items.classList.add('comments', 'comments-all');
  main.append(card.el, section);

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let reloadTimer;
  /** Reads the comments again, unless the reader is at one of them: focus there is not taken away. */
  function reloadComments() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => {
      if (comments.items.contains(document.activeElement)) return;
      void comments.reload();
    }, 500);
  }
  const stopComments = onLive('comment.new', ({ postId, commentId }) => {
    if (String(postId) !== id || comments.items.querySelector(`[data-comment-id="${commentId}"]`)) return;
    reloadComments();
  });
  const refetch = () => {
    void card.refresh().catch(() => {});
    reloadComments();
  };
  window.addEventListener(REFETCH_EVENT, refetch);
  function stopListening() {
    clearTimeout(reloadTimer);
    stopComments();
    window.removeEventListener(REFETCH_EVENT, refetch);
  }
  return () => {
    stopListening();
    comments.stop();
  };
}
