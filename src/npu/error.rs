//! Errors of the NPU layer: one variant per HailoRT status, plus the
//! wrapper's own.
//!
//! Every status HailoRT 5.2 defines (1 to 97) has a variant that keeps its
//! number, its `HAILO_*` name, HailoRT's message, the table entry that failed
//! and the backend's detail text (the C++ exception or the simulator's check).
//! Codes a newer HailoRT may add land in [`NpuError::Unknown`] with their value
//! kept, so they can be given a variant later without loss.

macro_rules! hailo_statuses {
    ($($code:literal => $variant:ident, $name:literal, $msg:literal;)*) => {
        /// A HailoRT `hailo_status` other than `HAILO_SUCCESS`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        #[repr(u32)]
        pub enum Status {
            $(#[doc = $msg] $variant = $code,)*
        }

        impl Status {
            /// Every status, in numeric order.
            pub const ALL: &'static [Status] = &[$(Status::$variant),*];

            /// The status for a `hailo_status` value (`None` for success or an
            /// unknown value).
            pub fn from_code(code: u32) -> Option<Status> {
                match code {
                    $($code => Some(Status::$variant),)*
                    _ => None,
                }
            }

            /// The `hailo_status` value.
            pub fn code(self) -> u32 {
                self as u32
            }

            /// The C name, e.g. `HAILO_INVALID_ARGUMENT`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Status::$variant => $name,)*
                }
            }

            /// HailoRT's message for this status.
            pub fn message(self) -> &'static str {
                match self {
                    $(Status::$variant => $msg,)*
                }
            }
        }

        /// An NPU failure: a HailoRT status with the call that failed, or a
        /// wrapper-side error.
        #[derive(Debug, Clone, PartialEq, thiserror::Error)]
        #[non_exhaustive]
        pub enum NpuError {
            $(
                #[doc = $msg]
                #[error("{call}: {name} ({code}): {msg}{}", Detail(detail), name = $name, code = $code, msg = $msg)]
                $variant {
                    /// The table entry that returned the status.
                    call: &'static str,
                    /// The backend's explanation (may be empty).
                    detail: String,
                },
            )*
            /// A status this version does not know; the value is kept.
            #[error("{call}: unknown HailoRT status {code}{}", Detail(detail))]
            Unknown {
                code: u32,
                call: &'static str,
                detail: String,
            },
            /// A buffer given for a stream has the wrong size.
            #[error("buffer for stream '{stream}' has {actual} bytes, expected the frame size {expected}")]
            BufferSize {
                stream: String,
                expected: usize,
                actual: usize,
            },
            /// No stream of this name in the model.
            #[error("model '{model}' has no {direction} stream named '{stream}'")]
            NoSuchStream {
                model: String,
                direction: &'static str,
                stream: String,
            },
            /// A run_async failed earlier, or a job completed with a status
            /// that ends the model (the card shut it down, its pipeline was
            /// aborted, the connection closed): it must be configured again.
            #[error("configured model '{model}' needs reconfiguring: {cause}")]
            NeedsReconfigure { model: String, cause: String },
            /// The table lacks an entry.
            #[error("the {backend} table has no entry '{entry}'")]
            MissingEntry {
                backend: &'static str,
                entry: &'static str,
            },
            /// The requested backend is not in this build or not present.
            #[error("backend {backend} unavailable: {reason}")]
            BackendUnavailable {
                backend: &'static str,
                reason: String,
            },
            /// The job's completion was already taken.
            #[error("job {job} already delivered its completion")]
            AlreadyCompleted { job: u64 },
            /// The completion channel closed without a completion.
            #[error("completion of job {job} was lost: the backend dropped its callback")]
            CompletionLost { job: u64 },
            /// A name or path that cannot cross the C ABI.
            #[error("'{value}' cannot be passed to the C table: {reason}")]
            InvalidName { value: String, reason: &'static str },
            /// The HEF could not be read.
            #[error("HEF {path}: {reason}")]
            Hef { path: String, reason: String },
        }

        impl NpuError {
            /// The error for a non-success status returned by `call`.
            pub fn from_status(code: u32, call: &'static str, detail: String) -> NpuError {
                match code {
                    $($code => NpuError::$variant { call, detail },)*
                    _ => NpuError::Unknown { code, call, detail },
                }
            }

            /// The HailoRT status, when this error is one.
            pub fn status(&self) -> Option<Status> {
                match self {
                    $(NpuError::$variant { .. } => Some(Status::$variant),)*
                    _ => None,
                }
            }

            /// The numeric `hailo_status`, when this error carries one.
            pub fn code(&self) -> Option<u32> {
                match self {
                    NpuError::Unknown { code, .. } => Some(*code),
                    other => other.status().map(Status::code),
                }
            }

            /// The table entry that failed, when this error comes from one.
            pub fn call(&self) -> Option<&'static str> {
                match self {
                    $(NpuError::$variant { call, .. } => Some(call),)*
                    NpuError::Unknown { call, .. } => Some(call),
                    _ => None,
                }
            }

            /// The backend's detail text (empty when there is none).
            pub fn detail(&self) -> &str {
                match self {
                    $(NpuError::$variant { detail, .. } => detail,)*
                    NpuError::Unknown { detail, .. } => detail,
                    _ => "",
                }
            }
        }
    };
}

