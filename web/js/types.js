// @ts-check
// The API's shapes as the pages use them, for `tsc --noEmit` over JSDoc
// (tests/browser/tsconfig.json). `/openapi.json` is the full description.

/**
 * @typedef {{ uid: number, nickName: string, headImg: string }} UserCard
 * @typedef {{ type: string, title: string, status: number, detail: string, code: string,
 *   field?: string | null, instance?: string | null, until?: number, strikeId?: number }} Problem
 * @typedef {{ commentId: number, uid: number, nickName: string }} ReplyTo
 * @typedef {{ id: number, postId: number, content: string, createtime: number, author: UserCard,
 *   likeCount: number, commentCount: number, likedByMe: boolean, replyTo?: ReplyTo | null }} Comment
 * @typedef {{ id: number, postId: number, createTime: number, user: UserCard }} Like
 * @typedef {{ lat: number, lon: number, name?: string | null }} Geo
 * @typedef {'public' | 'followers' | 'friends' | 'private' | 'only' | 'except'} Visibility
 * @typedef {{ id: number, category: string, content: string, createtime: number, device: string,
 *   deviceModel: string, visibility: Visibility, author: UserCard, pictureUrls: string[],
 *   geo?: Geo | null, likeCount: number, commentCount: number, shareCount: number, viewCount: number,
 *   likedByMe: boolean, comments: Comment[], likes: Like[], serverTime: number,
 *   moderation?: 'held' | 'removed', media: MediaView[] }} Post
 * @typedef {{ id: number, type: 'image', url: string, previewUrl: string, width: number, height: number,
 *   previewWidth: number, previewHeight: number, blurhash: string, description: string,
 *   focus: { x: number, y: number } | null, size: number }} MediaView
 * @typedef {{ uid: number, nickName: string, headImg: string, followersCount: number,
 *   followingCount: number, following?: boolean | null, followedBy?: boolean | null,
 *   blocking?: boolean | null }} Profile
 * @typedef {{ uid: number, username: string, nickName: string, headImg: string, roles: string[],
 *   createdAt: number, albumWindow: string }} Me
 * @typedef {{ id: number, content: string, pictureUrl?: string | null }} PostSnippet
 * @typedef {'like' | 'comment' | 'reply' | 'follow' | 'mention' | 'report_closed' | 'report_opened'
 *   | 'strike' | 'appeal_closed'} NotificationKind
 * @typedef {{ id: number, kind: NotificationKind, actor: UserCard,
 *   createtime: number, read: boolean, postId?: number | null, post?: PostSnippet | null,
 *   commentId?: number | null, comment?: { id: number, content: string } | null,
 *   reportId?: number, caseId?: number, strikeId?: number }} Notification
 * @typedef {{ zh: string, en: string }} DisplayName
 * @typedef {{ model: string, displayName: DisplayName, brand: string, updatedAt: number,
 *   updatedBy: number }} DeviceModel
 * @typedef {{ displayName: DisplayName, brand: string }} ModelNames
 * @typedef {{ added: { model: string, after: ModelNames }[],
 *   changed: { model: string, before: ModelNames, after: ModelNames }[], unchanged: number }} DeviceModelsPreview
 * @typedef {{ posts: number, users: number, absent: number, mismatches: string[] }} CheckReport
 * @typedef {{ posts: number, users: number }} RebuildReport
 */

