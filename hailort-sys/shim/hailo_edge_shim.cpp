// hailo-edge shim: fills the hes_api table (hailo_edge_shim.h) over HailoRT's
// C++ InferModel API, the only API that runs networks on a Hailo-10H.
//
// Every entry runs its body inside `protect`, which turns a C++ exception or a
// failed HailoRT call into a hes_status and records a message for the calling
// thread (read back with last_error). No exception crosses the C boundary.

#include "hailo_edge_shim.h"
#include "hes_status_text.hpp"

#include <hailo/hailort.h>
#include <hailo/hailort.hpp>
#include <hailo/infer_model.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace hailort;

struct hes_vdevice {
    std::unique_ptr<VDevice> vdevice;
};

struct hes_infer_model {
    std::shared_ptr<InferModel> model;
    std::string name;
};

struct hes_configured_model {
    ConfiguredInferModel configured;
};

struct hes_bindings {
    ConfiguredInferModel::Bindings bindings;
};

struct hes_job {
    AsyncInferJob job;
};

namespace {

thread_local std::string t_last_error;

// A failed HailoRT call, carried to `protect` as an exception.
struct StatusError {
    hailo_status status;
    std::string message;
};

void fail(hailo_status status, const std::string &what)
{
    throw StatusError{status, what};
}

void check(hailo_status status, const char *what)
{
    if (HAILO_SUCCESS != status) {
        fail(status, what);
    }
}

template <typename T>
T take(Expected<T> &&expected, const char *what)
{
    if (!expected.has_value()) {
        fail(expected.status(), what);
    }
    return expected.release();
}

template <typename F>
hes_status protect(F &&body) noexcept
{
    try {
        t_last_error.clear();
        body();
        return HAILO_SUCCESS;
    } catch (const StatusError &e) {
        t_last_error = e.message + ": " + hes_status_text(e.status, hailo_get_status_message(e.status));
        return static_cast<hes_status>(e.status);
    } catch (const std::bad_alloc &e) {
        t_last_error = std::string("out of host memory: ") + e.what();
        return HAILO_OUT_OF_HOST_MEMORY;
    } catch (const std::exception &e) {
        t_last_error = std::string("C++ exception: ") + e.what();
        return HAILO_INTERNAL_FAILURE;
    } catch (...) {
        t_last_error = "unknown C++ exception";
        return HAILO_INTERNAL_FAILURE;
    }
}

void require(const void *ptr, const char *what)
{
    if (nullptr == ptr) {
        fail(HAILO_INVALID_ARGUMENT, std::string(what) + " is NULL");
    }
}

void copy_name(char *dst, size_t capacity, const std::string &src)
{
    if (src.size() + 1 > capacity) {
        fail(HAILO_INSUFFICIENT_BUFFER, "name '" + src + "' does not fit");
    }
    std::memcpy(dst, src.c_str(), src.size() + 1);
}

std::vector<InferModel::InferStream> streams_of(hes_infer_model *m, hes_direction direction)
{
    require(m, "infer model");
    if (0 == direction) {
        return m->model->inputs();
    }
    if (1 == direction) {
        return m->model->outputs();
    }
    fail(HAILO_INVALID_ARGUMENT, "direction must be 0 (input) or 1 (output)");
    return {};
}

InferModel::InferStream stream_at(hes_infer_model *m, hes_direction direction, size_t index)
{
    auto streams = streams_of(m, direction);
    if (index >= streams.size()) {
        fail(HAILO_NOT_FOUND, "stream index " + std::to_string(index) + " out of range");
    }
    return streams[index];
}

InferModel::InferStream stream_named(hes_infer_model *m, hes_direction direction, const char *name)
{
    require(name, "stream name");
    require(m, "infer model");
    if (0 == direction) {
        return take(m->model->input(name), "InferModel::input");
    }
    return take(m->model->output(name), "InferModel::output");
}

Device &physical(hes_vdevice *v, size_t index)
{
    require(v, "vdevice");
    auto devices = take(v->vdevice->get_physical_devices(), "VDevice::get_physical_devices");
    if (index >= devices.size()) {
        fail(HAILO_NOT_FOUND, "physical device index " + std::to_string(index) + " out of range");
    }
    return devices[index].get();
}

hes_status get_library_version(hes_version *out)
{
    return protect([&] {
        require(out, "out");
        hailo_version_t v{};
        check(hailo_get_library_version(&v), "hailo_get_library_version");
        *out = hes_version{v.major, v.minor, v.revision};
    });
}

const char *get_status_message(hes_status status)
{
    // The name, or NULL for a status HailoRT does not know: the table passes
    // HailoRT's answer on and the caller names the unknown status.
    return hailo_get_status_message(static_cast<hailo_status>(status));
}

const char *last_error()
{
    return t_last_error.c_str();
}

hes_status scan_devices(hes_device_id *ids, size_t *count)
{
    return protect([&] {
        require(count, "count");
        auto found = take(Device::scan(), "Device::scan");
        const size_t capacity = *count;
        *count = found.size();
        if (found.size() > capacity) {
            fail(HAILO_INSUFFICIENT_BUFFER, "device id array too small");
        }
        for (size_t i = 0; i < found.size(); i++) {
            copy_name(ids[i].id, sizeof(ids[i].id), found[i]);
        }
    });
}

hes_status vdevice_create(const hes_vdevice_params *params, hes_vdevice **out)
{
    return protect([&] {
        require(out, "out");
        hailo_vdevice_params_t p{};
        check(hailo_init_vdevice_params(&p), "hailo_init_vdevice_params");
        std::vector<hailo_device_id_t> ids;
        if (nullptr != params) {
            for (size_t i = 0; i < params->device_count; i++) {
                hailo_device_id_t id{};
                static_assert(sizeof(id.id) == HES_MAX_DEVICE_ID, "device id length differs from HailoRT's");
                std::memcpy(id.id, params->device_ids[i].id, sizeof(id.id));
                id.id[sizeof(id.id) - 1] = '\0';
                ids.push_back(id);
            }
            if (!ids.empty()) {
                p.device_ids = ids.data();
                p.device_count = static_cast<uint32_t>(ids.size());
            }
            p.scheduling_algorithm = static_cast<hailo_scheduling_algorithm_t>(params->scheduling_algorithm);
            if (nullptr != params->group_id) {
                p.group_id = params->group_id;
            }
        }
        auto vdevice = take(VDevice::create(p), "VDevice::create");
        *out = new hes_vdevice{std::move(vdevice)};
    });
}

hes_status vdevice_release(hes_vdevice *v)
{
    return protect([&] { delete v; });
}

hes_status vdevice_device_ids(hes_vdevice *v, hes_device_id *ids, size_t *count)
{
    return protect([&] {
        require(v, "vdevice");
        require(count, "count");
        auto found = take(v->vdevice->get_physical_devices_ids(), "VDevice::get_physical_devices_ids");
        const size_t capacity = *count;
        *count = found.size();
        if (found.size() > capacity) {
            fail(HAILO_INSUFFICIENT_BUFFER, "device id array too small");
        }
        for (size_t i = 0; i < found.size(); i++) {
            copy_name(ids[i].id, sizeof(ids[i].id), found[i]);
        }
    });
}

hes_status vdevice_performance_stats(hes_vdevice *v, size_t index, hes_performance_stats *out)
{
    return protect([&] {
        require(out, "out");
        auto s = take(physical(v, index).query_performance_stats(), "Device::query_performance_stats");
        *out = hes_performance_stats{s.cpu_utilization, s.ram_size_total, s.ram_size_used, s.nnc_utilization,
            s.dsp_utilization};
    });
}

hes_status vdevice_power(hes_vdevice *v, size_t index, float *watts)
{
    return protect([&] {
        require(watts, "watts");
        *watts = take(physical(v, index).power_measurement(HAILO_DVM_OPTIONS_AUTO,
                          HAILO_POWER_MEASUREMENT_TYPES__POWER),
            "Device::power_measurement");
    });
}

hes_status vdevice_chip_temperature(hes_vdevice *v, size_t index, hes_chip_temperature *out)
{
    return protect([&] {
        require(out, "out");
        auto t = take(physical(v, index).get_chip_temperature(), "Device::get_chip_temperature");
        *out = hes_chip_temperature{t.ts0_temperature, t.ts1_temperature, t.sample_count};
    });
}

/** Copies a counted HailoRT string into a NUL-terminated field, cut to fit. */
void copy_counted(char *dst, size_t capacity, const char *src, size_t length, size_t src_capacity)
{
    size_t n = std::min(std::min(length, src_capacity), capacity - 1);
    std::memcpy(dst, src, n);
    dst[n] = '\0';
}

hes_status vdevice_identify(hes_vdevice *v, size_t index, hes_identity *out)
{
    return protect([&] {
        require(out, "out");
        auto id = take(physical(v, index).identify(), "Device::identify");
        hes_identity r{};
        r.protocol_version = id.protocol_version;
        r.fw_version = hes_version{id.fw_version.major, id.fw_version.minor, id.fw_version.revision};
        r.device_architecture = static_cast<uint32_t>(id.device_architecture);
        r.is_release = id.is_release;
        copy_counted(r.board_name, sizeof(r.board_name), id.board_name, id.board_name_length,
            sizeof(id.board_name));
        copy_counted(r.serial_number, sizeof(r.serial_number), id.serial_number, id.serial_number_length,
            sizeof(id.serial_number));
        copy_counted(r.product_name, sizeof(r.product_name), id.product_name, id.product_name_length,
            sizeof(id.product_name));
        *out = r;
    });
}

hes_infer_model *wrap_model(std::shared_ptr<InferModel> model)
{
    auto names = model->hef().get_network_groups_names();
    std::string name = names.empty() ? std::string() : names.front();
    return new hes_infer_model{std::move(model), std::move(name)};
}

hes_status infer_model_create_from_file(hes_vdevice *v, const char *path, hes_infer_model **out)
{
    return protect([&] {
        require(v, "vdevice");
        require(path, "path");
        require(out, "out");
        auto model = take(v->vdevice->create_infer_model(std::string(path)), "VDevice::create_infer_model");
        *out = wrap_model(std::move(model));
    });
}

hes_status infer_model_create_from_memory(hes_vdevice *v, const void *data, size_t size, hes_infer_model **out)
{
    return protect([&] {
        require(v, "vdevice");
        require(data, "data");
        require(out, "out");
        auto view = MemoryView::create_const(data, size);
        auto model = take(v->vdevice->create_infer_model(view), "VDevice::create_infer_model");
        *out = wrap_model(std::move(model));
    });
}

hes_status infer_model_release(hes_infer_model *m)
{
    return protect([&] { delete m; });
}

hes_status infer_model_name(hes_infer_model *m, char *name, size_t capacity)
{
    return protect([&] {
        require(m, "infer model");
        require(name, "name");
        copy_name(name, capacity, m->name);
    });
}

hes_status infer_model_stream_count(hes_infer_model *m, hes_direction direction, size_t *count)
{
    return protect([&] {
        require(count, "count");
        *count = streams_of(m, direction).size();
    });
}

hes_status infer_model_stream_info(hes_infer_model *m, hes_direction direction, size_t index, hes_stream_info *out)
{
    return protect([&] {
        require(out, "out");
        auto s = stream_at(m, direction, index);
        hes_stream_info info{};
        copy_name(info.name, sizeof(info.name), s.name());
        info.direction = direction;
        auto shape = s.shape();
        info.shape = hes_shape{shape.height, shape.width, shape.features};
        auto format = s.format();
        info.format = hes_format{static_cast<uint32_t>(format.type), static_cast<uint32_t>(format.order),
            static_cast<uint32_t>(format.flags)};
        info.frame_size = s.get_frame_size();
        info.quant_count = static_cast<uint32_t>(s.get_quant_infos().size());
        info.is_nms = s.is_nms();
        *out = info;
    });
}

hes_status infer_model_stream_quant_infos(hes_infer_model *m, hes_direction direction, size_t index,
    hes_quant_info *infos, size_t *count)
{
    return protect([&] {
        require(count, "count");
        auto quants = stream_at(m, direction, index).get_quant_infos();
        const size_t capacity = *count;
        *count = quants.size();
        if (quants.size() > capacity) {
            fail(HAILO_INSUFFICIENT_BUFFER, "quant info array too small");
        }
        for (size_t i = 0; i < quants.size(); i++) {
            infos[i] = hes_quant_info{quants[i].qp_zp, quants[i].qp_scale, quants[i].limvals_min,
                quants[i].limvals_max};
        }
    });
}

hes_status infer_model_set_batch_size(hes_infer_model *m, uint16_t batch_size)
{
    return protect([&] {
        require(m, "infer model");
        m->model->set_batch_size(batch_size);
    });
}

hes_status infer_model_set_format_type(hes_infer_model *m, hes_direction direction, const char *name, uint32_t type)
{
    return protect([&] {
        stream_named(m, direction, name).set_format_type(static_cast<hailo_format_type_t>(type));
    });
}

hes_status infer_model_set_format_order(hes_infer_model *m, hes_direction direction, const char *name,
    uint32_t order)
{
    return protect([&] {
        stream_named(m, direction, name).set_format_order(static_cast<hailo_format_order_t>(order));
    });
}

hes_status infer_model_set_power_mode(hes_infer_model *m, uint32_t mode)
{
    return protect([&] {
        require(m, "infer model");
        m->model->set_power_mode(static_cast<hailo_power_mode_t>(mode));
    });
}

hes_status infer_model_computational_ops(hes_infer_model *m, uint64_t *ops)
{
    return protect([&] {
        require(m, "infer model");
        require(ops, "ops");
        *ops = take(m->model->hef().get_computational_ops(m->name), "Hef::get_computational_ops");
    });
}

hes_status infer_model_configure(hes_infer_model *m, hes_configured_model **out)
{
    return protect([&] {
        require(m, "infer model");
        require(out, "out");
        auto configured = take(m->model->configure(), "InferModel::configure");
        *out = new hes_configured_model{std::move(configured)};
    });
}

hes_status configured_model_release(hes_configured_model *c)
{
    return protect([&] { delete c; });
}

hes_status configured_model_create_bindings(hes_configured_model *c, hes_bindings **out)
{
    return protect([&] {
        require(c, "configured model");
        require(out, "out");
        auto bindings = take(c->configured.create_bindings(), "ConfiguredInferModel::create_bindings");
        *out = new hes_bindings{std::move(bindings)};
    });
}

hes_status configured_model_run(hes_configured_model *c, hes_bindings *b, uint32_t timeout_ms)
{
    return protect([&] {
        require(c, "configured model");
        require(b, "bindings");
        check(c->configured.run(b->bindings, std::chrono::milliseconds(timeout_ms)), "ConfiguredInferModel::run");
    });
}

// 0 = pending, 1 = callback delivered, 2 = abandoned (run_async failed first).
using CallbackState = std::atomic<int>;

hes_status configured_model_run_async(hes_configured_model *c, hes_bindings *b, hes_completion_cb callback,
    void *user_data, hes_job **out_job)
{
    auto state = std::make_shared<CallbackState>(0);
    const hes_status status = protect([&] {
        require(c, "configured model");
        require(b, "bindings");
        require(reinterpret_cast<const void *>(callback), "callback");
        require(out_job, "out_job");
        *out_job = nullptr;
        auto job = take(c->configured.run_async(b->bindings,
                            [state, callback, user_data](const AsyncInferCompletionInfo &info) {
                                int expected = 0;
                                if (state->compare_exchange_strong(expected, 1)) {
                                    callback(static_cast<hes_status>(info.status), user_data);
                                }
                            }),
            "ConfiguredInferModel::run_async");
        *out_job = new hes_job{std::move(job)};
    });
    if (HAILO_SUCCESS != status) {
        int expected = 0;
        if (!state->compare_exchange_strong(expected, 2)) {
            // The callback already ran and owns user_data: report the job as ended.
            return HAILO_SUCCESS;
        }
    }
    return status;
}

hes_status configured_model_wait_for_async_ready(hes_configured_model *c, uint32_t timeout_ms, uint32_t frames)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.wait_for_async_ready(std::chrono::milliseconds(timeout_ms), frames),
            "ConfiguredInferModel::wait_for_async_ready");
    });
}

