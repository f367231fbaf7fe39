//! Any byte string gives a model or an error, never a panic: random bytes,
//! mutated valid files, and mutated protobufs re-wrapped with a valid
//! checksum so the mutation reaches the decoder and the listing.
//!
//! Bounded for CI; `hef/fuzz` runs the same entry point for longer.

use hef::samples::{self, fixture_files};
use hef::{HeaderVersion, Hef, HefBuilder, ReaderOptions};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    fixture_files()
        .expect("samples write")
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect()
}

/// A mutation: overwrite, insert, delete or truncate at a position.
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let at = |i: usize, len: usize| i % len;
    match m {
        Mutation::Set(i, b) => {
            let i = at(*i, bytes.len());
            bytes[i] = *b;
        }
        Mutation::Insert(i, v) => {
            let i = at(*i, bytes.len() + 1);
            bytes.splice(i..i, v.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let i = at(*i, bytes.len());
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Mutation::Truncate(i) => {
            let i = at(*i, bytes.len());
            bytes.truncate(i);
        }
    }
}

fn read_both_ways(bytes: &[u8]) {
    let checked = Hef::from_bytes(bytes);
    let lazy = ReaderOptions::new()
        .verify_checksum(false)
        .read_bytes(bytes);
    // Errors name where they came from; a listing stays sane.
    if let Err(e) = &checked {
        assert!(!e.to_string().is_empty());
    }
    if let (Ok(a), Ok(b)) = (&checked, &lazy) {
        assert_eq!(a, b, "hashing must not change the listing");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        read_both_ways(&bytes);
        // The same bytes behind a valid header of each version.
        for v in HeaderVersion::ALL {
            let empty = samples::tiny(v);
            if let Ok(file) = HefBuilder::new(&empty).build_around(bytes.clone()) {
                read_both_ways(&file);
            }
        }
    }

    #[test]
    fn mutated_files_never_panic(seed in 0usize..64, muts in prop::collection::vec(mutation(), 1..6)) {
        let seeds = seeds();
        let mut bytes = seeds[seed % seeds.len()].clone();
        for m in &muts {
            apply(&mut bytes, m);
        }
        read_both_ways(&bytes);
    }

    #[test]
    fn mutated_protobufs_never_panic(which in 0usize..4, muts in prop::collection::vec(mutation(), 1..8)) {
        let models = [
            samples::backbone(288),
            samples::two_groups(),
            samples::multi_context(),
            samples::tiny(HeaderVersion::V1),
        ];
        let model = &models[which];
        for net_flow in [true, false] {
            let builder = HefBuilder::new(model).net_flow(net_flow).mux_outputs(which == 2);
            let mut proto = builder.proto_bytes().expect("encodes");
            for m in &muts {
                apply(&mut proto, m);
            }
            let file = builder.build_around(proto).expect("assembles");
            read_both_ways(&file);
        }
    }
}
