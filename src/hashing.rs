//! A fast hasher for maps keyed by ids (posts, users, live keys): the
//! standard one (SipHash) cost a few percent of a page read, spent hashing
//! the same small integers again and again.
//!
//! Ids are public and a stranger can make many of them (asking for posts
//! that do not exist), so the hash is keyed per process: nobody can aim
//! many keys at one slot without knowing the key.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// `HashMap` with [`IdHash`].
pub type IdMap<K, V> = HashMap<K, V, IdHash>;
/// `HashSet` with [`IdHash`].
pub type IdSet<K> = HashSet<K, IdHash>;

/// Builds [`IdHasher`]s with this process's key.
#[derive(Clone, Copy)]
pub struct IdHash {
    key: u64,
}

impl Default for IdHash {
    fn default() -> Self {
        static KEY: OnceLock<u64> = OnceLock::new();
        let key = *KEY.get_or_init(|| {
            let mut seed = [0u8; 8];
            let _ = getrandom::getrandom(&mut seed);
            u64::from_le_bytes(seed)
        });
        IdHash { key }
    }
}

impl BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.key)
    }
}

pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = mix(self.0 ^ n).wrapping_add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

/// splitmix64's finaliser: every bit of the input moves about half the
/// bits of the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BlobKey, Owner};
    use std::hash::Hash;

    fn hash<T: Hash>(v: T) -> u64 {
        IdHash::default().hash_one(v)
    }

    #[test]
    fn keys_that_differ_hash_apart() {
        assert_ne!(hash(Owner::Post(7)), hash(Owner::User(7)));
        assert_ne!(hash(BlobKey::PostBody(7)), hash(BlobKey::ViewCount(7)));
        assert_ne!(hash((1i64, 2i64)), hash((2i64, 1i64)));
        // Consecutive ids spread over the low bits a table indexes by.
        let buckets: IdSet<u64> = (0..1024i64).map(|i| hash(i) & 1023).collect();
        assert!(buckets.len() > 600, "{} of 1024 buckets", buckets.len());
    }
}