hes_status configured_model_get_async_queue_size(hes_configured_model *c, size_t *queue_size)
{
    return protect([&] {
        require(c, "configured model");
        require(queue_size, "queue_size");
        *queue_size = take(c->configured.get_async_queue_size(), "ConfiguredInferModel::get_async_queue_size");
    });
}

hes_status configured_model_set_scheduler_priority(hes_configured_model *c, uint8_t priority)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.set_scheduler_priority(priority), "ConfiguredInferModel::set_scheduler_priority");
    });
}

hes_status configured_model_set_scheduler_threshold(hes_configured_model *c, uint32_t threshold)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.set_scheduler_threshold(threshold), "ConfiguredInferModel::set_scheduler_threshold");
    });
}

hes_status configured_model_set_scheduler_timeout(hes_configured_model *c, uint32_t timeout_ms)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.set_scheduler_timeout(std::chrono::milliseconds(timeout_ms)),
            "ConfiguredInferModel::set_scheduler_timeout");
    });
}

hes_status configured_model_activate(hes_configured_model *c)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.activate(), "ConfiguredInferModel::activate");
    });
}

hes_status configured_model_deactivate(hes_configured_model *c)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.deactivate(), "ConfiguredInferModel::deactivate");
    });
}

hes_status configured_model_shutdown(hes_configured_model *c)
{
    return protect([&] {
        require(c, "configured model");
        check(c->configured.shutdown(), "ConfiguredInferModel::shutdown");
    });
}

