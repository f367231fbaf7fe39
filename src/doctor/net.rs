//! The USB part's network: the host side `usbnet0` up with 192.168.10.11, and
//! the card's hRPC port (192.168.10.12:12133) taking TCP connections.

use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::time::Instant;

use super::env::Environment;
use super::{Check, Transports};
use crate::npu::probe::USB_INTERFACE as INTERFACE;

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
    let stream = match TcpStream::connect_timeout(&env.card, env.connect_timeout) {
        Ok(s) => s,
        Err(e) => {
            return Check::fail(
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
            )
        }
    };
    let ms = start.elapsed().as_secs_f64() * 1e3;
    // A connection is only the card's when it left through usbnet0: a proxy
    // or another route to the same address would accept it too.
    let local = stream.local_addr().map(|a| a.ip());
    let ours = env.net.addresses(INTERFACE).unwrap_or_default();
    match local {
        Ok(ip) if ours.contains(&ip) => Check::ok(
            ID,
            format!(
                "hRPC port {} accepts TCP over {INTERFACE} ({ms:.1} ms)",
                env.card
            ),
        ),
        Ok(ip) => Check::warn(
            ID,
            format!(
                "hRPC port {} accepts TCP, but from local address {ip}, not {INTERFACE}'s: \
                 something other than the card may have answered",
                env.card
            ),
            format!("`ip route get {}` must name dev {INTERFACE}", env.card.ip()),
        ),
        Err(e) => Check::warn(
            ID,
            format!(
                "hRPC port {} accepts TCP; local address unknown: {e}",
                env.card
            ),
            format!("ip route get {}", env.card.ip()),
        ),
    }
}
