// model_error.hpp: what the model runtime's tests share: the one line a bad model gives.
#pragma once

#include "files.hpp"

#include <functional>
#include <string>

namespace attn::testing {

// The message of the ModelError `f` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ModelError& e) {
        return e.what();
    }
    return "";
}

}  // namespace attn::testing
