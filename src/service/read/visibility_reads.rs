//! The reads the visibility rules (`visibility`) need beyond the viewer's
//! own sets, each riding in a batched read made anyway where it can:
//! whether people blocked a viewer blocked by too many to read whole, the
//! album windows of older posts' authors, and the labels `only` and
//! `except` posts name. Apart from the rules, which read nothing.

use super::loader::{self, Loaded, Loader};
use super::visibility::{AuthorRules, Relations};
use crate::domain::user::AlbumWindow;
use crate::error::AppResult;
use crate::service::Viewer;
use crate::store::{BlobKey, CachedCard, PostBody, SetKey, SetRead};

impl Relations {
    pub fn from_loaded(viewer: Viewer, loaded: &Loaded) -> Self {
        let authors = AuthorRules {
            now: crate::ids::now_ms(),
            ..AuthorRules::default()
        };
        let Some(v) = viewer else {
            return Relations {
                authors,
                ..Relations::default()
            };
        };
        let sets = loaded.relation_sets(v);
        Relations {
            viewer,
            blocked_by: sets.blocked_by.clone(),
            sets,
            authors,
        }
    }
}

/// Asks, of a viewer blocked by too many to read whole, whether each of
/// `uids` is among them: one batched read, and none at all for everyone
/// else (the usual case). Every read asks before it judges the people it
/// shows (`Relations::blocked`).
pub async fn settle_blocks(
    loader: &mut Loader<'_>,
    rel: &mut Relations,
    uids: impl IntoIterator<Item = i64>,
) -> AppResult<()> {
    let asks = block_asks(rel, uids);
    if asks.is_empty() {
        return Ok(());
    }
    let loaded = loader.load(&[], &asks).await?;
    learn_blocks(rel, &asks, &loaded);
    Ok(())
}

/// `rel`, knowing whether each of `uids` blocked the viewer: `rel` itself
/// when nothing needs asking (nearly always), else a copy that asked, in
/// one read of its own. For reads that judge a page of people with
/// relations they cannot change (a filter inside `fill_page`).
pub async fn knowing<'r>(
    ctx: &crate::service::Context,
    rel: &'r Relations,
    uids: impl IntoIterator<Item = i64>,
) -> AppResult<std::borrow::Cow<'r, Relations>> {
    let asks = block_asks(rel, uids);
    if asks.is_empty() {
        return Ok(std::borrow::Cow::Borrowed(rel));
    }
    let mut loader = loader::Loader::new(ctx);
    let loaded = loader.load(&[], &asks).await?;
    loader.finish("knowing_blocks");
    let mut known = rel.clone();
    learn_blocks(&mut known, &asks, &loaded);
    Ok(std::borrow::Cow::Owned(known))
}

/// The reads `settle_blocks` makes, to ride in a read made anyway.
fn block_asks(rel: &Relations, uids: impl IntoIterator<Item = i64>) -> Vec<SetRead> {
    let Some(v) = rel.viewer else {
        return Vec::new();
    };
    if rel.blocked_by.is_whole() {
        return Vec::new();
    }
    rel.unasked(uids)
        .into_iter()
        .map(|u| SetRead {
            key: SetKey::BlockedBy(v),
            top: 0,
            probe: Some(u),
            below: None,
        })
        .collect()
}

fn learn_blocks(rel: &mut Relations, asks: &[SetRead], loaded: &Loaded) {
    for ask in asks {
        let Some(u) = ask.probe else { continue };
        let blocked = loaded.probed.get(&(ask.key, u)).copied().unwrap_or(true);
        rel.learn_blocked_by(u, blocked);
    }
}

/// Reads, in one batched live read, what `sight` needs to decide these
/// posts beyond the viewer's own sets: the album windows of the authors of
/// older posts, whether the viewer is in the labels that `only` and
/// `except` posts name, and (of a viewer blocked by too many to read
/// whole) whether the authors and `people` blocked the viewer. Nothing is
/// read when none of the posts needs it (the usual case: recent posts, no
/// labels), so a warm page costs no round trip more.
///
/// With `every_card`, every author's card is read, so that a deleted
/// account's posts are known gone (`AuthorRules::gone`): for reads that do
/// not load the authors' cards anyway (a page of posts does, and leaves
/// those out itself).
pub async fn read_author_rules<'p>(
    loader: &mut Loader<'_>,
    rel: &mut Relations,
    posts: impl IntoIterator<Item = &'p PostBody>,
    people: impl IntoIterator<Item = i64>,
    every_card: bool,
) -> AppResult<()> {
    let mut authors: Vec<i64> = Vec::new();
    let mut labels: Vec<(i64, i64)> = Vec::new();
    let mut posters: Vec<i64> = Vec::new();
    for post in posts.into_iter().filter(|p| !p.deleted) {
        posters.push(post.author_uid);
        let by_other = rel.viewer != Some(post.author_uid);
        if (rel.needs_window(post) || (every_card && by_other))
            && !rel.authors.windows.contains_key(&post.author_uid)
        {
            authors.push(post.author_uid);
        }
        labels.extend(
            rel.labels_needed(post)
                .map(|l| (post.author_uid, l))
                .filter(|k| !rel.authors.labels.contains_key(k)),
        );
    }
    authors.sort_unstable();
    authors.dedup();
    labels.sort_unstable();
    labels.dedup();
    let asks = block_asks(rel, posters.into_iter().chain(people));
    if authors.is_empty() && labels.is_empty() && asks.is_empty() {
        return Ok(());
    }
    let blobs: Vec<BlobKey> = authors.iter().map(|a| BlobKey::Card(*a)).collect();
    let mut sets: Vec<SetRead> = labels
        .iter()
        .map(|(owner, label)| SetRead {
            key: SetKey::LabelMembers(*owner, *label),
            top: 0,
            probe: rel.viewer,
            below: None,
        })
        .collect();
    sets.extend(asks.iter().copied());
    let loaded = loader.load(&blobs, &sets).await?;
    learn_blocks(rel, &asks, &loaded);
    for a in authors {
        // No card: the account is gone, and its posts with it.
        let window = match loaded.blobs.get(&BlobKey::Card(a)) {
            Some(text) => loader::from_json::<CachedCard>(text)?.album_window,
            None => {
                rel.authors.gone.insert(a);
                AlbumWindow::All
            }
        };
        rel.authors.windows.insert(a, window);
    }
    for (owner, label) in labels {
        let holds = loaded
            .sets
            .get(&SetKey::LabelMembers(owner, label))
            .is_some_and(|v| v.probe_score.is_some());
        rel.authors.labels.insert((owner, label), holds);
    }
    Ok(())
}
