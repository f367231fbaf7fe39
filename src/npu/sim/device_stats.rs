//! What a simulated device did: the figures utilisation reports are made of.

use std::collections::BTreeMap;

use serde::Serialize;

/// What one model did on the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelStats {
    pub frames: u64,
    pub bursts: u64,
    /// Switches to this model (the first activation included).
    pub switches_in: u64,
    pub first_start_ns: Option<u64>,
    pub last_end_ns: u64,
}

/// What the simulated device did: feeds utilisation reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SimStats {
    /// The device's current time, ns since it was opened.
    pub now_ns: u64,
    /// Time the device was doing anything (switch, transfer, compute).
    pub busy_ns: u64,
    pub compute_ns: u64,
    pub transfer_ns: u64,
    /// Switches between network groups, the first activation included.
    pub switches: u64,
    /// The duration of each switch, in order.
    pub switch_ns: Vec<u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub faults_injected: u64,
    /// Frame buffers copied through a bounce buffer because they are not
    /// page-aligned (one per buffer and transfer).
    pub bounce_copies: u64,
    /// Frame buffers the driver maps for one transfer because they were not
    /// pre-mapped with `dma_map` (one per buffer and transfer).
    pub transfer_maps: u64,
    /// Host buffers mapped for DMA now (`dma_map` without its `dma_unmap`).
    pub mapped_buffers: u64,
    /// Per model, by network group name.
    pub models: BTreeMap<String, ModelStats>,
}
