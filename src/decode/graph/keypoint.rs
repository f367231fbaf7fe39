//! The keypoint stage of each decoder layer (GroupPose style), run on the query slots that
//! [`Slots`] keeps.
//!
//! Per kept slot there are 17 keypoint tokens. Each layer, after the detection sublayers:
//! 1. instance self-attention over [query token, 17 keypoint tokens] per slot; the update of
//!    the query token is scaled by the learned `instance_kp_layer_scale` and written back
//!    into the detection stream through `kp_inst_norm`; the keypoint tokens take theirs
//!    through `kp_norm`;
//! 2. deformable cross-attention of the 17 x K keypoint tokens on the keypoint memory, each
//!    with its parent slot's reference box and query position;
//! 3. a keypoint FFN.
//!
//! Slots outside the kept ones pass through `kp_inst_norm` without an update: upstream adds
//! their own (layer-scaled) instance-attention update there, which is the only way the
//! keypoint work of one slot reaches the detection stream, and through the next layer's
//! self-attention every other slot.

use super::attention::{Deformable, SelfAttention};
use super::layer::feed_forward;
use super::net::{draw, Init, Net};
use super::selection::EPS;
use super::{Sizes, KEYPOINTS};
use crate::metrics::ops::builder::Attr;

/// Which query slots run the keypoint branch, and in which order they are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Slots {
    /// Every slot (upstream).
    All,
    /// The first `n` slots after the sorted TopK: the `n` best proposals.
    First(usize),
    /// The last `n` slots in reverse order, written back into the first `n` (a broken
    /// slot order, the negative control of the slot tests).
    Reversed(usize),
}

impl Slots {
    /// Slots that run the branch.
    pub(super) fn count(&self, queries: usize) -> usize {
        match self {
            Self::All => queries,
            Self::First(n) | Self::Reversed(n) => *n,
        }
    }

    /// Slots the last layer and the heads run on, and the graph returns: the kept slots
    /// when they are the first ones, every slot otherwise.
    pub(super) fn returned(&self, queries: usize) -> usize {
        match self {
            Self::First(n) => *n,
            Self::All | Self::Reversed(_) => queries,
        }
    }

    /// The slot index each branch row reads.
    fn rows(&self, queries: usize) -> Vec<usize> {
        match self {
            Self::All => (0..queries).collect(),
            Self::First(n) => (0..*n).collect(),
            Self::Reversed(n) => (0..*n).map(|i| queries - 1 - i).collect(),
        }
    }

    /// The kept rows of `x` along axis 1.
    pub(super) fn take(&self, net: &mut Net, x: &str, queries: usize) -> String {
        match self {
            Self::All => x.to_owned(),
            Self::First(n) => net.slice(x, 0, *n as i64, 1),
            Self::Reversed(_) => {
                let rows: Vec<i64> = self.rows(queries).iter().map(|&r| r as i64).collect();
                let idx = net.ints(&rows);
                net.op("Gather", &[x, &idx], &[("axis", Attr::Int(1))])
            }
        }
    }
}

/// Per-slot inputs of the keypoint stage, taken once before the layers.
pub(super) struct SlotInputs {
    /// Reference boxes of the kept slots (1, K, 4).
    pub reference: String,
    /// The parent box of every keypoint token (1, K * 17, 4).
    pub keypoint_reference: String,
    /// Query positions of the kept slots, repeated per keypoint (1, K, 17, width).
    pub query_pos: String,
    /// Position embedding of the 18 instance tokens (18, width), zero for the query token.
    pub instance_pos: String,
}

impl SlotInputs {
    pub(super) fn new(
        net: &mut Net,
        sizes: &Sizes,
        slots: &Slots,
        reference: &str,
        query_pos: &str,
    ) -> Self {
        let (d, q) = (sizes.width, sizes.queries);
        let k = slots.count(q);
        let reference = slots.take(net, reference, q);
        let r = net.unsqueeze(&reference, 2);
        let r = net.expand(&r, &[1, k, KEYPOINTS, 4]);
        let keypoint_reference = net.reshape(&r, &[1, k * KEYPOINTS, 4]);
        let pos = slots.take(net, query_pos, q);
        let pos = net.unsqueeze(&pos, 2);
        let query_pos = net.expand(&pos, &[1, k, KEYPOINTS, d]);
        let keypoint_pos = net.param(
            "transformer.keypoint_pos_embed",
            &[KEYPOINTS, d],
            Init::Std(0.1),
        );
        let zero = net.constant(&[1, d], &vec![0.0; d]);
        let instance_pos = net.concat(&[&zero, &keypoint_pos], 0);
        Self {
            reference,
            keypoint_reference,
            query_pos,
            instance_pos,
        }
    }
}

