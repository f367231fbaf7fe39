//! A HEF with a large code-word section: listing reads only header and
//! protobuf; verifying streams the code words and catches a late flip.

use std::io::{Seek, SeekFrom, Write};

use hef::samples::{backbone, fake_ccws};
use hef::{ErrorClass, Hef, HefBuilder, ReaderOptions};

#[test]
fn large_code_words_are_streamed_not_loaded() {
    let model = backbone(432);
    let ccws = fake_ccws(24 << 20);
    let bytes = HefBuilder::new(&model)
        .ccw_bytes(ccws)
        .build()
        .expect("builds");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("large.hef");
    std::fs::write(&path, &bytes).expect("write");
    drop(bytes);

    assert_eq!(Hef::open(&path).expect("verified"), model);
    let lazy = ReaderOptions::new()
        .verify_checksum(false)
        .open(&path)
        .expect("listed");
    assert_eq!(lazy, model);

    // Flip the very last byte: only the verifying reader can notice.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("open");
    let len = file.metadata().expect("metadata").len();
    file.seek(SeekFrom::Start(len - 1)).expect("seek");
    file.write_all(&[0x5A]).expect("write");
    drop(file);
    assert_eq!(
        ReaderOptions::new()
            .verify_checksum(false)
            .open(&path)
            .expect("listed"),
        model
    );
    let err = Hef::verify(&path).expect_err("checksum");
    assert_eq!(err.class(), ErrorClass::Corrupted);
    assert!(err.to_string().contains("large.hef"));
}
