//! The USB part's network: the host side `usbnet0` up with 192.168.10.11, and
//! the card's hRPC port (192.168.10.12:12133) taking TCP connections.

use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::time::Instant;

use super::env::Environment;
use super::{Check, Transports};

/// The name the udev rule gives the gadget's interface.
pub const INTERFACE: &str = "usbnet0";
/// The host's address on the gadget link.
pub const HOST_ADDR: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 11);

const INSTALL_FIX: &str = "sudo udev/install.sh, then replug the card";

/// `net.usbnet0` and `net.hrpc`.
pub fn checks(env: &Environment<'_>, t: &Transports) -> Vec<Check> {
    if !t.usb_network() {
        let why = if t.pcie {
            "PCIe part: no USB network"
        } else {
            "no USB part on the bus (see usb.gadget)"
        };
        return vec![
            Check::skip("net.usbnet0", why),
            Check::skip("net.hrpc", why),
        ];
    }
    vec![interface_check(env), hrpc_check(env)]
}

fn interface_check(env: &Environment<'_>) -> Check {
    const ID: &str = "net.usbnet0";
    let dir = format!("/sys/class/net/{INTERFACE}");
    if !env.root.path(&dir).exists() {
        return Check::fail(
            ID,
            format!("no interface {INTERFACE}: the gadget is not named (or not plugged in)"),
            INSTALL_FIX,
        );
    }
    let state = env
        .root
        .read_attr(format!("{dir}/operstate"))
        .unwrap_or_else(|| "unreadable".to_owned());
    if state != "up" {
        return Check::fail(
            ID,
            format!("{INTERFACE} is {state}"),
            format!(
                "sudo ip link set {INTERFACE} up (networkd or NetworkManager does it once udev/install.sh has run)"
            ),
        );
    }
    let addrs = match env.net.addresses(INTERFACE) {
        Ok(a) => a,
        Err(e) => {
            return Check::warn(
                ID,
                format!("{INTERFACE} up; {e}"),
                format!("ip addr show {INTERFACE}"),
            )
        }
    };
    let list: Vec<String> = addrs.iter().map(IpAddr::to_string).collect();
    if addrs.contains(&IpAddr::V4(HOST_ADDR)) {
        Check::ok(ID, format!("{INTERFACE} up, {}", list.join(" ")))
    } else {
        let have = if list.is_empty() {
            "no address".to_owned()
        } else {
            list.join(" ")
        };
        Check::fail(
            ID,
            format!("{INTERFACE} up with {have}, not {HOST_ADDR}/24"),
            "sudo udev/install.sh; then `sudo networkctl reload` (systemd-networkd) or `sudo nmcli connection up hailo-usbnet0` (NetworkManager)",
        )
    }
}

fn hrpc_check(env: &Environment<'_>) -> Check {
    const ID: &str = "net.hrpc";
    let start = Instant::now();
    match TcpStream::connect_timeout(&env.card, env.connect_timeout) {
        Ok(_) => Check::ok(
            ID,
            format!(
                "hRPC port {} accepts TCP ({:.1} ms)",
                env.card,
                start.elapsed().as_secs_f64() * 1e3
            ),
        ),
        Err(e) => Check::fail(
            ID,
            format!(
                "hRPC port {} unreachable within {:.1} s: {e}",
                env.card,
                env.connect_timeout.as_secs_f64()
            ),
            format!(
                "wait for the card to boot; `ping -c1 {}` must answer and hailort_server must run on the card",
                env.card.ip()
            ),
        ),
    }
}
