// Compiled and run by tests/status_text.rs: the shim's status text against a
// stand-in for hailo_get_status_message that answers as HailoRT 5.2.0 does
// (the name below HAILO_STATUS_COUNT = 98, NULL from there on).

#include "hes_status_text.hpp"

#include <cstdio>
#include <cstring>

static const char *stand_in_get_status_message(uint32_t status)
{
    if (status >= 98) {
        return nullptr;
    }
    return (4 == status) ? "HAILO_TIMEOUT" : "HAILO_DEVICE_IN_USE";
}

static int expect(uint32_t status, const char *want)
{
    const std::string got = hes_status_text(status, stand_in_get_status_message(status));
    if (got != want) {
        std::fprintf(stderr, "status %u: got '%s', want '%s'\n", status, got.c_str(), want);
        return 1;
    }
    return 0;
}

int main()
{
    int failures = 0;
    failures += expect(4, "HAILO_TIMEOUT (4)");
    failures += expect(73, "HAILO_DEVICE_IN_USE (73)");
    failures += expect(98, "unknown HailoRT status 98");
    failures += expect(4000000000u, "unknown HailoRT status 4000000000");
    return failures;
}
