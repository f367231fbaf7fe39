//! Op counts, latency and fps statistics, utilisation, reports and plots, and the rig planner.
