//! Latency statistics per stage and frame accounting.
//!
//! Latencies go into an HDR histogram (1 ns to 60 s, 3 significant digits) so p50 and p99 stay
//! exact to 0.1% at any rate without keeping samples; jitter is the change between
//! consecutive latencies (mean and max), as real-time runtimes report it. Frame accounting
//! holds every frame to one equation, captured = processed + dropped + in flight, so a frame
//! lost without being counted shows up as an error instead of a quietly better fps.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Longest latency the histograms track; longer samples are recorded as this and counted.
const MAX_NS: u64 = 60_000_000_000;

/// Errors of the statistics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// Frames are missing from the accounting.
    #[error(
        "frame accounting of {scope} does not balance: captured {captured} != processed {processed} \
         + dropped {dropped} + in flight {in_flight}"
    )]
    Unbalanced {
        /// Camera or stage the counts belong to.
        scope: String,
        /// Frames captured.
        captured: u64,
        /// Frames fully processed.
        processed: u64,
        /// Frames dropped (all reasons).
        dropped: u64,
        /// Frames still in the pipeline.
        in_flight: u64,
    },
}

/// Latency statistics of one stage.
#[derive(Debug, Clone)]
pub struct LatencyStats {
    hist: Histogram<u64>,
    last_ns: Option<u64>,
    jitter_sum_ns: u128,
    jitter_max_ns: u64,
    jitter_count: u64,
    clamped: u64,
}

/// A summary of [`LatencyStats`], in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Mean change between consecutive samples.
    pub jitter_mean_ms: f64,
    /// Largest change between consecutive samples.
    pub jitter_max_ms: f64,
    /// Samples longer than 60 s, recorded as 60 s.
    pub clamped: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyStats {
    /// Empty statistics.
    pub fn new() -> Self {
        // The bounds are constants that hdrhistogram accepts (low >= 1, high >= 2 low, sigfig 3).
        let hist = Histogram::new_with_bounds(1, MAX_NS, 3)
            .unwrap_or_else(|_| unreachable!("constant bounds are valid"));
        Self {
            hist,
            last_ns: None,
            jitter_sum_ns: 0,
            jitter_max_ns: 0,
            jitter_count: 0,
            clamped: 0,
        }
    }

    /// Records one latency.
    pub fn record(&mut self, latency: Duration) {
        let mut ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        if ns > MAX_NS {
            ns = MAX_NS;
            self.clamped += 1;
        }
        self.hist.saturating_record(ns);
        if let Some(last) = self.last_ns {
            let j = ns.abs_diff(last);
            self.jitter_sum_ns += u128::from(j);
            self.jitter_max_ns = self.jitter_max_ns.max(j);
            self.jitter_count += 1;
        }
        self.last_ns = Some(ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The summary, or `None` before the first sample.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.hist.is_empty() {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        let jitter_mean = if self.jitter_count == 0 {
            0.0
        } else {
            self.jitter_sum_ns as f64 / self.jitter_count as f64 / 1e6
        };
        Some(LatencySummary {
            count: self.hist.len(),
            min_ms: ms(self.hist.min()),
            p50_ms: ms(self.hist.value_at_quantile(0.5)),
            p99_ms: ms(self.hist.value_at_quantile(0.99)),
            max_ms: ms(self.hist.max()),
            mean_ms: self.hist.mean() / 1e6,
            jitter_mean_ms: jitter_mean,
            jitter_max_ms: ms(self.jitter_max_ns),
            clamped: self.clamped,
        })
    }
}

/// Resolution of [`ValueStats`]: values are kept in millionths of their unit.
const VALUE_SCALE: f64 = 1e6;
/// Largest value [`ValueStats`] tracks, in its unit; larger ones are recorded as this.
const VALUE_MAX: f64 = 1e6;

/// Percentiles of a non-negative quantity other than a latency (a residual, a share), in an
/// HDR histogram at a millionth of its unit and 3 significant digits, so the median and p99
/// need no stored samples.
#[derive(Debug, Clone)]
pub struct ValueStats {
    hist: Histogram<u64>,
}

/// A summary of [`ValueStats`], in the unit of the values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValueSummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Default for ValueStats {
    fn default() -> Self {
        // The bounds are constants that hdrhistogram accepts (low >= 1, high >= 2 low, sigfig 3).
        let hist = Histogram::new_with_bounds(1, (VALUE_MAX * VALUE_SCALE) as u64, 3)
            .unwrap_or_else(|_| unreachable!("constant bounds are valid"));
        Self { hist }
    }
}

impl ValueStats {
    /// Records one value; non-finite or negative values are not recorded.
    pub fn record(&mut self, value: f64) {
        if value.is_finite() && value >= 0.0 {
            let v = (value.min(VALUE_MAX) * VALUE_SCALE).round().max(1.0) as u64;
            self.hist.saturating_record(v);
        }
    }

    /// The summary, or `None` before the first sample.
    pub fn summary(&self) -> Option<ValueSummary> {
        if self.hist.is_empty() {
            return None;
        }
        let unit = |v: u64| v as f64 / VALUE_SCALE;
        Some(ValueSummary {
            count: self.hist.len(),
            p50: unit(self.hist.value_at_quantile(0.5)),
            p99: unit(self.hist.value_at_quantile(0.99)),
            max: unit(self.hist.max()),
        })
    }
}

/// Latency statistics per named stage (capture, preprocess, npu, decode, fit, ...).
#[derive(Debug, Clone, Default)]
pub struct StageLatencies {
    stages: BTreeMap<String, LatencyStats>,
}

impl StageLatencies {
    /// Records one latency of `stage`.
    pub fn record(&mut self, stage: &str, latency: Duration) {
        // Looked up first: the owned key is made once per stage, not per sample.
        match self.stages.get_mut(stage) {
            Some(stats) => stats.record(latency),
            None => self
                .stages
                .entry(stage.to_owned())
                .or_default()
                .record(latency),
        }
    }

    /// The statistics of `stage`.
    pub fn stage(&self, stage: &str) -> Option<&LatencyStats> {
        self.stages.get(stage)
    }

    /// Summaries of every stage with samples, by name.
    pub fn summaries(&self) -> BTreeMap<String, LatencySummary> {
        self.stages
            .iter()
            .filter_map(|(k, v)| v.summary().map(|s| (k.clone(), s)))
            .collect()
    }
}

/// Frame counts of one camera or stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FrameCounts {
    /// Frames that entered.
    pub captured: u64,
    /// Frames that came out processed.
    pub processed: u64,
    /// Frames dropped, by reason (e.g. `queue_full`, `stale`, `device_timeout`).
    pub dropped: BTreeMap<String, u64>,
    /// Frames still inside when counted.
    pub in_flight: u64,
}

