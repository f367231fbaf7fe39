//! A model before configure: its streams, batch size and formats.

use std::ptr::NonNull;
use std::sync::Arc;

use hailort_sys::{hes_infer_model, hes_quant_info};
use hef::Direction;

use super::api::Api;
use super::configured::ConfiguredModel;
use super::device::{DeviceInner, Handle};
use super::error::NpuError;
use super::result;

/// Element type of a user buffer (`hailo_format_type_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatType {
    /// The device's own type.
    Auto,
    Uint8,
    Uint16,
    /// Dequantised by the backend (outputs) or quantised by it (inputs).
    Float32,
}

impl FormatType {
    pub(crate) fn c_value(self) -> u32 {
        match self {
            FormatType::Auto => 0,
            FormatType::Uint8 => 1,
            FormatType::Uint16 => 2,
            FormatType::Float32 => 3,
        }
    }

    fn from_c_value(v: u32) -> FormatType {
        match v {
            1 => FormatType::Uint8,
            2 => FormatType::Uint16,
            3 => FormatType::Float32,
            _ => FormatType::Auto,
        }
    }
}

/// One input or output as the backend reports it.
#[derive(Debug, Clone)]
pub struct StreamDesc {
    pub name: String,
    pub direction: Direction,
    /// (height, width, features).
    pub shape: (u32, u32, u32),
    pub format_type: FormatType,
    /// `hailo_format_order_t` value.
    pub format_order: u32,
    /// Bytes of one frame in the user format.
    pub frame_size: usize,
    /// One quant info, or one per feature.
    pub quant: Vec<hes_quant_info>,
    pub is_nms: bool,
}

/// A HEF's network group on a device, before configure.
///
/// Holds its device open. Setters take `&mut self`; reads are shared.
pub struct Model {
    pub(crate) device: Arc<DeviceInner>,
    handle: Handle<hes_infer_model>,
    name: String,
    inputs: Vec<StreamDesc>,
    outputs: Vec<StreamDesc>,
    batch: u16,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs.len())
            .field("batch", &self.batch)
            .finish()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        if let Err(err) =
            // SAFETY: the handle is live and this is its last user.
            unsafe { result::infer_model::release(&self.device.api, self.handle.ptr()) }
        {
            log::warn!("releasing model '{}': {err}", self.name);
        }
    }
}

impl Model {
    pub(crate) fn new(
        device: Arc<DeviceInner>,
        ptr: NonNull<hes_infer_model>,
    ) -> Result<Model, NpuError> {
        let mut model = Model {
            device,
            handle: Handle::new(ptr),
            name: String::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            batch: 0,
        };
        // SAFETY: the handle was just created by this table.
        model.name = model.with(|api, m| unsafe { result::infer_model::name(api, m) })?;
        model.refresh()?;
        Ok(model)
    }

    /// Runs `f` on the table and the model handle, under the handle's lock.
    fn with<R>(&self, f: impl FnOnce(&Api, NonNull<hes_infer_model>) -> R) -> R {
        let api = self.device.api;
        self.handle.with(|m| f(&api, m))
    }

    /// Checks that `stream` exists, changes its format through `set` (given
    /// the direction's C value), then reads the streams back.
    fn set_stream_format(
        &mut self,
        direction: Direction,
        stream: &str,
        set: impl FnOnce(&Api, NonNull<hes_infer_model>, u32) -> Result<(), NpuError>,
    ) -> Result<(), NpuError> {
        self.check_stream(direction, stream)?;
        self.with(|api, m| set(api, m, direction.c_value()))?;
        self.refresh()
    }

    fn refresh(&mut self) -> Result<(), NpuError> {
        let api = self.device.api;
        let read = |direction: Direction| {
            let raw = self
                .handle
                // SAFETY: the handle is live while `self` is.
                .with(|m| unsafe { result::infer_model::streams(&api, m, direction.c_value()) })?;
            Ok::<_, NpuError>(
                raw.into_iter()
                    .map(|(info, quant)| StreamDesc {
                        name: result::from_c_chars(&info.name),
                        direction,
                        shape: (info.shape.height, info.shape.width, info.shape.features),
                        format_type: FormatType::from_c_value(info.format.type_),
                        format_order: info.format.order,
                        frame_size: info.frame_size as usize,
                        quant,
                        is_nms: info.is_nms,
                    })
                    .collect(),
            )
        };
        self.inputs = read(Direction::Input)?;
        self.outputs = read(Direction::Output)?;
        Ok(())
    }

