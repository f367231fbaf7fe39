// The text the shim gives a HailoRT status: "HAILO_TIMEOUT (4)", or
// "unknown HailoRT status 123" when the library has no name for it.
//
// hailo_get_status_message returns the status *name* and returns NULL for a
// status at or above HAILO_STATUS_COUNT (HailoRT 5.2.0,
// hailort/libhailort/src/hailort.cpp, hailo_get_status_message). Appending
// that NULL to a std::string is undefined behaviour, so every use of the name
// goes through this function. It includes no HailoRT header, so a test can
// compile it against a stand-in for hailo_get_status_message.

#ifndef HES_STATUS_TEXT_HPP
#define HES_STATUS_TEXT_HPP

#include <cstdint>
#include <string>

// `name` is what hailo_get_status_message returned for `status` (may be NULL).
inline std::string hes_status_text(uint32_t status, const char *name)
{
    if ((nullptr == name) || ('\0' == name[0])) {
        return "unknown HailoRT status " + std::to_string(status);
    }
    return std::string(name) + " (" + std::to_string(status) + ")";
}

#endif // HES_STATUS_TEXT_HPP
