use std::cell::RefCell;
use std::collections::BTreeMap;

use super::*;

/// A UVC-like camera as an older kernel names its controls: manual exposure
/// is refused while auto exposure is on, white balance rounds to steps of
/// 10, and `read_only` cannot be set.
struct FakeCamera {
    offered: Vec<ControlInfo>,
    values: RefCell<BTreeMap<u32, i64>>,
    listed: RefCell<u32>,
}

const EXPOSURE_OLD_NAME: u32 = CID_EXPOSURE_ABSOLUTE;
const WHITE_BALANCE: u32 = 0x0098_091a;
const BRIGHTNESS: u32 = 0x0098_0900;
const READ_ONLY: u32 = 0x0098_0999;

fn info(id: u32, name: &str, kind: ControlKind, range: (i64, i64, i64)) -> ControlInfo {
    ControlInfo {
        id,
        name: name.into(),
        kind,
        minimum: range.0,
        maximum: range.1,
        step: range.2,
        default: range.0,
        flags: 0,
        menu: Vec::new(),
    }
}

fn menu(mut c: ControlInfo, items: &[(i64, &str)]) -> ControlInfo {
    c.menu = items.iter().map(|&(i, n)| (i, n.to_owned())).collect();
    c
}

impl FakeCamera {
    fn new() -> Self {
        let mut read_only = info(READ_ONLY, "Pan, Absolute", ControlKind::Integer, (0, 9, 1));
        read_only.flags = FLAG_READ_ONLY;
        let offered = vec![
            info(BRIGHTNESS, "Brightness", ControlKind::Integer, (-64, 64, 1)),
            info(CID_GAIN, "Gain", ControlKind::Integer, (0, 255, 1)),
            menu(
                info(
                    CID_POWER_LINE_FREQUENCY,
                    "Power Line Frequency",
                    ControlKind::Menu,
                    (0, 2, 1),
                ),
                &[(0, "Disabled"), (1, "50 Hz"), (2, "60 Hz")],
            ),
            info(
                WHITE_BALANCE,
                "White Balance Temperature",
                ControlKind::Integer,
                (2800, 6500, 10),
            ),
            menu(
                info(
                    CID_EXPOSURE_AUTO,
                    "Exposure, Auto",
                    ControlKind::Menu,
                    (0, 3, 1),
                ),
                &[(1, "Manual Mode"), (3, "Aperture Priority Mode")],
            ),
            info(
                EXPOSURE_OLD_NAME,
                "Exposure (Absolute)",
                ControlKind::Integer,
                (3, 2047, 1),
            ),
            read_only,
            info(0x0098_0001, "User Controls", ControlKind::Other, (0, 0, 0)),
        ];
        let values = offered.iter().map(|c| (c.id, c.default)).collect();
        let camera = Self {
            offered,
            values: RefCell::new(values),
            listed: RefCell::new(0),
        };
        camera.values.borrow_mut().insert(CID_EXPOSURE_AUTO, 3);
        camera
    }

    fn value(&self, id: u32) -> i64 {
        self.values.borrow()[&id]
    }
}

/// The fake's refusal, as an ioctl's error would read.
#[derive(Debug)]
struct Refused(&'static str);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

fn refused(what: &'static str) -> Refused {
    Refused(what)
}

impl ControlDevice for FakeCamera {
    type Error = Refused;

    fn controls(&self) -> Result<Vec<ControlInfo>, Refused> {
        *self.listed.borrow_mut() += 1;
        Ok(self.offered.clone())
    }

    fn get(&self, id: u32) -> Result<i64, Refused> {
        Ok(self.value(id))
    }

    fn set(&self, id: u32, value: i64) -> Result<(), Refused> {
        if id == EXPOSURE_OLD_NAME && self.value(CID_EXPOSURE_AUTO) != 1 {
            return Err(refused("inactive while auto exposure is on (EACCES)"));
        }
        let value = if id == WHITE_BALANCE {
            value / 10 * 10
        } else {
            value
        };
        self.values.borrow_mut().insert(id, value);
        Ok(())
    }
}

/// Applies `items` to `cam` as a rig file's `[camera.controls]` would.
fn set(cam: &FakeCamera, items: &[(&str, ControlValue)]) -> Vec<ControlOutcome> {
    let requests = items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    apply(cam, "body_0", &requests).unwrap()
}

fn outcome<'a>(all: &'a [ControlOutcome], key: &str) -> &'a ControlOutcome {
    all.iter()
        .find(|o| o.key == key)
        .expect("an outcome per request")
}

#[test]
fn friendly_keys_set_the_controls_they_name_in_their_units() {
    let cam = FakeCamera::new();
    let all = set(
        &cam,
        &[
            ("exposure_us", ControlValue::Int(4000)),
            ("auto_exposure", ControlValue::Bool(false)),
            ("gain", ControlValue::Int(16)),
            ("power_line_hz", ControlValue::Int(50)),
        ],
    );
    assert!(
        all.iter().all(|o| o.status == ControlStatus::Applied),
        "{all:?}"
    );
    assert_eq!(cam.value(CID_EXPOSURE_AUTO), 1, "manual mode");
    assert_eq!(
        cam.value(EXPOSURE_OLD_NAME),
        40,
        "4000 us in units of 100 us"
    );
    assert_eq!(cam.value(CID_GAIN), 16);
    assert_eq!(cam.value(CID_POWER_LINE_FREQUENCY), 1, "the 50 Hz item");
    assert_eq!(outcome(&all, "exposure_us").applied, Some(40));
}