    /// The network group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The inputs, in the HEF's order.
    pub fn inputs(&self) -> &[StreamDesc] {
        &self.inputs
    }

    /// The outputs, in the HEF's order.
    pub fn outputs(&self) -> &[StreamDesc] {
        &self.outputs
    }

    /// The batch size set so far (0: HailoRT's default of 1).
    pub fn batch_size(&self) -> u16 {
        self.batch
    }

    fn check_stream(&self, direction: Direction, name: &str) -> Result<(), NpuError> {
        let list = match direction {
            Direction::Input => &self.inputs,
            Direction::Output => &self.outputs,
        };
        if list.iter().any(|s| s.name == name) {
            Ok(())
        } else {
            Err(NpuError::NoSuchStream {
                model: self.name.clone(),
                direction: direction.name(),
                stream: name.to_string(),
            })
        }
    }

    /// Sets the batch size (frames per scheduler burst).
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "InferModel::set_batch_size")]
    pub fn set_batch_size(&mut self, batch: u16) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, m| unsafe { result::infer_model::set_batch_size(api, m, batch) })?;
        self.batch = batch;
        Ok(())
    }

    /// Sets the element type of one stream's user buffers.
    ///
    /// # Errors
    /// [`NpuError::NoSuchStream`]; the table's status.
    #[doc(alias = "InferStream::set_format_type")]
    pub fn set_format_type(
        &mut self,
        direction: Direction,
        stream: &str,
        t: FormatType,
    ) -> Result<(), NpuError> {
        self.set_stream_format(direction, stream, |api, m, d| {
            // SAFETY: the handle is live while `self` is.
            unsafe { result::infer_model::set_format_type(api, m, d, stream, t.c_value()) }
        })
    }

    /// Sets the order (`hailo_format_order_t` value) of one stream's buffers.
    ///
    /// # Errors
    /// [`NpuError::NoSuchStream`]; the table's status.
    #[doc(alias = "InferStream::set_format_order")]
    pub fn set_format_order(
        &mut self,
        direction: Direction,
        stream: &str,
        order: u32,
    ) -> Result<(), NpuError> {
        self.set_stream_format(direction, stream, |api, m, d| {
            // SAFETY: the handle is live while `self` is.
            unsafe { result::infer_model::set_format_order(api, m, d, stream, order) }
        })
    }

    /// Sets the power mode (false: PERFORMANCE, true: ULTRA_PERFORMANCE).
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "InferModel::set_power_mode")]
    pub fn set_ultra_performance(&mut self, ultra: bool) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, m| unsafe { result::infer_model::set_power_mode(api, m, u32::from(ultra)) })
    }

    /// Asks HailoRT to measure hardware latency (`HAILO_LATENCY_MEASURE`, as
    /// `hailortcli run2 --measure-latency` does). Takes effect at
    /// [`Model::configure`]; read it with [`ConfiguredModel::hw_latency`].
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "InferModel::set_hw_latency_measurement_flags")]
    pub fn set_hw_latency_measurement(&mut self, measure: bool) -> Result<(), NpuError> {
        let flags = u32::from(measure);
        // SAFETY: the handle is live while `self` is.
        self.with(|api, m| unsafe { result::infer_model::set_hw_latency_flags(api, m, flags) })
    }

    /// Operations per frame the HEF states (`Hef::get_computational_ops`).
    ///
    /// # Errors
    /// `NotAvailable` when the HEF carries none.
    #[doc(alias = "Hef::get_computational_ops")]
    pub fn computational_ops(&self) -> Result<u64, NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, m| unsafe { result::infer_model::computational_ops(api, m) })
    }

    /// Configures the model on its device.
    ///
    /// # Errors
    /// `HefNotCompatibleWithDevice`; `InvalidOperation` for unequal batch
    /// sizes under the scheduler or too many network groups.
    #[doc(alias = "InferModel::configure")]
    pub fn configure(&self) -> Result<ConfiguredModel, NpuError> {
        // SAFETY: the handle is live while `self` is.
        let ptr = self.with(|api, m| unsafe { result::infer_model::configure(api, m) })?;
        Ok(ConfiguredModel::new(self, ptr))
    }
}
