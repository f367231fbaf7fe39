//! Opening a V4L2 device, listing what it offers and setting format and rate.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::camera::frame::PixelFormat;

use super::sys::{self, Pod};
use super::V4l2Error;

/// An open V4L2 device node.
#[derive(Debug)]
pub struct Device {
    file: File,
    path: PathBuf,
}

/// What `VIDIOC_QUERYCAP` says.
#[derive(Debug, Clone, Serialize)]
pub struct Caps {
    pub driver: String,
    pub card: String,
    pub bus: String,
    pub capture: bool,
    pub streaming: bool,
}

/// Frame sizes a format offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizes {
    Discrete(Vec<(u32, u32)>),
    /// min, max, step for width then height.
    Stepwise {
        width: [u32; 3],
        height: [u32; 3],
    },
}

/// One pixel format of a device, with its sizes and the rates of each discrete size.
#[derive(Debug, Clone, Serialize)]
pub struct FormatInfo {
    pub fourcc: String,
    pub description: String,
    /// Whether the capture path handles this format.
    pub supported: bool,
    pub sizes: Sizes,
    /// Frame rates per discrete size (fps).
    pub rates: Vec<((u32, u32), Vec<f64>)>,
}

/// A negotiated capture format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub format: PixelFormat,
    pub width: u32,
    pub height: u32,
    pub bytes_per_line: u32,
    pub size_image: u32,
}

