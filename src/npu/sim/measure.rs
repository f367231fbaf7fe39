//! Hardware latency and DMA mapping in the simulator: the meter a model
//! configured with `HAILO_LATENCY_MEASURE` keeps, the buffers a VDevice has
//! mapped, and their table entries.
//!
//! What HailoRT 5.2.0 does, and what is modelled here:
//! - Latency: `InferModel::set_hw_latency_measurement_flags` takes effect at
//!   configure; `get_hw_latency_measurement` answers `HAILO_NOT_AVAILABLE`
//!   without measurements or with more than one input stream
//!   (`core_op.cpp`, `CoreOp::get_latency_measurement`), and
//!   `HAILO_LATENCY_CLEAR_AFTER_GET` restarts the average. The simulator's
//!   figure is modelled: each frame of a burst is charged the burst's input
//!   transfer, compute and output transfer (the switch excluded).
//! - Mapping: a buffer not aligned to the page size goes through a bounce
//!   copy on every transfer whether mapped or not (`pcie_session.cpp`,
//!   `PcieSession::write_async`/`read_async`); an aligned buffer that is not
//!   pre-mapped is mapped by the kernel driver for each transfer (the driver
//!   is not in HailoRT's repository: assumed). `VDevice::dma_map` makes that
//!   per-transfer mapping go away. Both are counted in the statistics
//!   (`bounce_copies`, `transfer_maps`); neither is charged device time.

use std::ffi::c_void;
use std::sync::Mutex;

use hailort_sys::*;

use super::completion::RawBuf;
use super::core::{lock, Fail};
use super::status::*;
use super::table::{guard, lookup, on_configured, on_model, out};

/// `HAILO_LATENCY_MEASURE`.
const LATENCY_MEASURE: u32 = 1;
/// `HAILO_LATENCY_CLEAR_AFTER_GET`.
const LATENCY_CLEAR_AFTER_GET: u32 = 2;

/// The hardware latency of one configured model.
#[derive(Debug, Default)]
pub(crate) struct LatencyMeter {
    flags: u32,
    sum_ns: u128,
    frames: u64,
}

impl LatencyMeter {
    pub fn set_flags(&mut self, flags: u32) {
        self.flags = flags;
    }

    /// Charges `frames` frames of `ns` each, when measuring.
    pub fn record(&mut self, frames: u64, ns: u64) {
        if self.flags & LATENCY_MEASURE != 0 {
            self.sum_ns += u128::from(frames) * u128::from(ns);
            self.frames += frames;
        }
    }

    /// The average, ns, as `get_hw_latency_measurement` answers it.
    pub fn average(&mut self, model: &str, inputs: usize) -> Result<u64, Fail> {
        let not_available = |why: String| Err((HAILO_NOT_AVAILABLE, format!("'{model}': {why}")));
        if self.flags & LATENCY_MEASURE == 0 {
            return not_available(
                "configured without HAILO_LATENCY_MEASURE (set it before configure)".into(),
            );
        }
        if inputs != 1 {
            return not_available(format!(
                "{inputs} input streams; HailoRT measures models with one input only"
            ));
        }
        if self.frames == 0 {
            return not_available("no frame measured yet".into());
        }
        let avg = u64::try_from(self.sum_ns / u128::from(self.frames)).unwrap_or(u64::MAX);
        if self.flags & LATENCY_CLEAR_AFTER_GET != 0 {
            self.sum_ns = 0;
            self.frames = 0;
        }
        Ok(avg)
    }
}

/// One `dma_map` of a VDevice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    addr: usize,
    len: usize,
    direction: u32,
    /// The VDevice handle that mapped it.
    owner: usize,
}

/// The buffers mapped on one device.
#[derive(Debug, Default)]
pub(crate) struct DmaMaps {
    maps: Mutex<Vec<Mapping>>,
}

/// What one frame's buffers cost on the link besides the transfer itself.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TransferCost {
    pub bounce_copies: u64,
    pub transfer_maps: u64,
}

impl DmaMaps {
    fn map(&self, m: Mapping) {
        lock(&self.maps).push(m);
    }

