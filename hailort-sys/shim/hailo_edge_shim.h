/*
 * hailo-edge shim ABI: one table of C function pointers over HailoRT's C++
 * InferModel API, plus the plain types it needs.
 *
 * The table is the only seam between Rust and a backend. The C++ shim
 * (hailo_edge_shim.cpp) fills it over libhailort; the simulator in the
 * hailo-edge crate fills it with Rust functions. Nothing here includes
 * hailort.h, so the Rust bindings of this header are valid without HailoRT.
 *
 * Conventions:
 * - Every entry returns a hes_status whose values are HailoRT's hailo_status
 *   values (0 = HAILO_SUCCESS, 2 = HAILO_INVALID_ARGUMENT, ...).
 * - On failure, last_error() returns a message for the calling thread (for
 *   the C++ shim, the text of the caught exception or the failed check).
 * - Handles are opaque; each has exactly one release entry.
 * - Directions: 0 = input (host to device), 1 = output (device to host).
 * - Counts marked "in/out" take the capacity and return the count; a too
 *   small capacity gives HAILO_INSUFFICIENT_BUFFER (5) plus the needed count.
 */
#ifndef HAILO_EDGE_SHIM_H
#define HAILO_EDGE_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this table layout; bumped on any change to hes_api. */
#define HES_ABI_VERSION 3u

/** Same limits as HailoRT's HAILO_MAX_NAME_SIZE / HAILO_MAX_DEVICE_ID_LENGTH. */
#define HES_MAX_NAME 128u
#define HES_MAX_DEVICE_ID 32u
/** HailoRT's HAILO_INFINITE timeout. */
#define HES_INFINITE 0xFFFFFFFFu

/** A HailoRT hailo_status value. */
typedef uint32_t hes_status;

/** Stream direction: 0 = input, 1 = output (as hailo_stream_direction_t). */
typedef uint32_t hes_direction;

typedef struct hes_vdevice hes_vdevice;
typedef struct hes_infer_model hes_infer_model;
typedef struct hes_configured_model hes_configured_model;
typedef struct hes_bindings hes_bindings;
typedef struct hes_job hes_job;

typedef struct {
    uint32_t major;
    uint32_t minor;
    uint32_t revision;
} hes_version;

/** A device id: PCIe BDF, an IPv4 address (the USB part), or the integrated device id. */
typedef struct {
    char id[HES_MAX_DEVICE_ID];
} hes_device_id;

typedef struct {
    /** Devices to use; NULL with count 0 means "any one device". */
    const hes_device_id *device_ids;
    size_t device_count;
    /** hailo_scheduling_algorithm_t: 0 = NONE, 1 = ROUND_ROBIN. */
    uint32_t scheduling_algorithm;
    /** Shared-VDevice key; NULL means HailoRT's default ("UNIQUE"). */
    const char *group_id;
} hes_vdevice_params;

typedef struct {
    uint32_t height;
    uint32_t width;
    uint32_t features;
} hes_shape;

/** hailo_format_t values: type (AUTO 0, UINT8 1, UINT16 2, FLOAT32 3),
 *  order (hailo_format_order_t), flags (NONE 0, QUANTIZED 1, TRANSPOSED 2). */
typedef struct {
    uint32_t type;
    uint32_t order;
    uint32_t flags;
} hes_format;

/** Real value = (q - zp) * scale. */
typedef struct {
    float zp;
    float scale;
    float limvals_min;
    float limvals_max;
} hes_quant_info;

typedef struct {
    char name[HES_MAX_NAME];
    hes_direction direction;
    hes_shape shape;
    hes_format format;
    /** Bytes of one frame in the current user format. */
    uint64_t frame_size;
    /** Number of quant infos (1, or one per feature); read them with
     *  infer_model_stream_quant_infos. */
    uint32_t quant_count;
    bool is_nms;
} hes_stream_info;

/** hailo_performance_stats_t; -1 in a field means "could not read it". */
typedef struct {
    float cpu_utilization;
    int64_t ram_size_total_kib;
    int64_t ram_size_used_kib;
    float nnc_utilization;
    int32_t dsp_utilization;
} hes_performance_stats;

typedef struct {
    float ts0_temperature;
    float ts1_temperature;
    uint16_t sample_count;
} hes_chip_temperature;

/** Room for HailoRT's identity strings (at most 42 bytes) and a NUL. */
#define HES_MAX_IDENTITY_TEXT 64u