/// Formats a non-empty detail as ` (detail)`.
struct Detail<'a>(&'a str);

impl std::fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " ({})", self.0)
        }
    }
}

/// `HAILO_SUCCESS`.
pub const SUCCESS: u32 = 0;

hailo_statuses! {
    1 => Uninitialized, "HAILO_UNINITIALIZED", "No error code was initialized";
    2 => InvalidArgument, "HAILO_INVALID_ARGUMENT", "Invalid argument passed to function";
    3 => OutOfHostMemory, "HAILO_OUT_OF_HOST_MEMORY", "Cannot allocate more memory at host";
    4 => Timeout, "HAILO_TIMEOUT", "Received a timeout";
    5 => InsufficientBuffer, "HAILO_INSUFFICIENT_BUFFER", "Buffer is insufficient";
    6 => InvalidOperation, "HAILO_INVALID_OPERATION", "Invalid operation";
    7 => NotImplemented, "HAILO_NOT_IMPLEMENTED", "Code has not been implemented";
    8 => InternalFailure, "HAILO_INTERNAL_FAILURE", "Unexpected internal failure";
    9 => DataAlignmentFailure, "HAILO_DATA_ALIGNMENT_FAILURE", "Data is not aligned";
    10 => ChunkTooLarge, "HAILO_CHUNK_TOO_LARGE", "Chunk too large";
    11 => InvalidLoggerLevel, "HAILO_INVALID_LOGGER_LEVEL", "Used non-compiled level";
    12 => CloseFailure, "HAILO_CLOSE_FAILURE", "Failed to close fd";
    13 => OpenFileFailure, "HAILO_OPEN_FILE_FAILURE", "Failed to open file";
    14 => FileOperationFailure, "HAILO_FILE_OPERATION_FAILURE", "File operation failure";
    15 => UnsupportedControlProtocolVersion, "HAILO_UNSUPPORTED_CONTROL_PROTOCOL_VERSION", "Unsupported control protocol version";
    16 => UnsupportedFwVersion, "HAILO_UNSUPPORTED_FW_VERSION", "Unsupported firmware version";
    17 => InvalidControlResponse, "HAILO_INVALID_CONTROL_RESPONSE", "Invalid control response";
    18 => FwControlFailure, "HAILO_FW_CONTROL_FAILURE", "Control failed in firmware";
    19 => EthFailure, "HAILO_ETH_FAILURE", "Ethernet operation has failed";
    20 => EthInterfaceNotFound, "HAILO_ETH_INTERFACE_NOT_FOUND", "Ethernet interface not found";
    21 => EthRecvFailure, "HAILO_ETH_RECV_FAILURE", "Ethernet failed at recv operation";
    22 => EthSendFailure, "HAILO_ETH_SEND_FAILURE", "Ethernet failed at send operation";
    23 => InvalidFirmware, "HAILO_INVALID_FIRMWARE", "Firmware bin is invalid";
    24 => InvalidContextCount, "HAILO_INVALID_CONTEXT_COUNT", "Host build too many contexts";
    25 => InvalidFrame, "HAILO_INVALID_FRAME", "Part or all of the result data is invalid";
    26 => InvalidHef, "HAILO_INVALID_HEF", "Invalid HEF";
    27 => PcieNotSupportedOnPlatform, "HAILO_PCIE_NOT_SUPPORTED_ON_PLATFORM", "PCIe not supported on platform";
    28 => InterruptedBySignal, "HAILO_INTERRUPTED_BY_SIGNAL", "Blocking syscall was interrupted by a signal";
    29 => StartVdmaChannelFail, "HAILO_START_VDMA_CHANNEL_FAIL", "Starting VDMA channel failure";
    30 => SyncVdmaBufferFail, "HAILO_SYNC_VDMA_BUFFER_FAIL", "Synchronizing VDMA buffer failure";
    31 => StopVdmaChannelFail, "HAILO_STOP_VDMA_CHANNEL_FAIL", "Stopping VDMA channel failure";
    32 => CloseVdmaChannelFail, "HAILO_CLOSE_VDMA_CHANNEL_FAIL", "Closing VDMA channel failure";
    33 => AtrTablesConfValidationFail, "HAILO_ATR_TABLES_CONF_VALIDATION_FAIL", "Validating address translation tables failure, for FW control use";
    34 => EventCreateFail, "HAILO_EVENT_CREATE_FAIL", "Creating event failure";
    35 => ReadEventFail, "HAILO_READ_EVENT_FAIL", "Reading event failure";
    36 => DriverOperationFailed, "HAILO_DRIVER_OPERATION_FAILED", "Driver operation (i.e ioctl) returned failure. Read driver log for more info (dmesg for linux)";
    37 => InvalidFirmwareMagic, "HAILO_INVALID_FIRMWARE_MAGIC", "Invalid FW magic";
    38 => InvalidFirmwareCodeSize, "HAILO_INVALID_FIRMWARE_CODE_SIZE", "Invalid FW code size";
    39 => InvalidKeyCertificateSize, "HAILO_INVALID_KEY_CERTIFICATE_SIZE", "Invalid key certificate size";
    40 => InvalidContentCertificateSize, "HAILO_INVALID_CONTENT_CERTIFICATE_SIZE", "Invalid content certificate size";
    41 => MismatchingFirmwareBufferSizes, "HAILO_MISMATCHING_FIRMWARE_BUFFER_SIZES", "FW buffer sizes mismatch";
    42 => InvalidFirmwareCpuId, "HAILO_INVALID_FIRMWARE_CPU_ID", "Invalid CPU ID in FW";
    43 => ControlResponseMd5Mismatch, "HAILO_CONTROL_RESPONSE_MD5_MISMATCH", "MD5 of control response does not match expected MD5";
    44 => GetControlResponseFail, "HAILO_GET_CONTROL_RESPONSE_FAIL", "Get control response failed";
    45 => GetD2hEventMessageFail, "HAILO_GET_D2H_EVENT_MESSAGE_FAIL", "Reading device-to-host message failure";
    46 => MutexInitFail, "HAILO_MUTEX_INIT_FAIL", "Mutex initialization failure";
    47 => OutOfDescriptors, "HAILO_OUT_OF_DESCRIPTORS", "Cannot allocate more descriptors";
    48 => UnsupportedOpcode, "HAILO_UNSUPPORTED_OPCODE", "Unsupported opcode was sent to device";
    49 => UserModeRateLimiterNotSupported, "HAILO_USER_MODE_RATE_LIMITER_NOT_SUPPORTED", "User mode rate limiter not supported on platform";
    50 => RateLimitMaximumBandwidthExceeded, "HAILO_RATE_LIMIT_MAXIMUM_BANDWIDTH_EXCEEDED", "Rate limit exceeded HAILO_DEFAULT_MAX_ETHERNET_BANDWIDTH_BYTES_PER_SEC";
    51 => AnsiToUtf16ConversionFailed, "HAILO_ANSI_TO_UTF16_CONVERSION_FAILED", "Failed converting ANSI string to UNICODE";
    52 => Utf16ToAnsiConversionFailed, "HAILO_UTF16_TO_ANSI_CONVERSION_FAILED", "Failed converting UNICODE string to ANSI";
    53 => UnexpectedInterfaceInfoFailure, "HAILO_UNEXPECTED_INTERFACE_INFO_FAILURE", "Failed retrieving interface info";
    54 => UnexpectedArpTableFailure, "HAILO_UNEXPECTED_ARP_TABLE_FAILURE", "Failed retrieving arp table";
    55 => MacAddressNotFound, "HAILO_MAC_ADDRESS_NOT_FOUND", "MAC address not found in the arp table";
    56 => NoIpv4InterfacesFound, "HAILO_NO_IPV4_INTERFACES_FOUND", "No interfaces found with an IPv4 address";
    57 => ShutdownEventSignaled, "HAILO_SHUTDOWN_EVENT_SIGNALED", "A shutdown event has been signaled";
    58 => ThreadAlreadyActivated, "HAILO_THREAD_ALREADY_ACTIVATED", "The given thread has already been activated";
    59 => ThreadNotActivated, "HAILO_THREAD_NOT_ACTIVATED", "The given thread has not been activated";
    60 => ThreadNotJoinable, "HAILO_THREAD_NOT_JOINABLE", "The given thread is not joinable";
    61 => NotFound, "HAILO_NOT_FOUND", "Could not find element";
    62 => CommunicationClosed, "HAILO_COMMUNICATION_CLOSED", "The communication between endpoints is closed";
    63 => StreamAbort, "HAILO_STREAM_ABORT", "Stream recv/send was aborted";
    64 => DriverNotInstalled, "HAILO_DRIVER_NOT_INSTALLED", "Driver is not installed/running on the system.";
    65 => NotAvailable, "HAILO_NOT_AVAILABLE", "Component is not available";
    66 => TrafficControlFailure, "HAILO_TRAFFIC_CONTROL_FAILURE", "Traffic control failure";
    67 => InvalidSecondStage, "HAILO_INVALID_SECOND_STAGE", "Second stage bin is invalid";
    68 => InvalidPipeline, "HAILO_INVALID_PIPELINE", "Pipeline is invalid";
    69 => NetworkGroupNotActivated, "HAILO_NETWORK_GROUP_NOT_ACTIVATED", "Network group is not activated";
    70 => VstreamPipelineNotActivated, "HAILO_VSTREAM_PIPELINE_NOT_ACTIVATED", "VStream pipeline is not activated";
    71 => OutOfFwMemory, "HAILO_OUT_OF_FW_MEMORY", "Cannot allocate more memory at fw";
    72 => StreamNotActivated, "HAILO_STREAM_NOT_ACTIVATED", "Stream is not activated";
    73 => DeviceInUse, "HAILO_DEVICE_IN_USE", "The device is already in use";
    74 => OutOfPhysicalDevices, "HAILO_OUT_OF_PHYSICAL_DEVICES", "There are not enough physical devices";
    75 => InvalidDeviceArchitecture, "HAILO_INVALID_DEVICE_ARCHITECTURE", "Invalid device architecture";
    76 => InvalidDriverVersion, "HAILO_INVALID_DRIVER_VERSION", "Invalid driver version";
    77 => RpcFailed, "HAILO_RPC_FAILED", "RPC failed";
    78 => InvalidServiceVersion, "HAILO_INVALID_SERVICE_VERSION", "Invalid service version";
    79 => NotSupported, "HAILO_NOT_SUPPORTED", "Not supported operation";
    80 => NmsBurstInvalidData, "HAILO_NMS_BURST_INVALID_DATA", "Invalid data in NMS burst";
    81 => OutOfHostCmaMemory, "HAILO_OUT_OF_HOST_CMA_MEMORY", "Cannot allocate more CMA memory at host";
    82 => QueueIsFull, "HAILO_QUEUE_IS_FULL", "Cannot push more items into the queue";
    83 => DmaMappingAlreadyExists, "HAILO_DMA_MAPPING_ALREADY_EXISTS", "DMA mapping already exists";
    84 => CantMeetBufferRequirements, "HAILO_CANT_MEET_BUFFER_REQUIREMENTS", "can't meet buffer requirements";
    85 => DriverInvalidResponse, "HAILO_DRIVER_INVALID_RESPONSE", "Driver returned invalid response. Make sure the driver version is the same as libhailort";
    86 => DriverInvalidIoctl, "HAILO_DRIVER_INVALID_IOCTL", "Driver cannot handle ioctl. Can happen on libhailort vs driver version mismatch or when ioctl function is not supported";
    87 => DriverTimeout, "HAILO_DRIVER_TIMEOUT", "Driver operation returned a timeout. Device reset may be required.";
    88 => DriverInterrupted, "HAILO_DRIVER_INTERRUPTED", "Driver operation interrupted by system request (i.e can happen on application exit)";
    89 => ConnectionRefused, "HAILO_CONNECTION_REFUSED", "Connection was refused by other side";
    90 => DriverWaitCanceled, "HAILO_DRIVER_WAIT_CANCELED", "Driver operation was canceled";
    91 => HefFileCorrupted, "HAILO_HEF_FILE_CORRUPTED", "HEF file is corrupted";
    92 => HefNotSupported, "HAILO_HEF_NOT_SUPPORTED", "HEF file is not supported. Make sure the DFC version is compatible.";
    93 => HefNotCompatibleWithDevice, "HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE", "HEF file is not compatible with device.";
    94 => InvalidHefUse, "HAILO_INVALID_HEF_USE", "Invalid HEF use (i.e. when using HEF from a file path without first copying it's content to a mapped buffer while shared_weights is enabled)";
    95 => OperationAborted, "HAILO_OPERATION_ABORTED", "Operation was aborted";
    96 => DeviceNotConnected, "HAILO_DEVICE_NOT_CONNECTED", "Device is not connected";
    97 => DeviceTemporarilyUnavailable, "HAILO_DEVICE_TEMPORARILY_UNAVAILABLE", "Device is temporarily unavailable, try again later";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_from_1_to_97_round_trips() {
        assert_eq!(Status::ALL.len(), 97);
        for code in 1..=97u32 {
            let status = Status::from_code(code).expect("known status");
            assert_eq!(status.code(), code);
            let err = NpuError::from_status(code, "entry", String::new());
            assert_eq!(err.code(), Some(code));
            assert_eq!(err.status(), Some(status));
            assert_eq!(err.call(), Some("entry"));
            assert!(err.to_string().contains(status.name()));
        }
        assert_eq!(Status::from_code(0), None);
        assert_eq!(Status::from_code(98), None);
    }

    #[test]
    fn unknown_codes_keep_their_value() {
        let err = NpuError::from_status(1234, "run_async", "x".into());
        assert!(matches!(err, NpuError::Unknown { code: 1234, .. }));
        assert_eq!(err.code(), Some(1234));
        assert_eq!(err.status(), None);
    }

    #[test]
    fn message_names_call_status_and_detail() {
        let err = NpuError::from_status(2, "bindings_set_buffer", "size 3 != 12".into());
        assert_eq!(
            err.to_string(),
            "bindings_set_buffer: HAILO_INVALID_ARGUMENT (2): Invalid argument passed to function (size 3 != 12)"
        );
        assert_eq!(Status::HefNotCompatibleWithDevice.code(), 93);
        assert_eq!(
            Status::DeviceTemporarilyUnavailable.message(),
            "Device is temporarily unavailable, try again later"
        );
    }
}
