// test_util.hpp: small helpers that several test files share.
#pragma once

#include "presets.hpp"

#include <doctest/doctest.h>

#include <string>

// ATTN_TEST_SANITIZED: built with AddressSanitizer (scripts/test.sh's sanitized suite), where
// plain loops run several times slower. The longest sweeps there visit fewer variants of their
// biggest shapes: the sanitizer looks for memory errors, which the shapes decide; the numbers of
// every variant are checked by the plain and the two wasm suites.
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_TEST_SANITIZED 1
#endif
#endif
#ifndef ATTN_TEST_SANITIZED
#define ATTN_TEST_SANITIZED 0
#endif

namespace attn::test {

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The trace of a built-in scene (core/formats/presets.hpp), by name.
inline Trace preset_trace(const char* name) {
    const Scene* scene = find_preset(name);
    REQUIRE(scene != nullptr);
    return compute(*scene);
}

}  // namespace attn::test
