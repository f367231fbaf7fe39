//! Camera controls from the rig file (V4L2 cameras): exposure, gain, auto exposure,
//! power-line frequency, and any other control by the name `v4l2-ctl` gives
//! it. They are set before streaming starts (and again after a reconnect),
//! read back, and reported; a control the device refuses is a warning naming
//! it, and the camera runs on with the driver's value.
//!
//! Order matters: a manual exposure is refused while auto exposure is on, so
//! every control whose name says `auto` is set before the others.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// `V4L2_CTRL_FLAG_DISABLED`: the control is permanently unusable.
pub const FLAG_DISABLED: u32 = 0x0001;
/// `V4L2_CTRL_FLAG_READ_ONLY`.
pub const FLAG_READ_ONLY: u32 = 0x0004;

/// `V4L2_CID_EXPOSURE_AUTO`.
pub const CID_EXPOSURE_AUTO: u32 = 0x009a_0901;
/// `V4L2_CID_EXPOSURE_ABSOLUTE`, in units of 100 µs.
pub const CID_EXPOSURE_ABSOLUTE: u32 = 0x009a_0902;
/// `V4L2_CID_GAIN`.
pub const CID_GAIN: u32 = 0x0098_0913;
/// `V4L2_CID_POWER_LINE_FREQUENCY`.
pub const CID_POWER_LINE_FREQUENCY: u32 = 0x0098_0918;

/// A control's value as the rig file gives it: a number, a switch, or the
/// name of a menu item (`"Manual Mode"`, `"50 Hz"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ControlValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl fmt::Display for ControlValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Int(v) => write!(f, "{v}"),
            Self::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

/// The kind of value a control takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlKind {
    Integer,
    Boolean,
    /// Items named by text.
    Menu,
    /// Items that are numbers; set by index.
    IntegerMenu,
    /// Buttons, strings, arrays and classes: not set from the rig file.
    Other,
}

/// One control a device offers (`VIDIOC_QUERYCTRL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlInfo {
    pub id: u32,
    /// The driver's name, e.g. `Exposure Time, Absolute`.
    pub name: String,
    pub kind: ControlKind,
    pub minimum: i64,
    pub maximum: i64,
    pub step: i64,
    pub default: i64,
    /// `V4L2_CTRL_FLAG_*`.
    pub flags: u32,
    /// Menu items: (index, name); integer-menu items are named by their number.
    pub menu: Vec<(i64, String)>,
}

impl ControlInfo {
    /// The name as `v4l2-ctl` spells it: lower case, every run of other
    /// characters one underscore (`Exposure Time, Absolute` →
    /// `exposure_time_absolute`).
    pub fn key(&self) -> String {
        key_of(&self.name)
    }
}

fn key_of(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    key.trim_end_matches('_').to_owned()
}

/// What became of one requested control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControlOutcome {
    /// The rig file's key.
    pub key: String,
    /// The value asked for, as the rig file gives it.
    pub requested: String,
    /// The value the device holds after setting, read back; `None` when it
    /// could not be read.
    pub applied: Option<i64>,
    pub status: ControlStatus,
    /// Why a control was refused or adjusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Whether the device took a control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlStatus {
    /// Set and read back as asked.
    Applied,
    /// Set, but the driver holds another value (rounded to its step).
    Adjusted,
    /// Not set: the device lacks it, refused it, or the value does not fit.
    Refused,
}

/// The three calls controls need, so that the rules above are tested
/// without a camera.
pub trait ControlDevice {
    type Error: fmt::Display;
    /// Every control the device offers.
    fn controls(&self) -> Result<Vec<ControlInfo>, Self::Error>;
    fn get(&self, id: u32) -> Result<i64, Self::Error>;
    fn set(&self, id: u32, value: i64) -> Result<(), Self::Error>;
}

/// The rig file's friendly keys: the control each names, and how its value
/// is turned into the control's.
fn alias(key: &str) -> Option<u32> {
    Some(match key {
        "exposure_us" => CID_EXPOSURE_ABSOLUTE,
        "auto_exposure" => CID_EXPOSURE_AUTO,
        "gain" => CID_GAIN,
        "power_line_hz" => CID_POWER_LINE_FREQUENCY,
        _ => return None,
    })
}

/// Checks a rig file's control before any device is opened: the friendly
/// keys' values have their documented types and ranges.
///
/// # Errors
/// What the key takes, when the value does not fit.
pub fn check_request(key: &str, value: &ControlValue) -> Result<(), &'static str> {
    let (ok, takes) = match key {
        "exposure_us" => (
            matches!(value, ControlValue::Int(v) if *v > 0),
            "a positive whole number of microseconds",
        ),
        "power_line_hz" => (
            matches!(value, ControlValue::Int(0 | 50 | 60)),
            "0 (off), 50 or 60",
        ),
        "gain" => (matches!(value, ControlValue::Int(_)), "a whole number"),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(takes)
    }
}

