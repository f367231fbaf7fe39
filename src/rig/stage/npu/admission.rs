//! Admission: the stage takes a frame from a camera queue only while fewer
//! than the rig's in-flight limit are past the camera queues and not yet
//! decoded. When the device or the decoders cannot keep up, frames therefore
//! wait in the camera queues, which drop their oldest (counted by the capture
//! threads), and never age in a queue behind the slow stage: what is admitted
//! is the newest frame there is.

/// Frames past the camera queues and not yet decoded, against a limit.
#[derive(Debug)]
pub(super) struct Admission {
    limit: usize,
    held: usize,
}

impl Admission {
    /// No limit until [`Admission::set_limit`].
    pub(super) fn unlimited() -> Self {
        Self {
            limit: usize::MAX,
            held: 0,
        }
    }

    /// At most `limit` frames held, and never fewer than `least`.
    pub(super) fn set_limit(&mut self, limit: usize, least: usize) {
        self.limit = limit.max(least).max(1);
    }

    /// Whether any frame is held (only then can a decoded one free a slot).
    pub(super) fn holds_any(&self) -> bool {
        self.held > 0
    }

    /// One more frame past the camera queues.
    pub(super) fn hold(&mut self) {
        self.held += 1;
    }

    pub(super) fn has_room_for(&self, frames: usize) -> bool {
        self.held.saturating_add(frames) <= self.limit
    }

    pub(super) fn release(&mut self) {
        self.held = self.held.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::Admission;

    #[test]
    fn admission_stops_at_its_limit() {
        let mut a = Admission { limit: 4, held: 0 };
        assert!(a.has_room_for(4));
        a.held = 3;
        assert!(a.has_room_for(1));
        assert!(!a.has_room_for(2));
        a.release();
        assert!(a.has_room_for(2));
        a.held = 0;
        a.release();
        assert_eq!(a.held, 0);
    }
}
