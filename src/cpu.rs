//! The CPU features this binary was compiled to assume, against the ones the running CPU has.
//!
//! A build with `RUSTFLAGS="-C target-cpu=native"` (or `-C target-feature=+avx2`, `+dotprod`,
//! `+i8mm`, ...) lets the compiler use those instructions anywhere, not only behind a run-time
//! check. On a CPU without them the first such instruction ends the process with SIGILL and no
//! word of why. `hailo-edge` calls [`check`] first in `main`: a feature the build assumes
//! (`cfg!(target_feature = ..)`) that run-time detection (CPUID,
//! `AT_HWCAP`) does not find becomes a [`MissingFeatures`] error naming
//! every such feature, and the command exits non-zero before any kernel runs.
//!
//! The list covers the features the compiler can turn on through `target-cpu` on the two
//! supported architectures; features the baseline target always has (SSE2 on x86_64, NEON on
//! aarch64) are listed too, so the table is the whole story.

/// One CPU feature: its name as `target_feature` spells it, and whether this build assumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// The `target_feature` name, e.g. `avx2`, `dotprod`.
    pub name: &'static str,
    /// `cfg!(target_feature = name)`: the compiler may emit it anywhere in this binary.
    pub compiled: bool,
}

/// Features this binary assumes that the CPU running it lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this hailo-edge binary was built for CPU features this {arch} CPU lacks: {missing}; \
     it would stop with an illegal instruction. Rebuild without `-C target-cpu=native` or \
     those `-C target-feature` flags (or with `-C target-cpu=` this machine's CPU)",
    missing = .missing.join(", ")
)]
pub struct MissingFeatures {
    /// The architecture, `x86_64` or `aarch64`.
    pub arch: &'static str,
    /// The missing features, in table order.
    pub missing: Vec<&'static str>,
}

/// Defines [`FEATURES`] from one list of names.
macro_rules! cpu_features {
    ($($name:tt),* $(,)?) => {
        /// The features the compiler can assume on this architecture, and whether this build
        /// does.
        pub const FEATURES: &[Feature] =
            &[$(Feature { name: $name, compiled: cfg!(target_feature = $name) }),*];
    };
}

#[cfg(target_arch = "x86_64")]
cpu_features!(
    "sse2",
    "sse3",
    "ssse3",
    "sse4.1",
    "sse4.2",
    "popcnt",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi1",
    "bmi2",
    "lzcnt",
    "movbe",
    "avx512f",
    "avx512cd",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512vnni",
    "avxvnni",
);

#[cfg(target_arch = "aarch64")]
cpu_features!(
    "neon", "fp16", "dotprod", "i8mm", "bf16", "fhm", "rdm", "lse", "rcpc", "crc", "aes", "sha2",
    "sve", "sve2",
);

/// No feature table elsewhere: nothing to check.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const FEATURES: &[Feature] = &[];

/// Whether the running CPU has the feature `name` (a name from [`FEATURES`]); `false` for
/// a name the table does not know.
///
/// Read from the hardware (CPUID and XCR0 on x86_64, the kernel's `AT_HWCAP` and
/// `AT_HWCAP2` on aarch64), not through `is_*_feature_detected!`: those macros answer
/// `true` without asking the CPU for a feature the build enables, which is exactly the
/// case this module exists to catch.
pub fn detected(name: &str) -> bool {
    hardware::has(name).unwrap_or(false)
}

#[cfg(target_arch = "x86_64")]
mod hardware {
    use std::arch::x86_64::{__cpuid_count, _xgetbv, CpuidResult};

    /// CPUID exists on every x86_64 CPU; the callers bound-check leaves against leaf 0.
    fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
        __cpuid_count(leaf, sub)
    }

    /// XCR0, the register states the OS saves (AVX and AVX-512 need them enabled).
    #[target_feature(enable = "xsave")]
    fn xcr0() -> u64 {
        // SAFETY: called only when CPUID reports OSXSAVE, so XGETBV is enabled.
        unsafe { _xgetbv(0) }
    }

    /// The feature's bit, `None` for a name the table does not know.
    pub fn has(name: &str) -> Option<bool> {
        let max = cpuid(0, 0).eax;
        let l1 = cpuid(1, 0);
        let bit = |r: u32, b: u32| r & (1 << b) != 0;
        let (l7, l7s1) = if max >= 7 {
            (cpuid(7, 0), cpuid(7, 1))
        } else {
            (
                CpuidResult {
                    eax: 0,
                    ebx: 0,
                    ecx: 0,
                    edx: 0,
                },
                CpuidResult {
                    eax: 0,
                    ebx: 0,
                    ecx: 0,
                    edx: 0,
                },
            )
        };
        let ext = if cpuid(0x8000_0000, 0).eax >= 0x8000_0001 {
            cpuid(0x8000_0001, 0).ecx
        } else {
            0
        };
        let xcr0 = if bit(l1.ecx, 27) {
            // SAFETY: OSXSAVE is set, so XSAVE and XGETBV are available.
            unsafe { xcr0() }
        } else {
            0
        };
        let avx_os = xcr0 & 0b110 == 0b110;
        let avx512_os = xcr0 & 0xe6 == 0xe6;
        Some(match name {
            "sse2" => bit(l1.edx, 26),
            "sse3" => bit(l1.ecx, 0),
            "ssse3" => bit(l1.ecx, 9),
            "sse4.1" => bit(l1.ecx, 19),
            "sse4.2" => bit(l1.ecx, 20),
            "popcnt" => bit(l1.ecx, 23),
            "movbe" => bit(l1.ecx, 22),
            "avx" => avx_os && bit(l1.ecx, 28),
            "fma" => avx_os && bit(l1.ecx, 12),
            "f16c" => avx_os && bit(l1.ecx, 29),
            "avx2" => avx_os && bit(l7.ebx, 5),
            "bmi1" => bit(l7.ebx, 3),
            "bmi2" => bit(l7.ebx, 8),
            "lzcnt" => bit(ext, 5),
            "avx512f" => avx512_os && bit(l7.ebx, 16),
            "avx512dq" => avx512_os && bit(l7.ebx, 17),
            "avx512cd" => avx512_os && bit(l7.ebx, 28),
            "avx512bw" => avx512_os && bit(l7.ebx, 30),
            "avx512vl" => avx512_os && bit(l7.ebx, 31),
            "avx512vnni" => avx512_os && bit(l7.ecx, 11),
            "avxvnni" => avx_os && bit(l7s1.eax, 4),
            _ => return None,
        })
    }
}

