//! Use cases. Services see the ports, never HTTP types or a concrete store.

pub mod accounts;
pub mod assemble;
pub mod comments;
pub mod device_names;
pub mod likes;
pub mod live_tools;
pub mod loader;
pub mod password_pool;
pub mod posts;
pub mod repair;
pub mod views;

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::post::Visibility;
use crate::domain::time_text::{Lang, TzOffset};
use crate::store::metered::RoundTrips;
use crate::store::{DocStore, LiveStore, PostBody};
use device_names::DeviceNames;
use repair::LiveRepair;

/// Everything a use case needs, shared by all requests.
#[derive(Clone)]
pub struct Context {
    pub docs: Arc<dyn DocStore>,
    pub live: Arc<dyn LiveStore>,
    pub devices: Arc<DeviceNames>,
    pub repair: Arc<LiveRepair>,
    pub settings: Arc<Settings>,
    /// Store round trips made so far, by port.
    pub round_trips: Arc<RoundTrips>,
}

/// Who is asking: `None` is an anonymous reader.
pub type Viewer = Option<i64>;

/// How the reader wants times and device names shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presentation {
    /// `Some` adds `createtimeText` in that language.
    pub lang: Option<Lang>,
    pub tz: TzOffset,
    pub now: i64,
}

impl Presentation {
    pub fn device_lang(&self) -> Lang {
        self.lang.unwrap_or_default()
    }
    pub fn text(&self, created: i64) -> Option<String> {
        self.lang
            .map(|l| crate::domain::time_text::createtime_text(created, self.now, l, self.tz))
    }
}

/// Whether `viewer` may read `post`. Follower and friend audiences need the
/// social graph, which does not exist yet: until it does, those posts are
/// shown to their author only (hiding too much is the safe error).
pub fn can_see(post: &PostBody, viewer: Viewer) -> bool {
    if post.deleted {
        return false;
    }
    match post.visibility {
        Visibility::Public => true,
        Visibility::Followers | Visibility::Friends | Visibility::Private => {
            viewer == Some(post.author_uid)
        }
    }
}
