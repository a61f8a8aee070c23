//! Bringing the loopback interface of a new network namespace up (it starts down), so that
//! programs in the sandbox can still talk to themselves over 127.0.0.1 and ::1.
//!
//! One rtnetlink `RTM_NEWLINK` request over a netlink socket: the safe equivalent of
//! `ip link set lo up`, without the `SIOCSIFFLAGS` ioctl (which needs `unsafe`).

use std::os::fd::AsRawFd;

use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};

const RTM_NEWLINK: u16 = 16;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const IFF_UP: u32 = 1;
/// The loopback interface is always the first one of a new network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// The request: `nlmsghdr` (16 bytes) then `ifinfomsg` (16 bytes), in native byte order.
fn request() -> Vec<u8> {
    let mut msg = Vec::with_capacity(32);
    msg.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    msg.extend_from_slice(&RTM_NEWLINK.to_ne_bytes()); // nlmsg_type
    msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes()); // nlmsg_flags
    msg.extend_from_slice(&1u32.to_ne_bytes()); // nlmsg_seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_pid
    msg.extend_from_slice(&[0, 0]); // ifi_family (AF_UNSPEC), padding
    msg.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    msg.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes()); // ifi_index
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    msg
}

/// The errno of an acknowledgement (0 = success), or `None` if `reply` is not one.
fn ack_errno(reply: &[u8]) -> Option<i32> {
    let kind = u16::from_ne_bytes(reply.get(4..6)?.try_into().ok()?);
    if kind != NLMSG_ERROR {
        return None;
    }
    Some(-i32::from_ne_bytes(reply.get(16..20)?.try_into().ok()?))
}

/// Sets the loopback interface up.
pub(super) fn loopback_up() -> Result<(), String> {
    let fd =
        socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkRoute)
            .map_err(|e| format!("netlink socket: {e}"))?;
    sendto(fd.as_raw_fd(), &request(), &NetlinkAddr::new(0, 0), MsgFlags::empty())
        .map_err(|e| format!("netlink send: {e}"))?;
    let mut reply = [0u8; 1024];
    let n =
        recv(fd.as_raw_fd(), &mut reply, MsgFlags::empty()).map_err(|e| format!("netlink receive: {e}"))?;
    match ack_errno(&reply[..n]) {
        Some(0) => Ok(()),
        Some(errno) => Err(nix::errno::Errno::from_raw(errno).to_string()),
        None => Err("unexpected netlink reply".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_one_32_byte_message() {
        let msg = request();
        assert_eq!(msg.len(), 32);
        assert_eq!(u32::from_ne_bytes(msg[..4].try_into().unwrap()), 32);
        assert_eq!(i32::from_ne_bytes(msg[20..24].try_into().unwrap()), 1);
    }

    #[test]
    fn acks_carry_a_negative_errno() {
        let mut reply = vec![0u8; 36];
        reply[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        reply[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(ack_errno(&reply), Some(1));
        reply[16..20].copy_from_slice(&0i32.to_ne_bytes());
        assert_eq!(ack_errno(&reply), Some(0));
        assert_eq!(ack_errno(&[0; 3]), None);
    }
}