hes_status bindings_set_buffer(hes_bindings *b, hes_direction direction, const char *name, void *data, size_t size)
{
    return protect([&] {
        require(b, "bindings");
        require(name, "stream name");
        require(data, "data");
        auto stream = (0 == direction) ? take(b->bindings.input(name), "Bindings::input")
                                       : take(b->bindings.output(name), "Bindings::output");
        check(stream.set_buffer(MemoryView(data, size)), "Bindings::InferStream::set_buffer");
    });
}

hes_status bindings_release(hes_bindings *b)
{
    return protect([&] { delete b; });
}

hes_status job_wait(hes_job *j, uint32_t timeout_ms)
{
    return protect([&] {
        require(j, "job");
        check(j->job.wait(std::chrono::milliseconds(timeout_ms)), "AsyncInferJob::wait");
    });
}

hes_status job_release(hes_job *j)
{
    return protect([&] {
        if (nullptr != j) {
            j->job.detach();
            delete j;
        }
    });
}

hes_status infer_model_set_hw_latency_flags(hes_infer_model *m, uint32_t flags)
{
    return protect([&] {
        require(m, "infer model");
        m->model->set_hw_latency_measurement_flags(static_cast<hailo_latency_measurement_flags_t>(flags));
    });
}

hes_status configured_model_hw_latency(hes_configured_model *c, uint64_t *avg_ns)
{
    return protect([&] {
        require(c, "configured model");
        require(avg_ns, "avg_ns");
        auto latency = take(c->configured.get_hw_latency_measurement(),
            "ConfiguredInferModel::get_hw_latency_measurement");
        const auto ns = latency.avg_hw_latency.count();
        *avg_ns = (ns > 0) ? static_cast<uint64_t>(ns) : 0;
    });
}

