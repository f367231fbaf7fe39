//! A throughput model of one Cortex-A76 core (Raspberry Pi 5: BCM2712, 4 cores at 2.4 GHz).
//!
//! Instruction-level timing cannot be measured under qemu, so the aarch64 figures in
//! docs/performance.md are this model applied to the counted [`Work`]: the larger of the
//! arithmetic bound and the L1 load bound, at full pipe use and no stalls. It is a lower
//! bound on the time of a well-vectorised kernel, not a measurement.
//!
//! Sources:
//! - Arm Cortex-A76 Software Optimization Guide (PJDOC-466751330-7215, v8.0), section 3:
//!   two ASIMD/FP pipelines V0 and V1, `FMLA` (vector, 128-bit) throughput 2 per cycle;
//!   two load pipelines, `LD1` of one 128-bit register throughput 2 per cycle.
//! - Raspberry Pi 5 product brief: BCM2712, quad-core Cortex-A76 at 2.4 GHz.

use super::Work;

/// The core the model describes, with each assumed figure and its source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Core {
    /// The core's name in the table.
    pub name: &'static str,
    /// Clock in Hz.
    pub hz: f64,
    /// f32 multiply-adds per cycle: FMA pipes times 32-bit lanes per vector.
    pub f32_fma_per_cycle: f64,
    /// 16-bit integer multiply-adds per cycle (the preprocessing's fixed-point taps).
    pub i16_mac_per_cycle: f64,
    /// Bytes the load pipes bring from L1 per cycle.
    pub load_bytes_per_cycle: f64,
    /// Vector instructions of one `exp_approx` lane group (4 lanes): the bound of one
    /// exponential.
    pub exp_ops_per_vector: f64,
    /// ASIMD instructions issued per cycle (both pipes).
    pub vector_ops_per_cycle: f64,
}

/// Raspberry Pi 5's core (see the module sources).
pub const CORTEX_A76_PI5: Core = Core {
    name: "Cortex-A76 @ 2.4 GHz (Raspberry Pi 5), 1 core",
    hz: 2.4e9,
    // V0 and V1 each take one 128-bit FMLA per cycle: 2 x 4 f32 lanes.
    f32_fma_per_cycle: 8.0,
    // MLA on 8 x 16-bit lanes, one per pipe per cycle.
    i16_mac_per_cycle: 16.0,
    // Two LD1 (one 128-bit register) per cycle.
    load_bytes_per_cycle: 32.0,
    // exp_approx per 4 lanes: clamp, 2 FMA for the reduction, 2 for n, 6 for the
    // polynomial, integer add and shift, the final multiply: 13 instructions.
    exp_ops_per_vector: 13.0,
    vector_ops_per_cycle: 2.0,
};

/// The lanes of one 128-bit f32 vector.
const LANES: f64 = 4.0;

impl Core {
    /// Predicted milliseconds for `work`: the largest of its arithmetic, exponential and
    /// load bounds.
    pub fn predict_ms(&self, work: &Work) -> f64 {
        let fma = work.macs as f64 / self.f32_fma_per_cycle;
        let int = work.int_macs as f64 / self.i16_mac_per_cycle;
        let exp = work.exps as f64 / LANES * self.exp_ops_per_vector / self.vector_ops_per_cycle;
        let load = work.load_bytes as f64 / self.load_bytes_per_cycle;
        let cycles = (fma + int + exp).max(load);
        cycles / self.hz * 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_slower_of_arithmetic_and_loads() {
        let core = CORTEX_A76_PI5;
        // 19.2 G multiply-adds per second: 19.2 M take 1 ms when loads are few.
        let fma = Work {
            macs: 19_200_000,
            load_bytes: 1_000,
            ..Work::default()
        };
        assert!((core.predict_ms(&fma) - 1.0).abs() < 1e-9);
        // 76.8 GB/s from L1: 76.8 MB of loads take 1 ms, whatever the arithmetic.
        let loads = Work {
            macs: 1_000,
            load_bytes: 76_800_000,
            ..Work::default()
        };
        assert!((core.predict_ms(&loads) - 1.0).abs() < 1e-9);
        // Negative control: no work, no time.
        assert_eq!(core.predict_ms(&Work::default()), 0.0);
        // Exponentials: 13 instructions per 4 lanes, two instructions per cycle.
        let exps = Work {
            exps: 4_000_000,
            ..Work::default()
        };
        let want = 4e6 / 4.0 * 13.0 / 2.0 / 2.4e9 * 1e3;
        assert!((core.predict_ms(&exps) - want).abs() < 1e-12);
    }
}