/// The keypoint tokens before the first layer (1, K, 17, width).
///
/// Upstream derives them from learned queries modulated (adaLN) by the content queries;
/// both are constants at inference, so the result is one constant per slot, drawn here for
/// all `Q` slots and cut to the kept ones.
pub(super) fn initial_tokens(net: &mut Net, seed: u64, sizes: &Sizes, slots: &Slots) -> String {
    let (d, q) = (sizes.width, sizes.queries);
    let per_slot = KEYPOINTS * d;
    let all = draw(
        seed,
        "transformer.keypoint_query_init",
        q * per_slot,
        Init::Std(1.0),
    );
    let rows = slots.rows(q);
    let mut kept = Vec::with_capacity(rows.len() * per_slot);
    for r in &rows {
        kept.extend_from_slice(&all[r * per_slot..(r + 1) * per_slot]);
    }
    net.param_values(
        "transformer.keypoint_query_init",
        &[1, rows.len(), KEYPOINTS, d],
        &kept,
    )
}

/// Layer `l`'s keypoint stage on a detection target of `rows` slots (every slot, or the
/// kept ones alone): returns the new target (1, rows, width) and the new keypoint tokens
/// (1, K, 17, width).
#[allow(clippy::too_many_arguments)]
pub(super) fn stage(
    net: &mut Net,
    l: usize,
    sizes: &Sizes,
    slots: &Slots,
    layer_scale: f32,
    target: &str,
    rows: usize,
    tokens: &str,
    inputs: &SlotInputs,
    memory: &str,
    grid: usize,
) -> (String, String) {
    let (d, q) = (sizes.width, sizes.queries);
    let k = slots.count(q);
    let name = format!("transformer.decoder.layers.{l}");
    let kept = if rows == q {
        slots.take(net, target, q)
    } else {
        target.to_owned()
    };
    let head = net.unsqueeze(&kept, 2);
    let inst = net.concat(&[&head, tokens], 2);
    let inst = net.reshape(&inst, &[k, KEYPOINTS + 1, d]);
    let with_pos = net.add(&inst, &inputs.instance_pos);
    let attention = SelfAttention {
        name: &format!("{name}.kp_inst_self_attn"),
        width: d,
        heads: sizes.sa_heads,
        batch: k,
        queries: KEYPOINTS + 1,
        tokens: KEYPOINTS + 1,
    };
    let update = attention.build(net, &with_pos, &with_pos, &inst);
    let update = net.reshape(&update, &[1, k, KEYPOINTS + 1, d]);
    let head_update = net.slice(&update, 0, 1, 2);
    let head_update = net.reshape(&head_update, &[1, k, d]);
    let scale = net.param(
        &format!("{name}.instance_kp_layer_scale"),
        &[1],
        Init::Fill(layer_scale),
    );
    let scaled = net.mul(&head_update, &scale);
    let target = write_back(
        net,
        &format!("{name}.kp_inst_norm"),
        sizes,
        slots,
        (target, rows),
        &scaled,
    );

    let token_update = net.slice(&update, 1, (KEYPOINTS + 1) as i64, 2);
    let sum = net.add(tokens, &token_update);
    let tokens = net.layer_norm(&format!("{name}.kp_norm"), &sum, d, EPS);

    let query = net.add(&tokens, &inputs.query_pos);
    let query = net.reshape(&query, &[1, k * KEYPOINTS, d]);
    let cross = Deformable {
        name: &format!("{name}.kp_cross_attn"),
        width: d,
        heads: sizes.ca_heads,
        points: sizes.points,
        queries: k * KEYPOINTS,
        grid,
    };
    let ca = cross.build(net, &query, &inputs.keypoint_reference, memory);
    let ca = net.reshape(&ca, &[1, k, KEYPOINTS, d]);
    let sum = net.add(&tokens, &ca);
    let tokens = net.layer_norm(&format!("{name}.kp_cross_attn_norm"), &sum, d, EPS);

    let ffn = feed_forward(
        net,
        &format!("{name}.kp_linear"),
        &tokens,
        d,
        sizes.keypoint_ffn,
    );
    let sum = net.add(&tokens, &ffn);
    let tokens = net.layer_norm(&format!("{name}.kp_norm5"), &sum, d, EPS);
    (target, tokens)
}

/// `kp_inst_norm(target + update)` on the kept slots, `kp_inst_norm(target)` on the rest,
/// for a target of `rows` slots.
fn write_back(
    net: &mut Net,
    name: &str,
    sizes: &Sizes,
    slots: &Slots,
    (target, rows): (&str, usize),
    update: &str,
) -> String {
    let d = sizes.width;
    let k = slots.count(sizes.queries);
    if k >= rows {
        let sum = net.add(target, update);
        return net.layer_norm(name, &sum, d, EPS);
    }
    let head = net.slice(target, 0, k as i64, 1);
    let head = net.add(&head, update);
    let rest = net.slice(target, k as i64, rows as i64, 1);
    let joined = net.concat(&[&head, &rest], 1);
    net.layer_norm(name, &joined, d, EPS)
}
