//! What a device is opened with beyond its backend: the VDevice group id,
//! and the DMA mapping of the pooled buffers.

use std::ffi::c_void;
use std::sync::Arc;

use super::buffer::{DmaMapper, PagePool};
use super::device::DeviceInner;
use super::error::NpuError;
use super::result;

/// `hailo_dma_buffer_direction_t` BOTH: pool buffers serve inputs and
/// outputs alike.
const DMA_BOTH: u32 = 2;

/// Longest group id accepted (HailoRT sets no limit; this keeps it a name).
const MAX_GROUP_ID: usize = 128;

/// A VDevice group id (`hailo_vdevice_params_t::group_id`).
///
/// On a Hailo-10H the card's server lets VDevices of one group share the
/// device, except the group "UNIQUE" (HailoRT's default): a "UNIQUE" client
/// waits up to 5 s for the holder to close, then gets `HAILO_DEVICE_IN_USE`
/// (HailoRT 5.2.0, `hailort_server.cpp`, `VDeviceManager::create_vdevice`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct GroupId(String);

/// A group id that cannot be passed to HailoRT.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("group id '{value}' is invalid: {reason}")]
pub struct BadGroupId {
    pub value: String,
    pub reason: &'static str,
}

impl GroupId {
    /// HailoRT's `HAILO_UNIQUE_VDEVICE_GROUP_ID`, its default: one client.
    pub const UNIQUE: &'static str = "UNIQUE";
    /// The group id processes that share the device agree on here.
    pub const SHARED: &'static str = "SHARED";

    /// Checks a group id: 1 to 128 printable ASCII characters, no spaces.
    ///
    /// # Errors
    /// [`BadGroupId`] naming the value and what is wrong with it.
    pub fn parse(value: &str) -> Result<GroupId, BadGroupId> {
        let bad = |reason| BadGroupId {
            value: value.escape_default().to_string(),
            reason,
        };
        if value.is_empty() {
            return Err(bad("it is empty"));
        }
        if value.len() > MAX_GROUP_ID {
            return Err(bad("it is longer than 128 bytes"));
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad("only printable ASCII without spaces is allowed"));
        }
        Ok(GroupId(value.to_string()))
    }

    /// "UNIQUE".
    pub fn unique() -> GroupId {
        GroupId(GroupId::UNIQUE.into())
    }

    /// "SHARED".
    pub fn shared() -> GroupId {
        GroupId(GroupId::SHARED.into())
    }

    /// The id as HailoRT gets it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for GroupId {
    type Error = BadGroupId;

    fn try_from(s: String) -> Result<GroupId, BadGroupId> {
        GroupId::parse(&s)
    }
}

impl From<GroupId> for String {
    fn from(g: GroupId) -> String {
        g.0
    }
}

impl std::str::FromStr for GroupId {
    type Err = BadGroupId;

    fn from_str(s: &str) -> Result<GroupId, BadGroupId> {
        GroupId::parse(s)
    }
}

/// Maps pool buffers on one device through its table.
struct DeviceMapper {
    device: Arc<DeviceInner>,
}

impl DmaMapper for DeviceMapper {
    fn map(&self, ptr: *mut u8, len: usize) -> Result<(), NpuError> {
        let api = self.device.api;
        self.device.handle.with(|v| {
            // SAFETY: the vdevice is live while `self.device` is; the buffer
            // stays allocated until `unmap`, which PageBuf calls before
            // freeing it, and this mapper keeps the vdevice open until then.
            unsafe { result::vdevice::dma_map(&api, v, ptr.cast::<c_void>(), len, DMA_BOTH) }
        })
    }

    fn unmap(&self, ptr: *mut u8, len: usize) {
        let api = self.device.api;
        let unmapped = self.device.handle.with(|v| {
            // SAFETY: the vdevice is live while `self.device` is.
            unsafe { result::vdevice::dma_unmap(&api, v, ptr.cast::<c_void>(), len, DMA_BOTH) }
        });
        if let Err(err) = unmapped {
            log::warn!(
                "unmapping a {len}-byte buffer on {}: {err}",
                self.device.device_id
            );
        }
    }
}

/// The buffer pool of a model configured on `device`: on the host's page
/// size, and mapping its buffers when the device was opened with `dma_map`.
pub(crate) fn pool_for(device: &Arc<DeviceInner>) -> PagePool {
    let pool = PagePool::default();
    if device.dma_map {
        pool.mapping(Arc::new(DeviceMapper {
            device: Arc::clone(device),
        }))
    } else {
        pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids_are_checked() {
        assert_eq!(GroupId::parse("SHARED"), Ok(GroupId::shared()));
        assert_eq!("UNIQUE".parse::<GroupId>(), Ok(GroupId::unique()));
        assert_eq!(GroupId::parse("rig-7").unwrap().as_str(), "rig-7");
        for bad in ["", "two words", "nul\0", "é", &"x".repeat(129)] {
            let err = GroupId::parse(bad).unwrap_err();
            assert!(err.to_string().starts_with("group id '"), "{err}");
        }
    }
}
