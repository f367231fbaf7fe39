//! The rig: cameras, graphs, NPU, decoder, multi-view sync, fit and sinks.