/**
 * Reports, strikes and the moderation queue.
 * @typedef {{ name: string, contact?: string, rules: string[] }} Instance
 * @typedef {'spam' | 'harassment' | 'hate' | 'sexual' | 'violence' | 'illegal' | 'other'} ReportCategory
 * @typedef {'post' | 'comment' | 'user'} ReportedKind
 * @typedef {ReportedKind | 'appeal'} TargetKind
 * @typedef {{ kind: TargetKind, id: number }} ReportTarget
 * @typedef {'open' | 'actioned' | 'dismissed'} CaseState
 * @typedef {'dismiss' | 'remove_content' | 'warn' | 'suspend' | 'ban' | 'overturn'} ModAction
 * @typedef {{ author: number, authorName: string, text: string, pictureUrls: string[],
 *   visibility?: Visibility, postId?: number, createtime: number, takenAt: number }} Snapshot
 * @typedef {{ id: number, target: ReportTarget, category: ReportCategory, comment: string,
 *   postIds: number[], rules: number[], state: CaseState, outcome?: string | null,
 *   createdAt: number, updatedAt: number, closedAt?: number | null }} Report
 * @typedef {{ text: string, at: number, state: 'open' | 'accepted' | 'rejected' }} Appeal
 * @typedef {{ id: number, action: string, target: ReportTarget, categories: ReportCategory[],
 *   reason: string | null, snapshot: Snapshot, until?: number, at: number, appeal: Appeal | null,
 *   appealableUntil?: number, overturnedAt?: number }} Strike
 * @typedef {{ id: number, reporter: UserCard, category: ReportCategory, comment: string,
 *   postIds: number[], rules: number[], createdAt: number }} ItemReport
 * @typedef {{ action: string, moderator: number, note: string, shared?: string | null, at: number }} Closing
 * @typedef {{ id: number, target: ReportTarget, state: CaseState, categories: ReportCategory[],
 *   reporterCount: number, closing: Closing | null }} PastItem
 * @typedef {'remove_content' | 'warn' | 'suspend' | 'ban'} StrikeAction
 * @typedef {{ id: number, action: StrikeAction, target: ReportTarget, categories: ReportCategory[],
 *   at: number, until?: number, appealed: boolean, overturnedAt?: number }} PastStrike
 * @typedef {{ id: number, target: ReportTarget, account: UserCard, state: CaseState,
 *   reporterCount: number, categories: ReportCategory[], snapshot: Snapshot, openedAt: number,
 *   reportedAt: number, reports: ItemReport[], reportsCursor?: string, history?: PastItem[],
 *   strikes?: PastStrike[],
 *   closing: Closing | null, held?: HeldBy,
 *   appeal?: { strikeId: number, text: string, action: string, at: number } }} Case
 * @typedef {{ postId: number, filter: number, reason: string, snapshot: Snapshot }} HeldPost
 * @typedef {{ filter: number, reason: string, count?: number, posts?: HeldPost[] }} HeldBy
 * @typedef {{ postId: number, snapshot: Snapshot }} HeldPostNow
 * @typedef {{ id: number, status: number }} BulkResult
 * @typedef {{ id: number, term: string, action: 'reject' | 'hold', reason: string,
 *   updatedAt: number, updatedBy: number }} ContentFilter
 * @typedef {{ id?: number, actor: number, action: string, subject: string, note: string,
 *   at: number }} AuditEntry
 * @typedef {{ id: number, state: 'queued' | 'running' | 'ready' | 'failed', createdAt: number,
 *   startedAt?: number | null, finishedAt?: number | null, expiresAt?: number | null,
 *   progress: { done: number, known: number }, size?: number | null, error?: string | null,
 *   download?: string | null }} DataExport
 * @typedef {'following' | 'blocks' | 'mutes' | 'hidden'} ListKind
 * @typedef {'merge' | 'overwrite'} ImportMode
 * @typedef {'not_a_username' | 'other_service' | 'no_such_user' | 'yourself' | 'listed_twice'
 *   | 'block_between' | 'not_a_follower' | 'over_cap'} RowProblem
 * @typedef {{ uid: number, username: string }} Named
 * @typedef {{ kind: ListKind, mode: ImportMode, planId: string, add: Named[], remove: Named[],
 *   unchanged: number, rejected: { line: number, value: string, problem: RowProblem,
 *   reason: string }[] }} ImportPreview
 * @typedef {{ id: number, kind: ListKind, mode: ImportMode, planId: string,
 *   state: 'queued' | 'running' | 'done' | 'failed', progress: { done: number, total: number },
 *   skipped: number, createdAt: number, finishedAt?: number | null, error?: string | null }} DataImport
 */

/**
 * What the live-update stream's events carry (`GET /stream`), by event name.
 * @typedef {{ postId: number, likeCount: number, commentCount: number, shareCount: number,
 *   likedByMe: boolean }} PostCounts
 * @typedef {{
 *   ready: { streamId: number, resumed: boolean, heartbeatSecs: number },
 *   'post.new': { postId: number, authorUid: number },
 *   'post.deleted': { postId: number },
 *   'post.counts': PostCounts,
 *   'comment.new': { postId: number, commentId: number },
 *   notification: Notification,
 *   unread: { unread: number },
 *   reset: { reason: 'gone' | 'replaced' },
 * }} LiveEvents
 */

/**
 * A page of any list.
 * @template T
 * @typedef {{ items: T[], nextCursor?: string | null, serverTime: number }} Page
 */

/**
 * A page of posts a search found, and by post id the spans of `content`
 * that matched (UTF-16 units).
 * @typedef {Page<Post> & { marks: Record<string, [number, number][]> }} FoundPosts
 */

export {};
