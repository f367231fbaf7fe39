//! Driver timestamps and sequence numbers of dequeued buffers.

use crate::camera::frame::TimestampSource;

use super::sys;

/// A buffer stamp that cannot be used for multi-camera sync.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StampError {
    #[error("driver timestamps are {0}, not CLOCK_MONOTONIC")]
    NotMonotonic(&'static str),
    #[error("negative driver timestamp {sec}s {usec}us")]
    Negative { sec: i64, usec: i64 },
}

/// The capture time (CLOCK_MONOTONIC ns) and its source from a buffer's flags and timeval.
///
/// # Errors
/// [`StampError::NotMonotonic`] when the driver stamps with another clock
/// (or copies stamps from user space): those cannot be compared across cameras.
pub fn capture_time(flags: u32, tv: sys::Timeval) -> Result<(u64, TimestampSource), StampError> {
    match flags & sys::BUF_FLAG_TIMESTAMP_MASK {
        sys::BUF_FLAG_TIMESTAMP_MONOTONIC => {}
        sys::BUF_FLAG_TIMESTAMP_COPY => {
            return Err(StampError::NotMonotonic("copied from user space"))
        }
        sys::BUF_FLAG_TIMESTAMP_UNKNOWN => {
            return Err(StampError::NotMonotonic("of unknown clock"))
        }
        _ => return Err(StampError::NotMonotonic("of an unrecognised type")),
    }
    if tv.tv_sec < 0 || tv.tv_usec < 0 {
        return Err(StampError::Negative {
            sec: tv.tv_sec,
            usec: tv.tv_usec,
        });
    }
    let ns = tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    let source = if flags & sys::BUF_FLAG_TSTAMP_SRC_MASK == sys::BUF_FLAG_TSTAMP_SRC_SOE {
        TimestampSource::DriverStartOfExposure
    } else {
        TimestampSource::DriverEndOfFrame
    };
    Ok((ns, source))
}

/// Counts frames the driver dropped from gaps in the 32-bit `sequence`.
#[derive(Debug, Clone, Default)]
pub struct SequenceTracker {
    last: Option<u32>,
    /// Total frames missing between consecutive buffers.
    pub dropped: u64,
    /// Times the sequence went backwards (stream restarted); not counted as drops.
    pub restarts: u64,
    /// Frames seen, as a 64-bit count that never wraps.
    pub frames: u64,
}

impl SequenceTracker {
    /// Records one buffer's sequence number; returns how many frames were dropped just before it.
    pub fn observe(&mut self, seq: u32) -> u64 {
        self.frames += 1;
        let gap = match self.last {
            None => 0,
            Some(last) => {
                let step = seq.wrapping_sub(last);
                if step == 0 || step > u32::MAX / 2 {
                    // Same or earlier number: the driver restarted its count.
                    self.restarts += 1;
                    0
                } else {
                    u64::from(step - 1)
                }
            }
        };
        self.last = Some(seq);
        self.dropped += gap;
        gap
    }

    /// Forgets the last number (after a reconnect the driver counts from zero).
    pub fn reset(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tv(sec: i64, usec: i64) -> sys::Timeval {
        sys::Timeval {
            tv_sec: sec,
            tv_usec: usec,
        }
    }

    #[test]
    fn monotonic_stamps_are_accepted_with_their_source() {
        let soe = sys::BUF_FLAG_TIMESTAMP_MONOTONIC | sys::BUF_FLAG_TSTAMP_SRC_SOE;
        assert_eq!(
            capture_time(soe, tv(12, 345_678)),
            Ok((12_345_678_000, TimestampSource::DriverStartOfExposure))
        );
        let eof = sys::BUF_FLAG_TIMESTAMP_MONOTONIC | sys::BUF_FLAG_TSTAMP_SRC_EOF;
        assert_eq!(
            capture_time(eof | 0x1, tv(1, 0)).unwrap().1,
            TimestampSource::DriverEndOfFrame
        );
    }

    #[test]
    fn other_clocks_are_refused() {
        assert!(matches!(
            capture_time(sys::BUF_FLAG_TIMESTAMP_COPY, tv(1, 0)),
            Err(StampError::NotMonotonic(_))
        ));
        assert!(capture_time(0, tv(1, 0)).is_err());
        assert!(capture_time(sys::BUF_FLAG_TIMESTAMP_MONOTONIC, tv(-1, 0)).is_err());
    }

    #[test]
    fn gaps_in_sequence_are_drops() {
        let mut t = SequenceTracker::default();
        for (seq, dropped) in [(10, 0), (11, 0), (14, 2), (15, 0), (20, 4)] {
            assert_eq!(t.observe(seq), dropped, "seq {seq}");
        }
        assert_eq!((t.dropped, t.frames, t.restarts), (6, 5, 0));
    }

    #[test]
    fn wrap_around_and_restart() {
        let mut t = SequenceTracker::default();
        t.observe(u32::MAX - 1);
        assert_eq!(t.observe(1), 2); // MAX, 0 missing
        assert_eq!(t.observe(0), 0); // backwards: restart, not a drop
        assert_eq!(t.restarts, 1);
        t.reset();
        assert_eq!(t.observe(500), 0);
        assert_eq!(t.dropped, 2);
    }
}
