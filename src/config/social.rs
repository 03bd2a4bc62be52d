//! Feeds and the social graph: who is pushed to and who is pulled from,
//! timelines, and how many one may follow and block.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
    Variable {
        name: "MOMENTS_ACTIVE_DAYS",
        default: DefaultValue::Literal("7"),
        allowed: "a whole number of days",
        meaning:
            "followers inactive for longer are not pushed new posts (0: push to nobody, build \
                  every timeline on read)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.active_days = whole(v, 0, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_PULLED_AUTHOR_FOLLOWERS",
        default: DefaultValue::Literal("10000"),
        allowed: "a whole number",
        meaning: "authors with more followers are pulled at read time, never pushed",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.pulled_author_followers = whole(v, 0, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_TIMELINE_MAX",
        default: DefaultValue::Literal("800"),
        allowed: "a whole number, at least 1",
        meaning: "entries a cached home timeline keeps; older pages come from the documents",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.timeline_max = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MAX_FOLLOWING",
        default: DefaultValue::Literal("5000"),
        allowed: "a whole number, at least 1",
        meaning: "accounts one account may follow (one more: 409)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.max_following = whole(v, 1, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MAX_BLOCKS",
        default: DefaultValue::Literal("5000"),
        allowed: "a whole number, at least 1",
        meaning: "accounts one account may block (one more: 409)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.max_blocks = whole(v, 1, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_BLOCKERS_READ_WHOLE",
        default: DefaultValue::Literal("200"),
        allowed: "a whole number, at least 1",
        meaning: "accounts blocking one user that each read of that user loads whole; past it, \
                  reads ask only whether the people on the page are among them",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.blockers_read_whole = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_ERASE_IN_REQUEST",
        default: DefaultValue::Literal("2000"),
        allowed: "a whole number",
        meaning: "records of a deleted account (posts, comments, likes, follows...) erased before \
                  DELETE /me answers; the rest are erased in the background (0: all of them), \
                  and from the answer on its posts and follows are not readable (its comments and \
                  likes on others' posts show as an unknown user's until erased)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.erase_in_request = whole_usize(v, 0, usize::MAX)?;
            Ok(())
        },
    },
];
