// test_util.hpp: small helpers that several test files share.
#pragma once

#include "figure_layout.hpp"
#include "presets.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>

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

// How many times `part` occurs in `text`, one after another (an SVG's elements of a class).
inline int occurrences(const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

// The same shape and the same bits (a result whatever the threads or the path that made it).
inline bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.size())) == 0);
}

// A JSON array of rows (a reference's) as a matrix.
inline Matrix matrix_of(const nlohmann::json& rows) {
    Matrix m(static_cast<Eigen::Index>(rows.size()), rows.empty() ? 0 : static_cast<Eigen::Index>(rows[0].size()));
    for (size_t i = 0; i < rows.size(); ++i)
        for (size_t j = 0; j < rows[i].size(); ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j].get<float>();
    return m;
}

// Widths from the bytes, a deterministic fake of the UI's fonts at their sizes.
struct ByteMeasure final : TextMeasure {
    float size(FontRole role) const override { return role == FontRole::Title ? 19.0f : role == FontRole::Small ? 12.5f : 15.0f; }
    float width(std::string_view text, FontRole role) const override {
        float w = 0.0f;
        for (unsigned char c : text) w += (c & 0xc0) != 0x80 ? 0.55f : 0.0f;
        return w * size(role);
    }
};

// The trace of a built-in scene (core/formats/presets.hpp), by name.
inline Trace preset_trace(const char* name) {
    const Scene* scene = find_preset(name);
    REQUIRE(scene != nullptr);
    return compute(*scene);
}

}  // namespace attn::test