/** Device::identify (hailo_device_identity_t), the fields the runtime reads.
 *  Over hRPC the host library and the card's server exchange no version, so
 *  fw_version is the only way to see that they differ. */
typedef struct {
    uint32_t protocol_version;
    hes_version fw_version;
    /** hailo_device_architecture_t (HAILO10H = 6). */
    uint32_t device_architecture;
    bool is_release;
    /** NUL-terminated copies of the counted strings. */
    char board_name[HES_MAX_IDENTITY_TEXT];
    char serial_number[HES_MAX_IDENTITY_TEXT];
    char product_name[HES_MAX_IDENTITY_TEXT];
} hes_identity;

/**
 * Completion of a run_async. Called exactly once, on a backend thread, iff
 * run_async returned HAILO_SUCCESS. Must not block and must not unwind.
 */
typedef void (*hes_completion_cb)(hes_status status, void *user_data);

typedef struct hes_api {
    /** HES_ABI_VERSION of the table's implementation. */
    uint32_t abi_version;

    /* --- library --- */
    hes_status (*get_library_version)(hes_version *out);
    /**
     * HailoRT's name of a status ("HAILO_TIMEOUT"): hailo_get_status_message
     * returns the name, not a description. NULL for a status the library does
     * not know (HailoRT 5.2 answers NULL from HAILO_STATUS_COUNT = 98 on).
     */
    const char *(*get_status_message)(hes_status status);
    /** Message of the calling thread's last failure; never NULL, "" if none. */
    const char *(*last_error)(void);
    /** Device ids present; count is in/out. */
    hes_status (*scan_devices)(hes_device_id *ids, size_t *count);

    /* --- vdevice --- */
    hes_status (*vdevice_create)(const hes_vdevice_params *params, hes_vdevice **out);
    hes_status (*vdevice_release)(hes_vdevice *vdevice);
    /** Ids of the physical devices behind the vdevice; count is in/out. */
    hes_status (*vdevice_device_ids)(hes_vdevice *vdevice, hes_device_id *ids, size_t *count);
    /** Device::query_performance_stats of physical device `index`. */
    hes_status (*vdevice_performance_stats)(hes_vdevice *vdevice, size_t index, hes_performance_stats *out);
    /** Device::power_measurement (AUTO dvm, POWER), watts. */
    hes_status (*vdevice_power)(hes_vdevice *vdevice, size_t index, float *watts);
    hes_status (*vdevice_chip_temperature)(hes_vdevice *vdevice, size_t index, hes_chip_temperature *out);
    /** Device::identify of physical device `index`. */
    hes_status (*vdevice_identify)(hes_vdevice *vdevice, size_t index, hes_identity *out);

    /* --- infer model --- */
    hes_status (*infer_model_create_from_file)(hes_vdevice *vdevice, const char *path, hes_infer_model **out);
    hes_status (*infer_model_create_from_memory)(hes_vdevice *vdevice, const void *data, size_t size,
        hes_infer_model **out);
    hes_status (*infer_model_release)(hes_infer_model *model);
    /** Name of the model's network group (NUL-terminated, at most HES_MAX_NAME bytes). */
    hes_status (*infer_model_name)(hes_infer_model *model, char *name, size_t capacity);
    hes_status (*infer_model_stream_count)(hes_infer_model *model, hes_direction direction, size_t *count);
    hes_status (*infer_model_stream_info)(hes_infer_model *model, hes_direction direction, size_t index,
        hes_stream_info *out);
    /** Quant infos of one stream; count is in/out. */
    hes_status (*infer_model_stream_quant_infos)(hes_infer_model *model, hes_direction direction, size_t index,
        hes_quant_info *infos, size_t *count);
    hes_status (*infer_model_set_batch_size)(hes_infer_model *model, uint16_t batch_size);
    hes_status (*infer_model_set_format_type)(hes_infer_model *model, hes_direction direction, const char *name,
        uint32_t format_type);
    hes_status (*infer_model_set_format_order)(hes_infer_model *model, hes_direction direction, const char *name,
        uint32_t format_order);
    /** hailo_power_mode_t: 0 = PERFORMANCE, 1 = ULTRA_PERFORMANCE. */
    hes_status (*infer_model_set_power_mode)(hes_infer_model *model, uint32_t power_mode);
    /** Hef::get_computational_ops of the model's network group. */
    hes_status (*infer_model_computational_ops)(hes_infer_model *model, uint64_t *ops);
    hes_status (*infer_model_configure)(hes_infer_model *model, hes_configured_model **out);

    /* --- configured model --- */
    hes_status (*configured_model_release)(hes_configured_model *model);
    hes_status (*configured_model_create_bindings)(hes_configured_model *model, hes_bindings **out);
    /**
     * Blocking inference of one set of bindings. On HAILO_TIMEOUT the job may still be in flight
     * with the buffers in use, and nothing signals its end: the safe layer runs frames through
     * run_async instead.
     */
    hes_status (*configured_model_run)(hes_configured_model *model, hes_bindings *bindings, uint32_t timeout_ms);
    /**
     * Starts one inference. The buffers set on `bindings` must stay valid
     * until `callback` runs. On failure the model needs reconfiguring
     * (HailoRT shuts the interface down) and the callback is never called.
     * `out_job` may be set to NULL on success when the job already ended.
     */
    hes_status (*configured_model_run_async)(hes_configured_model *model, hes_bindings *bindings,
        hes_completion_cb callback, void *user_data, hes_job **out_job);
    /** Waits until `frames` more run_async calls would be accepted. */
    hes_status (*configured_model_wait_for_async_ready)(hes_configured_model *model, uint32_t timeout_ms,
        uint32_t frames);
    /**
     * ConfiguredInferModel::get_async_queue_size: the most jobs the model takes in flight. One
     * more and the card answers HAILO_QUEUE_IS_FULL in the completion and shuts its copy of the
     * model down.
     */
    hes_status (*configured_model_get_async_queue_size)(hes_configured_model *model, size_t *queue_size);
    hes_status (*configured_model_set_scheduler_priority)(hes_configured_model *model, uint8_t priority);
    hes_status (*configured_model_set_scheduler_threshold)(hes_configured_model *model, uint32_t threshold);
    hes_status (*configured_model_set_scheduler_timeout)(hes_configured_model *model, uint32_t timeout_ms);
    /** Only with scheduling NONE. */
    hes_status (*configured_model_activate)(hes_configured_model *model);
    hes_status (*configured_model_deactivate)(hes_configured_model *model);
    /** Aborts in-flight jobs (their callbacks run with an abort status). */
    hes_status (*configured_model_shutdown)(hes_configured_model *model);

    /* --- bindings --- */
    /** Sets the buffer of one stream; `size` must equal its frame size. */
    hes_status (*bindings_set_buffer)(hes_bindings *bindings, hes_direction direction, const char *name,
        void *data, size_t size);
    hes_status (*bindings_release)(hes_bindings *bindings);

    /* --- job --- */
    hes_status (*job_wait)(hes_job *job, uint32_t timeout_ms);
    /** Detaches and frees the job handle; the callback still runs. */
    hes_status (*job_release)(hes_job *job);

    /* --- hardware latency and DMA mapping --- */
    /**
     * InferModel::set_hw_latency_measurement_flags; takes effect at configure.
     * hailo_latency_measurement_flags_t: 0 = NONE, 1 = MEASURE, 2 = CLEAR_AFTER_GET.
     */
    hes_status (*infer_model_set_hw_latency_flags)(hes_infer_model *model, uint32_t flags);
    /**
     * ConfiguredInferModel::get_hw_latency_measurement: the average hardware
     * latency, ns. HAILO_NOT_AVAILABLE when the model was configured without
     * the MEASURE flag, nothing was measured yet, or it has several inputs.
     */
    hes_status (*configured_model_hw_latency)(hes_configured_model *model, uint64_t *avg_ns);
    /**
     * VDevice::dma_map of a host buffer (hailo_dma_buffer_direction_t: 0 = H2D,
     * 1 = D2H, 2 = BOTH). The buffer stays allocated until vdevice_dma_unmap
     * with the same address, size and direction (or the vdevice's release).
     */
    hes_status (*vdevice_dma_map)(hes_vdevice *vdevice, void *address, size_t size, uint32_t direction);
    hes_status (*vdevice_dma_unmap)(hes_vdevice *vdevice, void *address, size_t size, uint32_t direction);
} hes_api;

/**
 * The HailoRT-backed table (defined by hailo_edge_shim.cpp; present only when
 * the crate is built against an installed HailoRT).
 */
const hes_api *hes_hailort_api(void);

#ifdef __cplusplus
}
#endif

#endif /* HAILO_EDGE_SHIM_H */
