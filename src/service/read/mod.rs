//! The read machinery every use case shares: loading live state through
//! the near cache and rebuilding what is missing, the one visibility
//! module, full pages from filtered sources, assembling expanded posts and
//! writing their JSON, and the response types.

pub mod assemble;
pub mod in_flight;
pub mod loader;
pub mod near_cache;
pub mod paging;
pub mod post_json;
pub mod responses;
pub mod snapshot;
pub mod visibility;
pub mod visibility_reads;
