//! The stages of a frame's path, in the order the frame meets them.
//!
//! | stage | module | thread(s) |
//! |---|---|---|
//! | 1 | [`capture`] | one per camera: source to a drop-oldest camera queue |
//! | 2 | [`npu`] | one: admission, preprocessing into job buffers, batching, submission, switching, routing |
//! | 3 | [`decode`] | the decoder pool: features to keypoints |
//! | 4 | [`sync`] | (in the fit thread) views of one instant grouped across cameras |
//! | 5 | [`fit`] | one: triangulation and the pose fit |
//! | 6 | [`sinks`] | JSON lines and the MCAP recorder |

pub mod capture;
pub mod decode;
pub mod fit;
pub mod npu;
pub mod sinks;
pub mod sync;
