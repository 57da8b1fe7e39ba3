//! `listen_interface` and `rpc_interface`: the address of a network
//! interface named in the yaml, picked as Cassandra's
//! `DatabaseDescriptor.getNetworkInterfaceAddress` picks it: the first
//! address of the preferred family (IPv4 unless `*_prefer_ipv6`), else the
//! interface's first address.

use std::net::IpAddr;

use super::{invalid, ConfigError};

/// The machine's interfaces as (name, address), one entry per address, in
/// the order the system lists them.
pub fn machine_interfaces() -> Vec<(String, IpAddr)> {
    if_addrs::get_if_addrs()
        .map(|list| list.into_iter().map(|i| (i.name, i.addr.ip())).collect())
        .unwrap_or_default()
}

/// The address `key` (`listen_interface` or `rpc_interface`) names by
/// `name`, among `interfaces`.
pub fn interface_address(
    key: &'static str,
    name: &str,
    prefer_ipv6: bool,
    interfaces: &[(String, IpAddr)],
) -> Result<IpAddr, ConfigError> {
    let mut addresses = interfaces
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, a)| *a);
    let Some(first) = addresses.next() else {
        return Err(invalid(
            key,
            format!("Configured {key} \"{name}\" could not be found"),
        ));
    };
    let preferred = |a: &IpAddr| a.is_ipv6() == prefer_ipv6;
    if preferred(&first) {
        return Ok(first);
    }
    Ok(addresses.find(preferred).unwrap_or(first))
}

/// `address_key` and `interface_key` are both set: Cassandra's refusal.
pub fn both_set(address_key: &'static str, interface_key: &'static str) -> ConfigError {
    invalid(
        address_key,
        format!("Set {address_key} OR {interface_key}, not both"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interfaces() -> Vec<(String, IpAddr)> {
        [
            ("lo", "127.0.0.1"),
            ("lo", "::1"),
            ("eth0", "fe80::1"),
            ("eth0", "10.0.0.5"),
            ("eth0", "10.0.0.6"),
            ("v6only", "fd00::7"),
        ]
        .iter()
        .map(|(n, a)| (n.to_string(), a.parse().expect("address")))
        .collect()
    }

    /// The address picked, or the error's words.
    fn pick(name: &str, prefer_ipv6: bool) -> Result<IpAddr, ConfigError> {
        interface_address("listen_interface", name, prefer_ipv6, &interfaces())
    }

    fn picked(name: &str, prefer_ipv6: bool) -> String {
        pick(name, prefer_ipv6).expect("an address").to_string()
    }

    #[test]
    fn the_first_address_of_the_preferred_family_else_the_first() {
        assert_eq!(picked("lo", false), "127.0.0.1");
        assert_eq!(picked("lo", true), "::1");
        assert_eq!(picked("eth0", false), "10.0.0.5");
        assert_eq!(picked("eth0", true), "fe80::1");
        assert_eq!(picked("v6only", false), "fd00::7");
    }

    #[test]
    fn an_unknown_interface_is_refused_in_cassandra_words() {
        let error = pick("eth9", false).expect_err("unknown").to_string();
        assert!(
            error.contains("Configured listen_interface \"eth9\" could not be found"),
            "{error}"
        );
    }

    #[test]
    fn the_machine_has_a_loopback_interface() {
        let all = machine_interfaces();
        assert!(all.iter().any(|(_, a)| a.is_loopback()), "{all:?}");
    }
}
