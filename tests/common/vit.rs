//! A backbone small enough to build and count in a test.

use hailo_edge::metrics::ops::vit::VitSpec;

/// The keypoint backbone's layout (12 layers, patch 12, one projector) at width 24 with 2
/// heads, on a `side` x `side` input cut into `num_windows` windows per side.
pub fn small_vit(side: usize, num_windows: usize) -> VitSpec {
    VitSpec {
        side,
        patch: 12,
        embed: 24,
        layers: 12,
        heads: 2,
        mlp: 96,
        projectors: 1,
        num_windows,
    }
}