/// Sets every requested control, auto controls first, then reads each back.
///
/// # Errors
/// Only when the device's controls cannot be listed; a control that cannot
/// be set is a [`ControlStatus::Refused`] outcome (and a warning naming it).
pub fn apply<D: ControlDevice>(
    device: &D,
    camera: &str,
    requests: &BTreeMap<String, ControlValue>,
) -> Result<Vec<ControlOutcome>, D::Error> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let offered = device.controls()?;
    let mut order: Vec<(&String, &ControlValue)> = requests.iter().collect();
    order.sort_by_key(|(key, _)| !key.contains("auto"));
    let mut set = Vec::new();
    let mut outcomes = Vec::new();
    for (key, value) in order {
        let outcome = |status, applied, note: Option<String>| ControlOutcome {
            key: key.clone(),
            requested: value.to_string(),
            applied,
            status,
            note,
        };
        let found = match alias(key) {
            Some(id) => offered.iter().find(|c| c.id == id),
            None => offered.iter().find(|c| c.key() == *key),
        };
        let Some(info) = found else {
            let names: Vec<String> = offered
                .iter()
                .filter(|c| c.kind != ControlKind::Other)
                .map(ControlInfo::key)
                .collect();
            let note = format!(
                "the device has no such control; it offers {}",
                names.join(", ")
            );
            outcomes.push(outcome(ControlStatus::Refused, None, Some(note)));
            continue;
        };
        let result = raw_value(key, value, info).and_then(|raw| {
            device
                .set(info.id, raw)
                .map(|()| raw)
                .map_err(|e| Refusal::Device {
                    raw,
                    message: e.to_string(),
                })
        });
        match result {
            Ok(raw) => {
                set.push((outcomes.len(), info.id, raw));
                outcomes.push(outcome(ControlStatus::Applied, Some(raw), None));
            }
            Err(why) => {
                let current = device.get(info.id).ok();
                outcomes.push(outcome(
                    ControlStatus::Refused,
                    current,
                    Some(why.to_string()),
                ));
            }
        }
    }
    for (i, id, raw) in set {
        let o = &mut outcomes[i];
        match device.get(id) {
            Ok(v) if v == raw => o.applied = Some(v),
            Ok(v) => {
                o.applied = Some(v);
                o.status = ControlStatus::Adjusted;
                o.note = Some(format!("set to {raw}, the driver holds {v}"));
            }
            Err(e) => {
                o.applied = None;
                o.note = Some(format!("set, but could not be read back: {e}"));
            }
        }
    }
    for o in &outcomes {
        if let (ControlStatus::Refused | ControlStatus::Adjusted, Some(note)) = (o.status, &o.note)
        {
            log::warn!(
                "camera {camera}: control {} = {}: {note}",
                o.key,
                o.requested
            );
        }
    }
    Ok(outcomes)
}

/// Why a control was not set; its text is the outcome's note in the report.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("the control is disabled or read-only on this device")]
    Unavailable,
    #[error("the control is not a number, switch or menu")]
    NotSettable,
    #[error("{value} does not fit: the control takes {takes}")]
    WrongKind { value: String, takes: &'static str },
    #[error("{value} is not an item of its menu ({items})")]
    NotInMenu { value: i64, items: String },
    #[error("no menu item {wanted} ({items})")]
    NoMenuItem { wanted: String, items: String },
    #[error("{raw} is outside the control's range {minimum}..={maximum}")]
    OutOfRange {
        raw: i64,
        minimum: i64,
        maximum: i64,
    },
    #[error("the device refused {raw}: {message}")]
    Device { raw: i64, message: String },
}

/// The value to hand the driver for `value` on `info`, or why there is none.
fn raw_value(key: &str, value: &ControlValue, info: &ControlInfo) -> Result<i64, Refusal> {
    if info.flags & (FLAG_DISABLED | FLAG_READ_ONLY) != 0 {
        return Err(Refusal::Unavailable);
    }
    let raw = match (key, value, info.kind) {
        ("exposure_us", ControlValue::Int(us), _) => (us + 50) / 100,
        ("auto_exposure", ControlValue::Bool(on), ControlKind::Menu) => {
            let wanted: &[&str] = if *on {
                &["aperture_priority_mode", "auto_mode"]
            } else {
                &["manual_mode"]
            };
            menu_index(info, wanted)?
        }
        ("power_line_hz", ControlValue::Int(hz), ControlKind::Menu) => {
            let wanted = match hz {
                0 => "disabled",
                50 => "50_hz",
                _ => "60_hz",
            };
            menu_index(info, &[wanted])?
        }
        (_, ControlValue::Int(v), ControlKind::Integer) => *v,
        (_, ControlValue::Bool(b), ControlKind::Boolean) => i64::from(*b),
        (_, ControlValue::Int(v @ (0 | 1)), ControlKind::Boolean) => *v,
        (_, ControlValue::Text(item), ControlKind::Menu | ControlKind::IntegerMenu) => {
            menu_index(info, &[key_of(item).as_str()])?
        }
        (_, ControlValue::Int(v), ControlKind::Menu | ControlKind::IntegerMenu) => {
            if !info.menu.iter().any(|(i, _)| i == v) {
                return Err(Refusal::NotInMenu {
                    value: *v,
                    items: menu_list(info),
                });
            }
            *v
        }
        (_, _, ControlKind::Other) => {
            return Err(Refusal::NotSettable);
        }
        (_, v, kind) => {
            let takes = match kind {
                ControlKind::Boolean => "true or false",
                ControlKind::Integer => "a whole number",
                _ => "a menu item",
            };
            return Err(Refusal::WrongKind {
                value: v.to_string(),
                takes,
            });
        }
    };
    if raw < info.minimum || raw > info.maximum {
        return Err(Refusal::OutOfRange {
            raw,
            minimum: info.minimum,
            maximum: info.maximum,
        });
    }
    Ok(raw)
}

fn menu_index(info: &ControlInfo, wanted: &[&str]) -> Result<i64, Refusal> {
    wanted
        .iter()
        .find_map(|w| info.menu.iter().find(|(_, n)| key_of(n) == *w))
        .map(|(i, _)| *i)
        .ok_or_else(|| Refusal::NoMenuItem {
            wanted: wanted.join(" or "),
            items: menu_list(info),
        })
}

fn menu_list(info: &ControlInfo) -> String {
    let items: Vec<String> = info.menu.iter().map(|(i, n)| format!("{i} {n}")).collect();
    format!("items: {}", items.join(", "))
}

#[cfg(test)]
#[path = "controls_tests.rs"]
mod tests;
