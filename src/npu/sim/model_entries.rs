//! The simulator's infer-model entries: reading HEFs, streams, formats,
//! configure.

use std::ffi::{c_char, c_void};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use hailort_sys::*;

use super::core::Fail;
use super::model_spec::{StreamSpec, FORMAT_TYPE_AUTO, FORMAT_TYPE_FLOAT32};
use super::status::*;
use super::table::{
    guard, insert, lookup, on_model, out, remove, str_arg, write_list, Obj, SimConfigured,
};
use super::vdevice::{build_spec, parse_hef, SimInferModel, SimVDevice};

pub(super) fn create_model(
    dev: &Arc<SimVDevice>,
    bytes: &[u8],
    origin: &str,
) -> Result<*mut hes_infer_model, Fail> {
    let hef = parse_hef(bytes, origin)?;
    let model = SimInferModel::new(Arc::clone(dev), hef, origin)?;
    Ok(insert(Obj::Model(Arc::new(model))))
}

pub(super) unsafe extern "C" fn infer_model_create_from_file(
    v: *mut hes_vdevice,
    path: *const c_char,
    m: *mut *mut hes_infer_model,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        // SAFETY: `path` is NULL or NUL-terminated (contract).
        let path = unsafe { str_arg(path, "path") }?;
        let m = out(m)?;
        let bytes =
            std::fs::read(path).map_err(|e| (HAILO_OPEN_FILE_FAILURE, format!("{path}: {e}")))?;
        // SAFETY: `m` is non-NULL and writable.
        unsafe { *m = create_model(&dev, &bytes, path)? };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn infer_model_create_from_memory(
    v: *mut hes_vdevice,
    data: *const c_void,
    size: usize,
    m: *mut *mut hes_infer_model,
) -> hes_status {
    guard(|| {
        let dev = lookup!(v, VDevice, "vdevice");
        let m = out(m)?;
        if data.is_null() {
            return Err((HAILO_INVALID_ARGUMENT, "HEF buffer is NULL".into()));
        }
        // SAFETY: `data` points to `size` readable bytes (contract); copied at once.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        // SAFETY: `m` is non-NULL and writable.
        unsafe { *m = create_model(&dev, bytes, "<memory>")? };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn infer_model_release(m: *mut hes_infer_model) -> hes_status {
    guard(|| remove(m as usize, "infer model").map(drop))
}

pub(super) unsafe extern "C" fn infer_model_name(
    m: *mut hes_infer_model,
    name: *mut c_char,
    capacity: usize,
) -> hes_status {
    on_model(m, |model| {
        let name = out(name)?;
        let bytes = model.group.name.as_bytes();
        if bytes.len() + 1 > capacity {
            return Err((
                HAILO_INSUFFICIENT_BUFFER,
                format!("name needs {} bytes", bytes.len() + 1),
            ));
        }
        // SAFETY: `name` has `capacity` > len bytes (checked).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), name, bytes.len());
            *name.add(bytes.len()) = 0;
        }
        Ok(())
    })
}

pub(super) fn streams_of(
    model: &SimInferModel,
    direction: hes_direction,
) -> Result<Vec<StreamSpec>, Fail> {
    let settings = model.settings();
    match direction {
        0 => Ok(settings.inputs.clone()),
        1 => Ok(settings.outputs.clone()),
        d => Err((
            HAILO_INVALID_ARGUMENT,
            format!("direction {d} is neither 0 (input) nor 1 (output)"),
        )),
    }
}

pub(super) unsafe extern "C" fn infer_model_stream_count(
    m: *mut hes_infer_model,
    d: hes_direction,
    n: *mut usize,
) -> hes_status {
    on_model(m, |model| {
        let n = out(n)?;
        // SAFETY: `n` is non-NULL and writable.
        unsafe { *n = streams_of(&model, d)?.len() };
        Ok(())
    })
}

pub(super) fn stream_at(
    model: &SimInferModel,
    d: hes_direction,
    index: usize,
) -> Result<StreamSpec, Fail> {
    streams_of(model, d)?.into_iter().nth(index).ok_or_else(|| {
        (
            HAILO_NOT_FOUND,
            format!("stream index {index} out of range"),
        )
    })
}

pub(super) unsafe extern "C" fn infer_model_stream_info(
    m: *mut hes_infer_model,
    d: hes_direction,
    index: usize,
    info: *mut hes_stream_info,
) -> hes_status {
    on_model(m, |model| {
        let info = out(info)?;
        let s = stream_at(&model, d, index)?;
        let mut raw = hes_stream_info {
            direction: d,
            frame_size: s.frame_size() as u64,
            quant_count: s.quant.len() as u32,
            ..Default::default()
        };
        for (dst, src) in raw
            .name
            .iter_mut()
            .zip(s.name.bytes().take(HES_MAX_NAME as usize - 1))
        {
            *dst = src as c_char;
        }
        let (height, width, features, is_nms) = match s.shape {
            hef::StreamShape::Image {
                height,
                width,
                features,
            } => (height, width, features, false),
            hef::StreamShape::Nms {
                classes,
                bbox_params,
                max_bboxes_per_class,
            } => (classes, bbox_params, max_bboxes_per_class, true),
        };
        raw.shape = hes_shape {
            height,
            width,
            features,
        };
        raw.is_nms = is_nms;
        let quantized = s.format_type != FORMAT_TYPE_FLOAT32;
        raw.format = hes_format {
            type_: s.format_type,
            order: s.format_order,
            flags: u32::from(quantized),
        };
        // SAFETY: `info` is non-NULL and writable.
        unsafe { *info = raw };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn infer_model_stream_quant_infos(
    m: *mut hes_infer_model,
    d: hes_direction,
    index: usize,
    infos: *mut hes_quant_info,
    count: *mut usize,
) -> hes_status {
    on_model(m, |model| {
        let count = out(count)?;
        let s = stream_at(&model, d, index)?;
        let quant = s.quant.iter().map(|q| hes_quant_info {
            zp: q.zp,
            scale: q.scale,
            limvals_min: q.limvals_min,
            limvals_max: q.limvals_max,
        });
        // SAFETY: `count` is non-NULL (checked) and writable, `infos` NULL or
        // `*count` long (contract).
        unsafe { write_list(infos, count, quant, "quant infos") }
    })
}

pub(super) unsafe extern "C" fn infer_model_set_batch_size(
    m: *mut hes_infer_model,
    batch: u16,
) -> hes_status {
    on_model(m, |model| {
        model.settings().batch = batch;
        Ok(())
    })
}

pub(super) fn set_format(
    m: *mut hes_infer_model,
    d: hes_direction,
    name: *const c_char,
    f: impl FnOnce(&mut StreamSpec),
) -> Result<(), Fail> {
    let model = lookup!(m, Model, "infer model");
    // SAFETY: `name` is NULL or NUL-terminated (contract).
    let name = unsafe { str_arg(name, "stream name") }?;
    let mut settings = model.settings();
    let streams = match d {
        0 => &mut settings.inputs,
        1 => &mut settings.outputs,
        d => {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("direction {d} is neither 0 nor 1"),
            ))
        }
    };
    let stream = streams.iter_mut().find(|s| s.name == name).ok_or_else(|| {
        (
            HAILO_NOT_FOUND,
            format!(
                "no {} stream named '{name}'",
                if d == 0 { "input" } else { "output" }
            ),
        )
    })?;
    f(stream);
    Ok(())
}

pub(super) unsafe extern "C" fn infer_model_set_format_type(
    m: *mut hes_infer_model,
    d: hes_direction,
    name: *const c_char,
    t: u32,
) -> hes_status {
    guard(|| {
        if t > FORMAT_TYPE_FLOAT32 {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("format type {t} is not AUTO, UINT8, UINT16 or FLOAT32"),
            ));
        }
        set_format(m, d, name, |s| {
            s.format_type = if t == FORMAT_TYPE_AUTO {
                super::model_spec::device_format_type(s.device_type)
            } else {
                t
            }
        })
    })
}

pub(super) unsafe extern "C" fn infer_model_set_format_order(
    m: *mut hes_infer_model,
    d: hes_direction,
    name: *const c_char,
    o: u32,
) -> hes_status {
    guard(|| {
        if o != 0 && hef::FormatOrder::from_c_value(o).is_none() {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("format order {o} is not a hailo_format_order_t"),
            ));
        }
        set_format(m, d, name, |s| {
            if o != 0 {
                s.format_order = o
            }
        })
    })
}

