// @ts-check
// The API's shapes as the pages use them, for `tsc --noEmit` over JSDoc
// (tests/browser/tsconfig.json). `/openapi.json` is the full description.

/**
 * @typedef {{ uid: number, nickName: string, headImg: string }} UserCard
 * @typedef {{ type: string, title: string, status: number, detail: string, code: string,
 *   field?: string | null, instance?: string | null }} Problem
 * @typedef {{ commentId: number, uid: number, nickName: string }} ReplyTo
 * @typedef {{ id: number, postId: number, content: string, createtime: number, author: UserCard,
 *   likeCount: number, commentCount: number, likedByMe: boolean, replyTo?: ReplyTo | null }} Comment
 * @typedef {{ id: number, postId: number, createTime: number, user: UserCard }} Like
 * @typedef {{ lat: number, lon: number, name?: string | null }} Geo
 * @typedef {'public' | 'followers' | 'friends' | 'private' | 'only' | 'except'} Visibility
 * @typedef {{ id: number, category: string, content: string, createtime: number, device: string,
 *   deviceModel: string, visibility: Visibility, author: UserCard, pictureUrls: string[],
 *   geo?: Geo | null, likeCount: number, commentCount: number, shareCount: number, viewCount: number,
 *   likedByMe: boolean, comments: Comment[], likes: Like[], serverTime: number }} Post
 * @typedef {{ uid: number, nickName: string, headImg: string, followersCount: number,
 *   followingCount: number, following?: boolean | null, followedBy?: boolean | null }} Profile
 * @typedef {{ uid: number, username: string, nickName: string, headImg: string, roles: string[],
 *   createdAt: number, albumWindow: string }} Me
 * @typedef {{ id: number, content: string, pictureUrl?: string | null }} PostSnippet
 * @typedef {{ id: number, kind: 'like' | 'comment' | 'reply' | 'follow' | 'mention', actor: UserCard,
 *   createtime: number, read: boolean, postId?: number | null, post?: PostSnippet | null,
 *   commentId?: number | null, comment?: { id: number, content: string } | null }} Notification
 * @typedef {{ zh: string, en: string }} DisplayName
 * @typedef {{ model: string, displayName: DisplayName, brand: string, updatedAt: number,
 *   updatedBy: number }} DeviceModel
 * @typedef {{ displayName: DisplayName, brand: string }} ModelNames
 * @typedef {{ added: { model: string, after: ModelNames }[],
 *   changed: { model: string, before: ModelNames, after: ModelNames }[], unchanged: number }} ImportPreview
 * @typedef {{ posts: number, users: number, absent: number, mismatches: string[] }} CheckReport
 * @typedef {{ posts: number, users: number }} RebuildReport
 */

/**
 * A page of any list.
 * @template T
 * @typedef {{ items: T[], nextCursor?: string | null, serverTime: number }} Page
 */

export {};
