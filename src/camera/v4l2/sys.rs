//! The few `linux/videodev2.h` structures and ioctls the capture path needs.
//!
//! Written by hand rather than generated so the default build needs no
//! libclang: the `v4l` crate (through `v4l2-sys-mit`) and `v4l2r` both run
//! bindgen in their build scripts, and `linuxvideo`, which is pure ioctl,
//! does not expose a dequeued buffer's timestamp or sequence number. Layouts
//! are the LP64 ones, which x86_64 and aarch64 share: compile-time assertions
//! pin every size and field offset to the values `linux/videodev2.h` gives on
//! both (checked with `offsetof` under gcc and aarch64-linux-gnu-gcc), and a
//! 32-bit target, whose `timeval` and union alignment differ, does not compile.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::RawFd;

#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "camera::v4l2: the V4L2 structures are written with the LP64 layout (x86_64, aarch64); \
     a 32-bit target needs its own `v4l2_buffer` (32-bit timeval) and `v4l2_format` layouts"
);

pub const VIDEO_CAPTURE: u32 = 1; // V4L2_BUF_TYPE_VIDEO_CAPTURE
pub const MEMORY_MMAP: u32 = 1;
pub const FIELD_ANY: u32 = 0;

pub const CAP_VIDEO_CAPTURE: u32 = 0x0000_0001;
pub const CAP_STREAMING: u32 = 0x0400_0000;
pub const CAP_DEVICE_CAPS: u32 = 0x8000_0000;
pub const CAP_TIMEPERFRAME: u32 = 0x1000;

pub const BUF_FLAG_ERROR: u32 = 0x0040;
pub const BUF_FLAG_TIMESTAMP_MASK: u32 = 0xe000;
pub const BUF_FLAG_TIMESTAMP_UNKNOWN: u32 = 0x0000;
pub const BUF_FLAG_TIMESTAMP_MONOTONIC: u32 = 0x2000;
pub const BUF_FLAG_TIMESTAMP_COPY: u32 = 0x4000;
pub const BUF_FLAG_TSTAMP_SRC_MASK: u32 = 0x0007_0000;
pub const BUF_FLAG_TSTAMP_SRC_EOF: u32 = 0x0000_0000;
pub const BUF_FLAG_TSTAMP_SRC_SOE: u32 = 0x0001_0000;

pub const FRMSIZE_TYPE_DISCRETE: u32 = 1;
pub const FRMSIZE_TYPE_CONTINUOUS: u32 = 2;
pub const FRMSIZE_TYPE_STEPWISE: u32 = 3;

const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((b'V' as u64) << 8) | nr
}
const fn iowr<T>(nr: u64) -> u64 {
    ioc(IOC_READ | IOC_WRITE, nr, std::mem::size_of::<T>())
}

pub const VIDIOC_QUERYCAP: u64 = ioc(IOC_READ, 0, std::mem::size_of::<Capability>());
pub const VIDIOC_ENUM_FMT: u64 = iowr::<FmtDesc>(2);
pub const VIDIOC_G_FMT: u64 = iowr::<Format>(4);
pub const VIDIOC_S_FMT: u64 = iowr::<Format>(5);
pub const VIDIOC_REQBUFS: u64 = iowr::<RequestBuffers>(8);
pub const VIDIOC_QUERYBUF: u64 = iowr::<Buffer>(9);
pub const VIDIOC_QBUF: u64 = iowr::<Buffer>(15);
pub const VIDIOC_DQBUF: u64 = iowr::<Buffer>(17);
pub const VIDIOC_STREAMON: u64 = ioc(IOC_WRITE, 18, std::mem::size_of::<i32>());
pub const VIDIOC_STREAMOFF: u64 = ioc(IOC_WRITE, 19, std::mem::size_of::<i32>());
pub const VIDIOC_G_PARM: u64 = iowr::<StreamParm>(21);
pub const VIDIOC_S_PARM: u64 = iowr::<StreamParm>(22);
pub const VIDIOC_ENUM_FRAMESIZES: u64 = iowr::<FrmSizeEnum>(74);
pub const VIDIOC_ENUM_FRAMEINTERVALS: u64 = iowr::<FrmIvalEnum>(75);
pub const VIDIOC_G_CTRL: u64 = iowr::<Control>(27);
pub const VIDIOC_S_CTRL: u64 = iowr::<Control>(28);
pub const VIDIOC_QUERYCTRL: u64 = iowr::<QueryCtrl>(36);
pub const VIDIOC_QUERYMENU: u64 = iowr::<QueryMenu>(37);