/// `captured 120, processed 117, dropped 3 (queue_full 2, stale 1), in flight 0`: the
/// reasons that dropped no frame are left out.
impl std::fmt::Display for FrameCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "captured {}, processed {}, dropped {}",
            self.captured,
            self.processed,
            self.dropped_total()
        )?;
        let reasons: Vec<String> = self
            .dropped
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        if !reasons.is_empty() {
            write!(f, " ({})", reasons.join(", "))?;
        }
        write!(f, ", in flight {}", self.in_flight)
    }
}

impl FrameCounts {
    /// Total dropped over all reasons.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// Counts a drop for `reason`.
    pub fn drop_frame(&mut self, reason: &str) {
        *self.dropped.entry(reason.to_owned()).or_default() += 1;
    }

    /// Checks captured = processed + dropped + in flight; `scope` names the camera or stage.
    pub fn check(&self, scope: &str) -> Result<(), StatsError> {
        let accounted = self
            .processed
            .checked_add(self.dropped_total())
            .and_then(|s| s.checked_add(self.in_flight));
        if accounted == Some(self.captured) {
            Ok(())
        } else {
            Err(StatsError::Unbalanced {
                scope: scope.to_owned(),
                captured: self.captured,
                processed: self.processed,
                dropped: self.dropped_total(),
                in_flight: self.in_flight,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_counts_read_as_text_with_each_drop_reason() {
        let mut c = FrameCounts {
            captured: 120,
            processed: 117,
            ..FrameCounts::default()
        };
        assert_eq!(
            c.to_string(),
            "captured 120, processed 117, dropped 0, in flight 0"
        );
        c.dropped.insert("decode".into(), 0);
        assert_eq!(
            c.to_string(),
            "captured 120, processed 117, dropped 0, in flight 0"
        );
        c.drop_frame("stale");
        c.drop_frame("queue_full");
        c.drop_frame("queue_full");
        assert_eq!(
            c.to_string(),
            "captured 120, processed 117, dropped 3 (queue_full 2, stale 1), in flight 0"
        );
    }

    #[test]
    fn percentiles_and_jitter() {
        let mut s = LatencyStats::new();
        for i in 1..=100u64 {
            s.record(Duration::from_millis(i));
        }
        let sum = s.summary().unwrap();
        assert_eq!(sum.count, 100);
        assert!((sum.p50_ms - 50.0).abs() < 0.1, "{sum:?}");
        assert!((sum.p99_ms - 99.0).abs() < 0.1, "{sum:?}");
        assert!((sum.mean_ms - 50.5).abs() < 0.1);
        assert!((sum.jitter_mean_ms - 1.0).abs() < 1e-9 && (sum.jitter_max_ms - 1.0).abs() < 1e-9);
        // Alternating samples have the largest jitter for the same distribution.
        let mut alt = LatencyStats::new();
        for i in 0..100u64 {
            alt.record(Duration::from_millis(if i % 2 == 0 { 10 } else { 30 }));
        }
        assert!((alt.summary().unwrap().jitter_mean_ms - 20.0).abs() < 0.05);
        assert!(LatencyStats::new().summary().is_none());
    }

    #[test]
    fn overlong_samples_are_clamped_and_counted() {
        let mut s = LatencyStats::new();
        s.record(Duration::from_secs(120));
        let sum = s.summary().unwrap();
        assert_eq!(sum.clamped, 1);
        assert!((sum.max_ms - 60_000.0).abs() / 60_000.0 < 0.001);
    }

    #[test]
    fn stages_are_kept_apart() {
        let mut st = StageLatencies::default();
        st.record("npu", Duration::from_millis(8));
        st.record("decode", Duration::from_millis(30));
        st.record("npu", Duration::from_millis(9));
        assert_eq!(st.stage("npu").unwrap().count(), 2);
        assert_eq!(st.summaries().len(), 2);
    }

    #[test]
    fn accounting_catches_a_lost_frame() {
        let mut c = FrameCounts {
            captured: 10,
            processed: 7,
            in_flight: 1,
            ..Default::default()
        };
        c.drop_frame("queue_full");
        c.drop_frame("stale");
        assert!(c.check("cam0").is_ok());
        c.captured += 1; // a frame nobody accounted for
        let err = c.check("cam0").unwrap_err().to_string();
        assert!(err.contains("cam0") && err.contains("captured 11"), "{err}");
    }
}
