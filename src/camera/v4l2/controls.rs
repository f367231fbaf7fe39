//! [`ControlDevice`] over the V4L2 control ioctls; the rules of what is set,
//! in which order, and what is reported live in [`crate::camera::controls`].

use crate::camera::controls::{ControlDevice, ControlInfo, ControlKind};

use super::device::Device;
use super::{sys, V4l2Error};

impl ControlDevice for Device {
    type Error = V4l2Error;

    fn controls(&self) -> Result<Vec<ControlInfo>, V4l2Error> {
        let mut out = Vec::new();
        let mut next = sys::CTRL_FLAG_NEXT_CTRL;
        while let Some(q) =
            self.entry::<sys::QueryCtrl>(sys::VIDIOC_QUERYCTRL, "VIDIOC_QUERYCTRL", |q| {
                q.id = next
            })?
        {
            next = q.id | sys::CTRL_FLAG_NEXT_CTRL;
            let kind = match q.type_ {
                sys::CTRL_TYPE_INTEGER => ControlKind::Integer,
                sys::CTRL_TYPE_BOOLEAN => ControlKind::Boolean,
                sys::CTRL_TYPE_MENU => ControlKind::Menu,
                sys::CTRL_TYPE_INTEGER_MENU => ControlKind::IntegerMenu,
                _ => ControlKind::Other,
            };
            let mut menu = Vec::new();
            if matches!(kind, ControlKind::Menu | ControlKind::IntegerMenu) {
                for index in q.minimum.max(0)..=q.maximum.clamp(0, 255) {
                    let item = self.entry::<sys::QueryMenu>(
                        sys::VIDIOC_QUERYMENU,
                        "VIDIOC_QUERYMENU",
                        |m| {
                            m.id = q.id;
                            m.index = index as u32;
                        },
                    );
                    // Menus have holes: EINVAL skips an index, not the rest.
                    if let Ok(Some(m)) = item {
                        let bytes = m.name;
                        let name = if kind == ControlKind::Menu {
                            sys::c_str(&bytes)
                        } else {
                            let mut v = [0u8; 8];
                            v.copy_from_slice(&bytes[..8]);
                            i64::from_le_bytes(v).to_string()
                        };
                        menu.push((i64::from(index), name));
                    }
                }
            }
            out.push(ControlInfo {
                id: q.id,
                name: sys::c_str(&q.name),
                kind,
                minimum: q.minimum.into(),
                maximum: q.maximum.into(),
                step: q.step.into(),
                default: q.default_value.into(),
                flags: q.flags,
                menu,
            });
        }
        Ok(out)
    }

    fn get(&self, id: u32) -> Result<i64, V4l2Error> {
        let c: sys::Control = self.ioctl(
            sys::VIDIOC_G_CTRL,
            "VIDIOC_G_CTRL",
            |c: &mut sys::Control| c.id = id,
        )?;
        Ok(c.value.into())
    }

    fn set(&self, id: u32, value: i64) -> Result<(), V4l2Error> {
        let value = i32::try_from(value).map_err(|_| V4l2Error::Negotiation {
            device: self.path().to_owned(),
            what: format!("control value {value} does not fit in 32 bits"),
        })?;
        self.ioctl::<sys::Control>(sys::VIDIOC_S_CTRL, "VIDIOC_S_CTRL", |c| {
            c.id = id;
            c.value = value;
        })
        .map(drop)
    }
}