pub(super) unsafe extern "C" fn infer_model_set_power_mode(
    m: *mut hes_infer_model,
    mode: u32,
) -> hes_status {
    guard(|| {
        let _ = lookup!(m, Model, "infer model");
        if mode > 1 {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("power mode {mode} is neither 0 nor 1"),
            ));
        }
        Ok(())
    })
}

pub(super) unsafe extern "C" fn infer_model_computational_ops(
    m: *mut hes_infer_model,
    ops: *mut u64,
) -> hes_status {
    on_model(m, |model| {
        let ops = out(ops)?;
        let n = model.group.ops_per_frame.ok_or_else(|| {
            (
                HAILO_NOT_AVAILABLE,
                format!("HEF of '{}' carries no computational ops", model.group.name),
            )
        })?;
        // SAFETY: `ops` is non-NULL and writable.
        unsafe { *ops = n };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn infer_model_configure(
    m: *mut hes_infer_model,
    c: *mut *mut hes_configured_model,
) -> hes_status {
    on_model(m, |model| {
        let c = out(c)?;
        let spec = Arc::new(build_spec(&model)?);
        let core = Arc::clone(&model.device.core);
        let model_id = core.configure(Arc::clone(&spec))?;
        let latency_flags = model.settings().latency_flags;
        core.set_latency_flags(model_id, latency_flags)?;
        let configured = SimConfigured {
            core,
            model_id,
            spec,
            shut_down: AtomicBool::new(false),
        };
        // SAFETY: `c` is non-NULL and writable.
        unsafe { *c = insert(Obj::Configured(Arc::new(configured))) };
        Ok(())
    })
}