impl Device {
    /// Opens `path` read-write, non-blocking (reads wait in `poll` with a timeout).
    ///
    /// # Errors
    /// [`V4l2Error::Io`] naming the device.
    pub fn open(path: &Path) -> Result<Self, V4l2Error> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| V4l2Error::io(path, "open", e))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The device node.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Runs one ioctl on a zero-initialised argument prepared by `init`.
    pub(super) fn ioctl<T: Pod>(
        &self,
        request: u64,
        what: &'static str,
        init: impl FnOnce(&mut T),
    ) -> Result<T, V4l2Error> {
        let mut arg = T::zeroed();
        init(&mut arg);
        // SAFETY: every request constant in `sys` is derived from the size of
        // the `Pod` type it is used with here.
        unsafe { sys::ioctl(self.fd(), request, &mut arg) }
            .map_err(|e| V4l2Error::io(&self.path, what, e))?;
        Ok(arg)
    }

    /// One entry of an enumeration ioctl (`init` sets its index and filter);
    /// `None` past the list's end.
    pub(super) fn entry<T: Pod>(
        &self,
        request: u64,
        what: &'static str,
        init: impl FnOnce(&mut T),
    ) -> Result<Option<T>, V4l2Error> {
        match self.ioctl(request, what, init) {
            Ok(arg) => Ok(Some(arg)),
            Err(e) if e.is_end_of_list() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Capabilities of the device node.
    ///
    /// # Errors
    /// [`V4l2Error::Io`] when the node is not a V4L2 device.
    pub fn caps(&self) -> Result<Caps, V4l2Error> {
        let c: sys::Capability = self.ioctl(sys::VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", |_| {})?;
        let caps = if c.capabilities & sys::CAP_DEVICE_CAPS != 0 {
            c.device_caps
        } else {
            c.capabilities
        };
        Ok(Caps {
            driver: sys::c_str(&c.driver),
            card: sys::c_str(&c.card),
            bus: sys::c_str(&c.bus_info),
            capture: caps & sys::CAP_VIDEO_CAPTURE != 0,
            streaming: caps & sys::CAP_STREAMING != 0,
        })
    }

    /// Every capture format with its sizes and rates.
    ///
    /// # Errors
    /// [`V4l2Error::Io`] when an enumeration ioctl fails for another reason than its end.
    pub fn formats(&self) -> Result<Vec<FormatInfo>, V4l2Error> {
        let mut out = Vec::new();
        for index in 0.. {
            let Some(d) =
                self.entry::<sys::FmtDesc>(sys::VIDIOC_ENUM_FMT, "VIDIOC_ENUM_FMT", |d| {
                    d.index = index;
                    d.type_ = sys::VIDEO_CAPTURE;
                })?
            else {
                break;
            };
            let sizes = self.frame_sizes(d.pixelformat)?;
            let mut rates = Vec::new();
            if let Sizes::Discrete(list) = &sizes {
                for &(w, h) in list {
                    rates.push(((w, h), self.frame_rates(d.pixelformat, w, h)?));
                }
            }
            out.push(FormatInfo {
                fourcc: sys::fourcc_str(d.pixelformat),
                description: sys::c_str(&d.description),
                supported: PixelFormat::from_fourcc(d.pixelformat.to_le_bytes()).is_some(),
                sizes,
                rates,
            });
        }
        Ok(out)
    }

    fn frame_sizes(&self, fourcc: u32) -> Result<Sizes, V4l2Error> {
        let mut discrete = Vec::new();
        for index in 0.. {
            let Some(s) = self.entry::<sys::FrmSizeEnum>(
                sys::VIDIOC_ENUM_FRAMESIZES,
                "VIDIOC_ENUM_FRAMESIZES",
                |s| {
                    s.index = index;
                    s.pixel_format = fourcc;
                },
            )?
            else {
                break;
            };
            match s.type_ {
                sys::FRMSIZE_TYPE_DISCRETE => discrete.push((s.size[0], s.size[1])),
                _ => return Ok(parse_stepwise(&s)),
            }
        }
        Ok(Sizes::Discrete(discrete))
    }

    fn frame_rates(&self, fourcc: u32, width: u32, height: u32) -> Result<Vec<f64>, V4l2Error> {
        let mut fps = Vec::new();
        for index in 0.. {
            let Some(iv) = self.entry::<sys::FrmIvalEnum>(
                sys::VIDIOC_ENUM_FRAMEINTERVALS,
                "VIDIOC_ENUM_FRAMEINTERVALS",
                |i| {
                    i.index = index;
                    i.pixel_format = fourcc;
                    i.width = width;
                    i.height = height;
                },
            )?
            else {
                break;
            };
            // For stepwise intervals list the fastest and slowest.
            let list: &[sys::Fract] = if iv.type_ == sys::FRMSIZE_TYPE_DISCRETE {
                &iv.interval[..1]
            } else {
                &iv.interval[..2]
            };
            fps.extend(list.iter().filter_map(|f| fract_to_fps(*f)));
            if iv.type_ != sys::FRMSIZE_TYPE_DISCRETE {
                break;
            }
        }
        Ok(fps)
    }

    /// Sets the capture format (`VIDIOC_S_FMT`) and checks what the driver chose.
    ///
    /// # Errors
    /// [`V4l2Error::Negotiation`] when the driver picked another format or size.
    pub fn set_format(
        &self,
        format: PixelFormat,
        width: u32,
        height: u32,
    ) -> Result<Negotiated, V4l2Error> {
        let f: sys::Format =
            self.ioctl(sys::VIDIOC_S_FMT, "VIDIOC_S_FMT", |f: &mut sys::Format| {
                f.type_ = sys::VIDEO_CAPTURE;
                f.pix.width = width;
                f.pix.height = height;
                f.pix.pixelformat = sys::fourcc(format.fourcc());
                f.pix.field = sys::FIELD_ANY;
            })?;
        negotiated(&self.path, format, width, height, &f.pix)
    }

    /// Sets the frame rate (`VIDIOC_S_PARM`) and returns the rate the driver chose.
    ///
    /// # Errors
    /// [`V4l2Error::Negotiation`] when the device cannot set its rate.
    pub fn set_fps(&self, fps: f64) -> Result<f64, V4l2Error> {
        let p: sys::StreamParm = self.ioctl(
            sys::VIDIOC_G_PARM,
            "VIDIOC_G_PARM",
            |p: &mut sys::StreamParm| p.type_ = sys::VIDEO_CAPTURE,
        )?;
        if p.capture.capability & sys::CAP_TIMEPERFRAME == 0 {
            return Err(V4l2Error::Negotiation {
                device: self.path.clone(),
                what: format!("cannot set the frame rate (asked for {fps} fps)"),
            });
        }
        let (num, den) = fps_to_fract(fps);
        let p: sys::StreamParm = self.ioctl(
            sys::VIDIOC_S_PARM,
            "VIDIOC_S_PARM",
            |p: &mut sys::StreamParm| {
                p.type_ = sys::VIDEO_CAPTURE;
                p.capture.timeperframe = sys::Fract {
                    numerator: num,
                    denominator: den,
                };
            },
        )?;
        fract_to_fps(p.capture.timeperframe).ok_or_else(|| V4l2Error::Negotiation {
            device: self.path.clone(),
            what: "driver returned a zero frame interval".into(),
        })
    }
}

fn parse_stepwise(s: &sys::FrmSizeEnum) -> Sizes {
    // Continuous is stepwise with step 1 (the driver fills it so).
    let step = |v: u32| {
        if s.type_ == sys::FRMSIZE_TYPE_CONTINUOUS {
            1
        } else {
            v.max(1)
        }
    };
    Sizes::Stepwise {
        width: [s.size[0], s.size[1], step(s.size[2])],
        height: [s.size[3], s.size[4], step(s.size[5])],
    }
}

/// Frames per second of an interval (`timeperframe` seconds per frame).
pub fn fract_to_fps(f: sys::Fract) -> Option<f64> {
    (f.numerator != 0).then(|| f64::from(f.denominator) / f64::from(f.numerator))
}

/// The interval for a rate, exact for integer and NTSC (x/1.001) rates.
pub fn fps_to_fract(fps: f64) -> (u32, u32) {
    if (fps - fps.round()).abs() < 1e-6 {
        (1, fps.round() as u32)
    } else {
        (1001, (fps * 1001.0).round() as u32)
    }
}

/// Checks the driver's answer to `VIDIOC_S_FMT` against the request.
///
/// # Errors
/// [`V4l2Error::Negotiation`] naming what was asked and what the driver offers.
pub fn negotiated(
    device: &Path,
    format: PixelFormat,
    width: u32,
    height: u32,
    pix: &sys::PixFormat,
) -> Result<Negotiated, V4l2Error> {
    let fail = |what: String| V4l2Error::Negotiation {
        device: device.to_path_buf(),
        what,
    };
    let got = PixelFormat::from_fourcc(pix.pixelformat.to_le_bytes());
    if got != Some(format) {
        return Err(fail(format!(
            "asked for {format}, driver chose {}",
            sys::fourcc_str(pix.pixelformat)
        )));
    }
    if (pix.width, pix.height) != (width, height) {
        return Err(fail(format!(
            "asked for {width}x{height} {format}, driver chose {}x{}",
            pix.width, pix.height
        )));
    }
    let packed_line = match format {
        PixelFormat::Nv12 => Some(width),
        f => f.frame_len(width, 1).map(|l| l as u32),
    };
    if let Some(line) = packed_line {
        if pix.bytesperline != line {
            return Err(fail(format!(
                "{width}x{height} {format} has {} bytes per line, expected {line}; only packed rows are supported",
                pix.bytesperline
            )));
        }
    }
    Ok(Negotiated {
        format,
        width,
        height,
        bytes_per_line: pix.bytesperline,
        size_image: pix.sizeimage,
    })
}

/// The `/dev/video*` nodes, sorted by number.
pub fn device_nodes() -> Vec<PathBuf> {
    let mut nodes: Vec<(u32, PathBuf)> = std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix("video")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, p)| p).collect()
}

