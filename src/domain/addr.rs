//! Client addresses: which proxies may name the client (`X-Forwarded-For`),
//! and what a per-address rate limit counts by.

use std::net::IpAddr;

/// An address block such as `10.0.0.0/8` or `fd00::/8`; a bare address is a
/// block of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpBlock {
    base: IpAddr,
    prefix: u8,
}

impl IpBlock {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let (addr, prefix) = match raw.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (raw, None),
        };
        let base: IpAddr = addr
            .parse()
            .map_err(|_| format!("{raw:?} is not an address or address/prefix"))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{raw:?}: the prefix must be 0 to {max}"))?,
        };
        Ok(Self { base, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.base, canonical(ip)) {
            (IpAddr::V4(b), IpAddr::V4(a)) => same_prefix(
                u128::from(u32::from(b)) << 96,
                u128::from(u32::from(a)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(b), IpAddr::V6(a)) => {
                same_prefix(u128::from(b), u128::from(a), self.prefix)
            }
            _ => false,
        }
    }
}

fn same_prefix(a: u128, b: u128, prefix: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - u32::from(prefix));
    a & mask == b & mask
}

/// IPv4 addresses arriving as IPv6 (`::ffff:1.2.3.4`) are IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// The client of a request: the peer, unless the peer is a trusted proxy;
/// then the nearest address in `X-Forwarded-For` that is not one (the
/// entries left of it could be made up by the client).
pub fn client_ip(
    peer: Option<IpAddr>,
    forwarded_for: Option<&str>,
    trusted: &[IpBlock],
) -> Option<IpAddr> {
    let peer = canonical(peer?);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|b| b.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let Some(chain) = forwarded_for else {
        return Some(peer);
    };
    let mut client = peer;
    for hop in chain.rsplit(',') {
        match parse_hop(hop.trim()) {
            Ok(ip) => {
                client = canonical(ip);
                if !is_trusted(client) {
                    break;
                }
            }
            // A malformed entry ends what can be believed.
            Err(_) => break,
        }
    }
    Some(client)
}

/// One `X-Forwarded-For` entry: an address, or one with a port
/// (`1.2.3.4:5678`, `[2001:db8::1]:443`), as some proxies write them.
fn parse_hop(hop: &str) -> Result<IpAddr, std::net::AddrParseError> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<std::net::SocketAddr>().map(|a| a.ip()))
}

/// What per-address limits count by: an IPv4 address, or an IPv6 /64 (one
/// subscriber's network: a client has the whole /64 to rotate through).
pub fn limit_subject(ip: IpAddr) -> String {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_parse_and_contain() {
        let b = IpBlock::parse("10.0.0.0/8").unwrap();
        assert!(b.contains(ip("10.200.1.1")));
        assert!(!b.contains(ip("11.0.0.1")));
        assert!(b.contains(ip("::ffff:10.1.2.3")));
        let one = IpBlock::parse("127.0.0.1").unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6 = IpBlock::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(IpBlock::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        for bad in ["10.0.0.0/33", "nope", "::/129", "1.2.3.4/x"] {
            assert!(IpBlock::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies = [IpBlock::parse("10.0.0.0/8").unwrap()];
        let xff = Some("6.6.6.6, 1.2.3.4, 10.0.0.7");
        // An untrusted peer names itself, whatever it claims.
        assert_eq!(
            client_ip(Some(ip("5.5.5.5")), xff, &proxies),
            Some(ip("5.5.5.5"))
        );
        // Behind proxies: the nearest untrusted hop, not the made-up first one.
        assert_eq!(
            client_ip(Some(ip("10.0.0.1")), xff, &proxies),
            Some(ip("1.2.3.4"))
        );
        // Nothing trusted by default.
        assert_eq!(
            client_ip(Some(ip("10.0.0.1")), xff, &[]),
            Some(ip("10.0.0.1"))
        );
        assert_eq!(
            client_ip(Some(ip("10.0.0.1")), Some("garbage, 10.0.0.9"), &proxies),
            Some(ip("10.0.0.9"))
        );
        assert_eq!(client_ip(None, xff, &proxies), None);
        // Entries with ports, as some proxies write them.
        assert_eq!(
            client_ip(Some(ip("10.0.0.1")), Some("1.2.3.4:5678"), &proxies),
            Some(ip("1.2.3.4"))
        );
        assert_eq!(
            client_ip(Some(ip("10.0.0.1")), Some("[2001:db8::7]:443"), &proxies),
            Some(ip("2001:db8::7"))
        );
        // What a client wrote before the proxy's entry does not hide it.
        assert_eq!(
            client_ip(
                Some(ip("10.0.0.1")),
                Some("\u{fffd}\u{fffd}, 7.7.7.7"),
                &proxies
            ),
            Some(ip("7.7.7.7"))
        );
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        assert_eq!(
            limit_subject(ip("2001:db8:1:2:aaaa::1")),
            limit_subject(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(
            limit_subject(ip("2001:db8:1:2::1")),
            limit_subject(ip("2001:db8:1:3::1"))
        );
        assert_eq!(limit_subject(ip("::ffff:1.2.3.4")), "1.2.3.4");
    }
}