    fn unmap(&self, m: Mapping) -> Result<(), Fail> {
        let mut maps = lock(&self.maps);
        let at = maps.iter().position(|x| *x == m).ok_or_else(|| {
            (
                HAILO_NOT_FOUND,
                format!(
                    "no mapping of {} bytes at {:#x} in direction {} by this vdevice",
                    m.len, m.addr, m.direction
                ),
            )
        })?;
        maps.swap_remove(at);
        Ok(())
    }

    /// Drops the mappings of a VDevice being released (as HailoRT does).
    pub fn forget(&self, owner: usize) {
        lock(&self.maps).retain(|m| m.owner != owner);
    }

    /// Number of live mappings.
    pub fn count(&self) -> usize {
        lock(&self.maps).len()
    }

    /// The bounce copies and per-transfer mappings `bufs` need on this host's pages.
    pub fn cost<'a>(&self, bufs: impl Iterator<Item = &'a RawBuf>) -> TransferCost {
        self.cost_on_pages(crate::npu::buffer::page_size(), bufs)
    }

    /// The bounce copies and per-transfer mappings `bufs` need on a host of `page`-byte
    /// pages (HailoRT bounces a buffer that is not aligned to the page).
    pub fn cost_on_pages<'a>(
        &self,
        page: usize,
        bufs: impl Iterator<Item = &'a RawBuf>,
    ) -> TransferCost {
        let maps = lock(&self.maps);
        let mut cost = TransferCost::default();
        for b in bufs {
            let addr = b.ptr as usize;
            if !addr.is_multiple_of(page) {
                cost.bounce_copies += 1;
            } else if !maps
                .iter()
                .any(|m| m.addr <= addr && addr + b.len <= m.addr + m.len)
            {
                cost.transfer_maps += 1;
            }
        }
        cost
    }
}

pub(super) unsafe extern "C" fn infer_model_set_hw_latency_flags(
    m: *mut hes_infer_model,
    flags: u32,
) -> hes_status {
    on_model(m, |model| {
        model.settings().latency_flags = flags;
        Ok(())
    })
}

pub(super) unsafe extern "C" fn configured_model_hw_latency(
    c: *mut hes_configured_model,
    avg_ns: *mut u64,
) -> hes_status {
    on_configured(c, |cm| {
        let avg_ns = out(avg_ns)?;
        let avg = cm
            .core
            .hw_latency(cm.model_id, &cm.spec.name, cm.spec.inputs.len())?;
        // SAFETY: `avg_ns` is non-NULL and writable (contract).
        unsafe { *avg_ns = avg };
        Ok(())
    })
}

fn mapping(
    v: *mut hes_vdevice,
    addr: *mut c_void,
    len: usize,
    direction: u32,
) -> Result<Mapping, Fail> {
    if addr.is_null() {
        return Err((HAILO_INVALID_ARGUMENT, "address is NULL".into()));
    }
    if direction > 2 {
        return Err((
            HAILO_INVALID_ARGUMENT,
            format!("DMA direction {direction} is not 0 (H2D), 1 (D2H) or 2 (BOTH)"),
        ));
    }
    Ok(Mapping {
        addr: addr as usize,
        len,
        direction,
        owner: v as usize,
    })
}

/// Runs `f` on the mappings of the device behind `v` and the mapping the
/// arguments describe.
fn on_mapping(
    v: *mut hes_vdevice,
    addr: *mut c_void,
    len: usize,
    direction: u32,
    f: impl FnOnce(&DmaMaps, Mapping) -> Result<(), Fail>,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        f(&dev.core.dma, mapping(v, addr, len, direction)?)
    })
}