#[test]
fn auto_controls_are_set_first_whatever_their_names_sort_as() {
    // `exposure_absolute` sorts before `exposure_auto`: set in key order, the
    // exposure would meet auto exposure still on and be refused.
    let cam = FakeCamera::new();
    let all = set(
        &cam,
        &[
            ("exposure_absolute", ControlValue::Int(80)),
            ("exposure_auto", ControlValue::Text("Manual Mode".into())),
        ],
    );
    assert_eq!(
        outcome(&all, "exposure_absolute").status,
        ControlStatus::Applied
    );
    assert_eq!(cam.value(EXPOSURE_OLD_NAME), 80);

    // Control: the same exposure alone, auto exposure left on, is refused.
    let cam = FakeCamera::new();
    let all = set(&cam, &[("exposure_absolute", ControlValue::Int(80))]);
    let o = outcome(&all, "exposure_absolute");
    assert_eq!(o.status, ControlStatus::Refused);
    assert!(
        o.note.as_deref().unwrap().contains("auto exposure is on"),
        "{o:?}"
    );
    assert_eq!(
        o.applied,
        Some(3),
        "the value the device keeps is read back"
    );
}

#[test]
fn a_value_the_driver_rounds_is_reported_as_adjusted() {
    let cam = FakeCamera::new();
    let all = set(
        &cam,
        &[
            ("white_balance_temperature", ControlValue::Int(4005)),
            ("brightness", ControlValue::Int(-10)),
        ],
    );
    let o = outcome(&all, "white_balance_temperature");
    assert_eq!(o.status, ControlStatus::Adjusted);
    assert_eq!(o.applied, Some(4000));
    assert!(o.note.as_deref().unwrap().contains("4005"), "{o:?}");
    // Control: a value on the step reads back as asked.
    let o = outcome(&all, "brightness");
    assert_eq!(
        (o.status, o.applied, &o.note),
        (ControlStatus::Applied, Some(-10), &None)
    );
}

#[test]
fn refusals_name_the_reason_and_leave_the_other_controls_set() {
    let cam = FakeCamera::new();
    let all = set(
        &cam,
        &[
            ("focus_absolute", ControlValue::Int(3)),
            ("gain", ControlValue::Int(1000)),
            ("brightness", ControlValue::Bool(true)),
            ("pan_absolute", ControlValue::Int(1)),
            ("power_line_frequency", ControlValue::Text("60 Hz".into())),
            ("user_controls", ControlValue::Int(0)),
        ],
    );
    let note = |key| outcome(&all, key).note.clone().unwrap_or_default();
    assert!(note("focus_absolute").contains("no such control"));
    assert!(note("focus_absolute").contains("exposure_auto, exposure_absolute"));
    assert!(
        !note("focus_absolute").contains("user_controls"),
        "classes are not offered"
    );
    assert!(note("gain").contains("outside the control's range 0..=255"));
    assert!(note("brightness").contains("takes a whole number"));
    assert!(note("pan_absolute").contains("read-only"));
    assert!(note("user_controls").contains("not a number, switch or menu"));
    for key in [
        "focus_absolute",
        "gain",
        "brightness",
        "pan_absolute",
        "user_controls",
    ] {
        assert_eq!(outcome(&all, key).status, ControlStatus::Refused, "{key}");
    }
    assert_eq!(cam.value(CID_GAIN), 0, "an out-of-range gain is not sent");
    assert_eq!(
        outcome(&all, "power_line_frequency").status,
        ControlStatus::Applied
    );
    assert_eq!(
        cam.value(CID_POWER_LINE_FREQUENCY),
        2,
        "a menu item by its name"
    );
}

#[test]
fn menus_take_an_item_index_only_when_the_menu_has_it() {
    let cam = FakeCamera::new();
    let all = set(&cam, &[("exposure_auto", ControlValue::Int(2))]);
    let o = outcome(&all, "exposure_auto");
    assert_eq!(o.status, ControlStatus::Refused);
    assert!(o
        .note
        .as_deref()
        .unwrap()
        .contains("1 Manual Mode, 3 Aperture Priority Mode"));
    let all = set(&cam, &[("exposure_auto", ControlValue::Int(1))]);
    assert_eq!(
        outcome(&all, "exposure_auto").status,
        ControlStatus::Applied
    );
}

#[test]
fn no_request_asks_nothing_of_the_device() {
    let cam = FakeCamera::new();
    assert!(apply(&cam, "body_0", &BTreeMap::new()).unwrap().is_empty());
    assert_eq!(*cam.listed.borrow(), 0);
}

#[test]
fn friendly_keys_are_checked_before_a_device_is_opened() {
    assert!(check_request("exposure_us", &ControlValue::Int(8000)).is_ok());
    assert!(check_request("exposure_us", &ControlValue::Int(0)).is_err());
    assert!(check_request("exposure_us", &ControlValue::Text("8 ms".into())).is_err());
    assert!(check_request("power_line_hz", &ControlValue::Int(50)).is_ok());
    assert_eq!(
        check_request("power_line_hz", &ControlValue::Int(55)),
        Err("0 (off), 50 or 60")
    );
    assert!(check_request("gain", &ControlValue::Bool(true)).is_err());
    assert!(
        check_request("sharpness", &ControlValue::Bool(true)).is_ok(),
        "checked on the device"
    );
}

#[test]
fn names_are_keyed_as_v4l2_ctl_spells_them() {
    assert_eq!(key_of("Exposure Time, Absolute"), "exposure_time_absolute");
    assert_eq!(
        key_of("White Balance Temperature, Auto"),
        "white_balance_temperature_auto"
    );
    assert_eq!(key_of("Exposure (Absolute)"), "exposure_absolute");
    assert_eq!(key_of("  Gain "), "gain");
}