#[cfg(target_arch = "aarch64")]
mod hardware {
    /// The feature's bit in the kernel's `AT_HWCAP` / `AT_HWCAP2` (arch/arm64 uapi
    /// `hwcap.h`), `None` for a name the table does not know.
    pub fn has(name: &str) -> Option<bool> {
        // SAFETY: getauxval has no preconditions; it returns 0 for an absent entry.
        let (hw, hw2) = unsafe {
            (
                libc::getauxval(libc::AT_HWCAP),
                libc::getauxval(libc::AT_HWCAP2),
            )
        };
        let bit = |word: libc::c_ulong, b: u32| word & (1 << b) != 0;
        Some(match name {
            "neon" => bit(hw, 1),
            "aes" => bit(hw, 3),
            "sha2" => bit(hw, 6),
            "crc" => bit(hw, 7),
            "lse" => bit(hw, 8),
            "fp16" => bit(hw, 9) && bit(hw, 10),
            "rdm" => bit(hw, 12),
            "rcpc" => bit(hw, 15),
            "dotprod" => bit(hw, 20),
            "sve" => bit(hw, 22),
            "fhm" => bit(hw, 23),
            "sve2" => bit(hw2, 1),
            "i8mm" => bit(hw2, 13),
            "bf16" => bit(hw2, 14),
            _ => return None,
        })
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod hardware {
    /// No table on this architecture.
    pub fn has(_name: &str) -> Option<bool> {
        None
    }
}

/// This architecture's name in messages.
pub const ARCH: &str = std::env::consts::ARCH;

/// The features in `table` the build assumes and `has` says the CPU lacks.
///
/// # Errors
/// [`MissingFeatures`] naming each of them.
pub fn missing(
    arch: &'static str,
    table: &[Feature],
    has: impl Fn(&str) -> bool,
) -> Result<(), MissingFeatures> {
    let missing: Vec<&'static str> = table
        .iter()
        .filter(|f| f.compiled && !has(f.name))
        .map(|f| f.name)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(MissingFeatures { arch, missing })
    }
}

/// This binary's assumed features against the running CPU's.
///
/// # Errors
/// [`MissingFeatures`] when the CPU lacks one the build assumes.
pub fn check() -> Result<(), MissingFeatures> {
    missing(ARCH, FEATURES, detected)
}

/// The compiled-in features, comma-separated (`baseline` when none beyond it are listed).
pub fn compiled_summary() -> String {
    let on: Vec<&str> = FEATURES
        .iter()
        .filter(|f| f.compiled)
        .map(|f| f.name)
        .collect();
    if on.is_empty() {
        "baseline".to_string()
    } else {
        on.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Feature] = &[
        Feature {
            name: "avx2",
            compiled: true,
        },
        Feature {
            name: "fma",
            compiled: true,
        },
        Feature {
            name: "avx512f",
            compiled: false,
        },
    ];

    #[test]
    fn a_cpu_with_every_compiled_feature_passes() {
        assert_eq!(
            missing("x86_64", TABLE, |n| n == "avx2" || n == "fma"),
            Ok(())
        );
        // A feature the build does not assume may be absent.
        assert_eq!(missing("x86_64", TABLE, |n| n != "avx512f"), Ok(()));
    }

    #[test]
    fn a_compiled_feature_the_cpu_lacks_is_named() {
        let err = missing("x86_64", TABLE, |n| n == "avx2").unwrap_err();
        assert_eq!(err.missing, vec!["fma"]);
        let text = err.to_string();
        assert!(text.contains("x86_64 CPU lacks: fma;"), "{text}");
        assert!(!text.contains("avx2,"), "{text}");
        let none = missing("x86_64", TABLE, |_| false).unwrap_err();
        assert_eq!(none.missing, vec!["avx2", "fma"]);
        assert!(none.to_string().contains("avx2, fma"));
    }

    #[test]
    fn the_running_cpu_has_what_this_test_binary_assumes() {
        assert_eq!(check(), Ok(()));
        for f in FEATURES.iter().filter(|f| f.compiled) {
            assert!(detected(f.name), "{}", f.name);
        }
        // The baseline feature is compiled in on both supported architectures.
        #[cfg(target_arch = "x86_64")]
        assert!(compiled_summary().contains("sse2"));
        #[cfg(target_arch = "aarch64")]
        assert!(compiled_summary().contains("neon"));
        // The hardware table knows every listed name; an unknown name is never present.
        for f in FEATURES {
            assert!(
                hardware::has(f.name).is_some(),
                "{} has no hardware bit",
                f.name
            );
        }
        assert!(!detected("no-such-feature"));
    }
}