pub(super) unsafe extern "C" fn vdevice_dma_map(
    v: *mut hes_vdevice,
    addr: *mut c_void,
    len: usize,
    direction: u32,
) -> hes_status {
    on_mapping(v, addr, len, direction, |maps, m| {
        maps.map(m);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn vdevice_dma_unmap(
    v: *mut hes_vdevice,
    addr: *mut c_void,
    len: usize,
    direction: u32,
) -> hes_status {
    on_mapping(v, addr, len, direction, DmaMaps::unmap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_averages_only_when_measuring_and_clears_on_request() {
        let mut meter = LatencyMeter::default();
        meter.record(2, 1_000);
        assert_eq!(meter.average("m", 1).unwrap_err().0, HAILO_NOT_AVAILABLE);
        meter.set_flags(LATENCY_MEASURE);
        assert_eq!(meter.average("m", 1).unwrap_err().0, HAILO_NOT_AVAILABLE);
        meter.record(1, 1_000);
        meter.record(1, 3_000);
        assert_eq!(meter.average("m", 1), Ok(2_000));
        assert_eq!(meter.average("m", 1), Ok(2_000));
        assert_eq!(meter.average("m", 2).unwrap_err().0, HAILO_NOT_AVAILABLE);
        meter.set_flags(LATENCY_MEASURE | LATENCY_CLEAR_AFTER_GET);
        assert_eq!(meter.average("m", 1), Ok(2_000));
        assert_eq!(meter.average("m", 1).unwrap_err().0, HAILO_NOT_AVAILABLE);
    }

    #[test]
    fn unaligned_buffers_bounce_and_unmapped_ones_are_mapped_per_transfer() {
        let page = crate::npu::buffer::page_size();
        let maps = DmaMaps::default();
        let buf = |addr: usize| RawBuf {
            ptr: std::ptr::without_provenance_mut(addr),
            len: 100,
        };
        let bufs = [buf(page), buf(2 * page), buf(3 * page + 8)];
        let cost = maps.cost(bufs.iter());
        assert_eq!((cost.bounce_copies, cost.transfer_maps), (1, 2));
        let m = |addr| Mapping {
            addr,
            len: 100,
            direction: 2,
            owner: 16,
        };
        maps.map(m(page));
        maps.map(m(3 * page + 8));
        let cost = maps.cost(bufs.iter());
        assert_eq!((cost.bounce_copies, cost.transfer_maps), (1, 1));
        maps.unmap(m(page)).unwrap();
        assert_eq!(maps.unmap(m(page)).unwrap_err().0, HAILO_NOT_FOUND);
        maps.forget(16);
        assert_eq!(maps.count(), 0);
    }

    /// A 16 KiB-page host (Raspberry Pi 5 kernels): the pool's buffers on injected 16 KiB
    /// pages never bounce, are mapped per transfer until mapped once, and the same buffers
    /// from a pool that assumed 4 KiB pages bounce there.
    #[test]
    fn pool_buffers_on_16k_pages_do_not_bounce_on_a_16k_host() {
        use crate::npu::buffer::{PageBuf, PagePool};
        const PAGE: usize = 16_384;
        let raw = |b: &mut PageBuf| RawBuf {
            ptr: b.as_mut_ptr(),
            len: b.len(),
        };
        let pool = PagePool::with_page_size(PAGE).unwrap();
        let mut bufs: Vec<PageBuf> = [1, 10_000, PAGE, 50_000]
            .into_iter()
            .map(|n| pool.take(n))
            .collect();
        let raws: Vec<RawBuf> = bufs.iter_mut().map(raw).collect();
        let maps = DmaMaps::default();
        let cost = maps.cost_on_pages(PAGE, raws.iter());
        assert_eq!((cost.bounce_copies, cost.transfer_maps), (0, 4));
        for r in &raws {
            maps.map(Mapping {
                addr: r.ptr as usize,
                len: r.len,
                direction: 2,
                owner: 1,
            });
        }
        let cost = maps.cost_on_pages(PAGE, raws.iter());
        assert_eq!((cost.bounce_copies, cost.transfer_maps), (0, 0));
        assert_eq!(maps.count(), 4, "one mapping per buffer");

        // Negative control: a pool on 4 KiB pages hands out buffers that are not all on
        // 16 KiB boundaries; such a buffer bounces on the 16 KiB host, not on a 4 KiB one.
        let small = PagePool::with_page_size(4_096).unwrap();
        let mut held: Vec<PageBuf> = (0..64).map(|_| small.take(10_000)).collect();
        let off = held
            .iter_mut()
            .find(|b| !(b.as_slice().as_ptr() as usize).is_multiple_of(PAGE))
            .expect("64 buffers on 4 KiB pages, none off a 16 KiB boundary");
        let one = [raw(off)];
        assert_eq!(maps.cost_on_pages(PAGE, one.iter()).bounce_copies, 1);
        assert_eq!(maps.cost_on_pages(4_096, one.iter()).bounce_copies, 0);
    }
}