/// Asks `VIDIOC_QUERYCTRL` for the next control after the given id.
pub const CTRL_FLAG_NEXT_CTRL: u32 = 0x8000_0000;
pub const CTRL_FLAG_DISABLED: u32 = 0x0001;
pub const CTRL_FLAG_GRABBED: u32 = 0x0002;
pub const CTRL_FLAG_READ_ONLY: u32 = 0x0004;
pub const CTRL_FLAG_INACTIVE: u32 = 0x0010;
pub const CTRL_TYPE_INTEGER: u32 = 1;
pub const CTRL_TYPE_BOOLEAN: u32 = 2;
pub const CTRL_TYPE_MENU: u32 = 3;
pub const CTRL_TYPE_INTEGER_MENU: u32 = 9;

/// Marker for plain-old-data ioctl arguments: every bit pattern, including
/// all zeroes, is a valid value.
///
/// # Safety
/// Implement only for `#[repr(C)]` structs of integers and arrays of them.
pub unsafe trait Pod: Sized {
    fn zeroed() -> Self {
        // SAFETY: the trait's contract says all-zero bytes are a valid value.
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Capability {
    pub driver: [u8; 16],
    pub card: [u8; 32],
    pub bus_info: [u8; 32],
    pub version: u32,
    pub capabilities: u32,
    pub device_caps: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FmtDesc {
    pub index: u32,
    pub type_: u32,
    pub flags: u32,
    pub description: [u8; 32],
    pub pixelformat: u32,
    pub mbus_code: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fract {
    pub numerator: u32,
    pub denominator: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FrmSizeEnum {
    pub index: u32,
    pub pixel_format: u32,
    pub type_: u32,
    /// discrete: width, height; stepwise: min_w, max_w, step_w, min_h, max_h, step_h.
    pub size: [u32; 6],
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FrmIvalEnum {
    pub index: u32,
    pub pixel_format: u32,
    pub width: u32,
    pub height: u32,
    pub type_: u32,
    /// discrete: the interval; stepwise: min, max, step.
    pub interval: [Fract; 3],
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixFormat {
    pub width: u32,
    pub height: u32,
    pub pixelformat: u32,
    pub field: u32,
    pub bytesperline: u32,
    pub sizeimage: u32,
    pub colorspace: u32,
    pub priv_: u32,
    pub flags: u32,
    pub ycbcr_enc: u32,
    pub quantization: u32,
    pub xfer_func: u32,
}

/// `struct v4l2_format` with the `pix` member of its union (the union holds
/// pointers elsewhere, hence 8-byte alignment).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Format {
    pub _align: [u64; 0],
    pub type_: u32,
    pub _pad: u32,
    pub pix: PixFormat,
    pub _rest: [u8; 200 - 48],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CaptureParm {
    pub capability: u32,
    pub capturemode: u32,
    pub timeperframe: Fract,
    pub extendedmode: u32,
    pub readbuffers: u32,
    pub reserved: [u32; 4],
}

/// `struct v4l2_streamparm` with the `capture` member of its union.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StreamParm {
    pub type_: u32,
    pub capture: CaptureParm,
    pub _rest: [u8; 200 - 40],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RequestBuffers {
    pub count: u32,
    pub type_: u32,
    pub memory: u32,
    pub capabilities: u32,
    pub flags: u8,
    pub reserved: [u8; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

/// `struct v4l2_buffer` (64-bit layout), `m` read as the mmap offset.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Buffer {
    pub _align: [u64; 0],
    pub index: u32,
    pub type_: u32,
    pub bytesused: u32,
    pub flags: u32,
    pub field: u32,
    pub _pad: u32,
    pub timestamp: Timeval,
    pub timecode: [u32; 4],
    pub sequence: u32,
    pub memory: u32,
    pub m_offset: u32,
    pub _m_high: u32,
    pub length: u32,
    pub reserved2: u32,
    pub request_fd: u32,
    pub _tail: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Control {
    pub id: u32,
    pub value: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct QueryCtrl {
    pub id: u32,
    pub type_: u32,
    pub name: [u8; 32],
    pub minimum: i32,
    pub maximum: i32,
    pub step: i32,
    pub default_value: i32,
    pub flags: u32,
    pub reserved: [u32; 2],
}

/// `struct v4l2_querymenu`, which the header declares packed: the union of a
/// name and an `__s64` value starts at offset 8, so the value is read from
/// the name's first eight bytes (little-endian on both targets).
#[repr(C, packed)]
#[derive(Debug, Clone, Copy)]
pub struct QueryMenu {
    pub id: u32,
    pub index: u32,
    pub name: [u8; 32],
    pub reserved: u32,
}

// Sizes and offsets as `linux/videodev2.h` gives them on x86_64 and aarch64 (LP64).
const _: () = {
    assert!(size_of::<Control>() == 8);
    assert!(size_of::<QueryCtrl>() == 68);
    assert!(offset_of!(QueryCtrl, name) == 8);
    assert!(offset_of!(QueryCtrl, minimum) == 40);
    assert!(offset_of!(QueryCtrl, flags) == 56);
    assert!(size_of::<QueryMenu>() == 44);
    assert!(offset_of!(QueryMenu, name) == 8);
    assert!(size_of::<Capability>() == 104);
    assert!(offset_of!(Capability, version) == 80);
    assert!(offset_of!(Capability, capabilities) == 84);
    assert!(offset_of!(Capability, device_caps) == 88);
    assert!(size_of::<FmtDesc>() == 64);
    assert!(offset_of!(FmtDesc, description) == 12);
    assert!(offset_of!(FmtDesc, pixelformat) == 44);
    assert!(offset_of!(FmtDesc, mbus_code) == 48);
    assert!(size_of::<FrmSizeEnum>() == 44);
    assert!(offset_of!(FrmSizeEnum, type_) == 8);
    assert!(offset_of!(FrmSizeEnum, size) == 12);
    assert!(offset_of!(FrmSizeEnum, reserved) == 36);
    assert!(size_of::<FrmIvalEnum>() == 52);
    assert!(offset_of!(FrmIvalEnum, type_) == 16);
    assert!(offset_of!(FrmIvalEnum, interval) == 20);
    assert!(offset_of!(FrmIvalEnum, reserved) == 44);
    assert!(size_of::<PixFormat>() == 48);
    assert!(offset_of!(PixFormat, bytesperline) == 16);
    assert!(offset_of!(PixFormat, xfer_func) == 44);
    assert!(size_of::<Format>() == 208);
    assert!(offset_of!(Format, pix) == 8);
    assert!(size_of::<CaptureParm>() == 40);
    assert!(offset_of!(CaptureParm, timeperframe) == 8);
    assert!(offset_of!(CaptureParm, readbuffers) == 20);
    assert!(size_of::<StreamParm>() == 204);
    assert!(offset_of!(StreamParm, capture) == 4);
    assert!(size_of::<RequestBuffers>() == 20);
    assert!(offset_of!(RequestBuffers, capabilities) == 12);
    assert!(offset_of!(RequestBuffers, flags) == 16);
    assert!(size_of::<Buffer>() == 88);
    assert!(offset_of!(Buffer, field) == 16);
    assert!(offset_of!(Buffer, timestamp) == 24);
    assert!(offset_of!(Buffer, timecode) == 40);
    assert!(offset_of!(Buffer, sequence) == 56);
    assert!(offset_of!(Buffer, memory) == 60);
    assert!(offset_of!(Buffer, m_offset) == 64);
    assert!(offset_of!(Buffer, length) == 72);
    assert!(offset_of!(Buffer, reserved2) == 76);
    assert!(offset_of!(Buffer, request_fd) == 80);
};

// SAFETY: all of these are #[repr(C)] structs of integers and integer arrays.
unsafe impl Pod for Capability {}
// SAFETY: as above.
unsafe impl Pod for FmtDesc {}
// SAFETY: as above.
unsafe impl Pod for FrmSizeEnum {}
// SAFETY: as above.
unsafe impl Pod for FrmIvalEnum {}
// SAFETY: as above.
unsafe impl Pod for Format {}
// SAFETY: as above.
unsafe impl Pod for StreamParm {}
// SAFETY: as above.
unsafe impl Pod for RequestBuffers {}
// SAFETY: as above.
unsafe impl Pod for Buffer {}
// SAFETY: as above.
unsafe impl Pod for Control {}
// SAFETY: as above.
unsafe impl Pod for QueryCtrl {}
// SAFETY: as above (packed, so never referenced field by field unaligned).
unsafe impl Pod for QueryMenu {}

/// Calls `ioctl(fd, request, arg)`, retrying on EINTR.
///
/// # Safety
/// `T` must be the argument type the kernel defines for `request` (the
/// request code encodes its size, which the constants above derive from `T`).
pub unsafe fn ioctl<T>(fd: RawFd, request: u64, arg: &mut T) -> io::Result<()> {
    loop {
        // SAFETY: the caller guarantees `arg` is the structure `request`
        // reads and writes; it is a valid exclusive reference.
        let r = unsafe { libc::ioctl(fd, request as _, arg as *mut T) };
        if r != -1 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// A NUL-padded C string field as text.
pub fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A fourcc as the `u32` V4L2 uses.
pub fn fourcc(code: [u8; 4]) -> u32 {
    u32::from_le_bytes(code)
}

/// A `u32` fourcc as text, e.g. `YUYV`.
pub fn fourcc_str(v: u32) -> String {
    v.to_le_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Request codes as `linux/videodev2.h` gives them on x86_64 and aarch64 (the sizes and
    /// offsets are asserted at compile time above).
    #[test]
    fn request_codes_match_the_kernel_header() {
        let codes = [
            (VIDIOC_QUERYCAP, 0x8068_5600u64),
            (VIDIOC_ENUM_FMT, 0xc040_5602),
            (VIDIOC_G_FMT, 0xc0d0_5604),
            (VIDIOC_S_FMT, 0xc0d0_5605),
            (VIDIOC_REQBUFS, 0xc014_5608),
            (VIDIOC_QUERYBUF, 0xc058_5609),
            (VIDIOC_QBUF, 0xc058_560f),
            (VIDIOC_DQBUF, 0xc058_5611),
            (VIDIOC_STREAMON, 0x4004_5612),
            (VIDIOC_STREAMOFF, 0x4004_5613),
            (VIDIOC_G_PARM, 0xc0cc_5615),
            (VIDIOC_S_PARM, 0xc0cc_5616),
            (VIDIOC_ENUM_FRAMESIZES, 0xc02c_564a),
            (VIDIOC_ENUM_FRAMEINTERVALS, 0xc034_564b),
            (VIDIOC_G_CTRL, 0xc008_561b),
            (VIDIOC_S_CTRL, 0xc008_561c),
            (VIDIOC_QUERYCTRL, 0xc044_5624),
            (VIDIOC_QUERYMENU, 0xc02c_5625),
        ];
        for (got, want) in codes {
            assert_eq!(got, want, "{got:#x} != {want:#x}");
        }
    }

    #[test]
    fn fourcc_text() {
        assert_eq!(fourcc_str(fourcc(*b"YUYV")), "YUYV");
        assert_eq!(fourcc(*b"MJPG"), 0x4750_4a4d);
        assert_eq!(c_str(b"uvcvideo\0\0\0"), "uvcvideo");
    }
}