/// Whether an I/O error means the device went away.
pub fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENODEV) | Some(libc::ENXIO) | Some(libc::EIO) | Some(libc::ENOENT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pix(fourcc: &[u8; 4], w: u32, h: u32, bpl: u32) -> sys::PixFormat {
        let mut p = sys::Format::zeroed().pix;
        p.pixelformat = sys::fourcc(*fourcc);
        p.width = w;
        p.height = h;
        p.bytesperline = bpl;
        p.sizeimage = bpl * h;
        p
    }

    #[test]
    fn negotiation_accepts_what_was_asked() {
        let dev = Path::new("/dev/video7");
        for (format, fourcc, w, h, line) in [
            (PixelFormat::Yuyv, b"YUYV", 1280, 720, 2560),
            (PixelFormat::Nv12, b"NV12", 640, 480, 640),
            (PixelFormat::Mjpeg, b"MJPG", 1920, 1080, 0),
        ] {
            let n = negotiated(dev, format, w, h, &pix(fourcc, w, h, line)).unwrap();
            assert_eq!((n.width, n.bytes_per_line), (w, line), "{format}");
        }
    }

    #[test]
    fn negotiation_names_what_the_driver_chose_instead() {
        let dev = Path::new("/dev/video7");
        let e = negotiated(
            dev,
            PixelFormat::Yuyv,
            1280,
            720,
            &pix(b"YUYV", 640, 480, 1280),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/video7: asked for 1280x720 yuyv, driver chose 640x480"
        );
        let e = negotiated(dev, PixelFormat::Nv12, 64, 48, &pix(b"YU12", 64, 48, 64)).unwrap_err();
        assert!(e.to_string().contains("driver chose YU12"), "{e}");
        let e = negotiated(dev, PixelFormat::Yuyv, 64, 48, &pix(b"YUYV", 64, 48, 256)).unwrap_err();
        assert!(e.to_string().contains("bytes per line"), "{e}");
    }

    #[test]
    fn rates_and_intervals() {
        assert_eq!(fps_to_fract(30.0), (1, 30));
        assert_eq!(fps_to_fract(29.97), (1001, 30000));
        let f = |n, d| sys::Fract {
            numerator: n,
            denominator: d,
        };
        assert_eq!(fract_to_fps(f(1, 120)), Some(120.0));
        assert_eq!(fract_to_fps(f(0, 30)), None);
    }

    #[test]
    fn stepwise_sizes_parse() {
        let mut s = sys::FrmSizeEnum::zeroed();
        s.type_ = sys::FRMSIZE_TYPE_CONTINUOUS;
        s.size = [16, 4096, 0, 16, 2160, 0];
        assert_eq!(
            parse_stepwise(&s),
            Sizes::Stepwise {
                width: [16, 4096, 1],
                height: [16, 2160, 1]
            }
        );
    }
}