hailo_dma_buffer_direction_t dma_direction(uint32_t direction)
{
    if (direction > 2) {
        fail(HAILO_INVALID_ARGUMENT, "DMA direction must be 0 (H2D), 1 (D2H) or 2 (BOTH)");
    }
    return static_cast<hailo_dma_buffer_direction_t>(direction);
}

hes_status vdevice_dma_map(hes_vdevice *v, void *address, size_t size, uint32_t direction)
{
    return protect([&] {
        require(v, "vdevice");
        require(address, "address");
        check(v->vdevice->dma_map(address, size, dma_direction(direction)), "VDevice::dma_map");
    });
}

hes_status vdevice_dma_unmap(hes_vdevice *v, void *address, size_t size, uint32_t direction)
{
    return protect([&] {
        require(v, "vdevice");
        require(address, "address");
        check(v->vdevice->dma_unmap(address, size, dma_direction(direction)), "VDevice::dma_unmap");
    });
}

const hes_api k_api = {
    HES_ABI_VERSION,
    get_library_version,
    get_status_message,
    last_error,
    scan_devices,
    vdevice_create,
    vdevice_release,
    vdevice_device_ids,
    vdevice_performance_stats,
    vdevice_power,
    vdevice_chip_temperature,
    vdevice_identify,
    infer_model_create_from_file,
    infer_model_create_from_memory,
    infer_model_release,
    infer_model_name,
    infer_model_stream_count,
    infer_model_stream_info,
    infer_model_stream_quant_infos,
    infer_model_set_batch_size,
    infer_model_set_format_type,
    infer_model_set_format_order,
    infer_model_set_power_mode,
    infer_model_computational_ops,
    infer_model_configure,
    configured_model_release,
    configured_model_create_bindings,
    configured_model_run,
    configured_model_run_async,
    configured_model_wait_for_async_ready,
    configured_model_get_async_queue_size,
    configured_model_set_scheduler_priority,
    configured_model_set_scheduler_threshold,
    configured_model_set_scheduler_timeout,
    configured_model_activate,
    configured_model_deactivate,
    configured_model_shutdown,
    bindings_set_buffer,
    bindings_release,
    job_wait,
    job_release,
    infer_model_set_hw_latency_flags,
    configured_model_hw_latency,
    vdevice_dma_map,
    vdevice_dma_unmap,
};

} // namespace

extern "C" const hes_api *hes_hailort_api(void)
{
    return &k_api;
}
