//! SHA-256 digests in the lower-case hex form that cache file names and
//! provenance records carry.

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, as 64 lower-case hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_of_abc_is_the_fips_180_example() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Negative control: one byte more gives another digest.
        assert_ne!(sha256_hex(b"abcd"), sha256_hex(b"abc"));
    }
}
