//! The home feed: the posts of the people a user follows, newest first,
//! merged from a cached list of post ids per user (the home timeline) and
//! the newest posts of pulled authors.
//!
//! - Push (`fan_out`): a new post goes to the author's own timeline and, in
//!   the background, to the timelines of followers active within
//!   `MOMENTS_ACTIVE_DAYS`, a chunk of followers per script call, several in
//!   flight. A push only lands on a timeline that exists and is idempotent
//!   (the post id is the member); a timeline a failed push may have missed
//!   is dropped, to be rebuilt on read. A fan-out cut short (the instance
//!   stopping, the documents failing) is saved and resumed
//!   (`fan_out_registry`).
//! - Pull (`pulled_authors`): authors with more than
//!   `MOMENTS_PULLED_AUTHOR_FOLLOWERS` followers are never pushed; their
//!   posts are merged in at read time. Pushing to every follower of an
//!   account that size would cost more than all its followers' reads.
//! - Rebuild (`page`): a timeline that is absent (its owner was away, it
//!   expired a day unread, the live store was lost, or the owner followed
//!   or unfollowed someone) is rebuilt from the newest posts of the
//!   followees in the same request, so the first page is always full.
//! - History (`page`): timelines keep `MOMENTS_TIMELINE_MAX` entries; pages
//!   past that continue from the documents, so nothing is ever lost.

pub mod fan_out;
pub mod fan_out_registry;
pub mod page;
pub mod pulled_authors;
