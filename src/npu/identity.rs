//! The part's identity (`Device::identify`): its firmware version above all.
//!
//! Over hRPC the host's libhailort and the card's HailoRT server exchange no
//! version: a message header is magic, size, message id, action id and status
//! (HailoRT 5.2.0, `hrpc/rpc_connection.hpp`), and the first request after
//! connecting creates the VDevice (`vdevice/vdevice_hrpc_client.cpp`). A
//! card whose server is another release than the library fails later and
//! obscurely; comparing the firmware version with the library's is the check.

use super::device::Device;
use super::error::NpuError;
use super::result::{self, from_c_chars};

/// What a part says about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    /// Control protocol version.
    pub protocol_version: u32,
    /// Firmware (on a Hailo-10H, its HailoRT server's release): major, minor,
    /// revision.
    pub firmware: (u32, u32, u32),
    /// `hailo_device_architecture_t` (6 is HAILO10H).
    pub architecture: u32,
    /// A release build of the firmware.
    pub is_release: bool,
    pub board_name: String,
    pub serial_number: String,
    pub product_name: String,
}

impl Identity {
    /// The architecture's name as HailoRT spells it.
    pub fn architecture_name(&self) -> &'static str {
        match self.architecture {
            0 => "HAILO8_A0",
            1 => "HAILO8",
            2 => "HAILO8L",
            3 => "HAILO15H",
            4 => "HAILO15L",
            5 => "HAILO15M",
            6 => "HAILO10H",
            7 => "HAILO12L",
            _ => "unknown",
        }
    }
}

impl Device {
    /// `Device::identify` of the first physical device.
    ///
    /// # Errors
    /// The table's status (e.g. `NotImplemented` on the stub).
    #[doc(alias = "identify")]
    pub fn identity(&self) -> Result<Identity, NpuError> {
        let api = self.inner.api;
        // SAFETY: the vdevice is live while `self` is.
        let raw = self
            .inner
            .handle
            .with(|v| unsafe { result::vdevice::identify(&api, v, 0) })?;
        let v = raw.fw_version;
        Ok(Identity {
            protocol_version: raw.protocol_version,
            firmware: (v.major, v.minor, v.revision),
            architecture: raw.device_architecture,
            is_release: raw.is_release,
            board_name: from_c_chars(&raw.board_name),
            serial_number: from_c_chars(&raw.serial_number),
            product_name: from_c_chars(&raw.product_name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npu::sim::SimProfile;
    use crate::npu::Backend;

    #[test]
    fn simulator_identifies_as_a_hailo10h_matching_its_library() {
        let device = Device::open(Backend::Sim(SimProfile::default())).unwrap();
        let id = device.identity().unwrap();
        assert_eq!(id.architecture_name(), "HAILO10H");
        assert_eq!(id.board_name, "hailo-edge simulator");
        assert_eq!(id.firmware, device.library_version().unwrap());
    }
}
