//! Publishing the rig's results where people and tools look: Foxglove's well-known
//! messages ([`messages`]) for the MCAP recording and the live Foxglove WebSocket
//! ([`foxglove_ws`]), and bodies and views on Zenoh ([`zenoh`]).
//!
//! Every topic carries wall-clock stamps (a viewer places the run on the calendar);
//! the capture clock (CLOCK_MONOTONIC) stays in each message's MCAP `publish_time`
//! ([`crate::camera::record`]).

pub mod foxglove_ws;
pub mod messages;
pub mod zenoh;
