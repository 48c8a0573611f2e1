// rope.cpp: see rope.hpp.
#include "rope.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<double> default_inv_freq(double theta, int dim) {
    std::vector<double> f(static_cast<std::size_t>(dim / 2));
    for (int i = 0; i < dim / 2; ++i) f[i] = 1.0 / std::pow(theta, 2.0 * i / dim);
    return f;
}

double yarn_mscale(double scale, double m = 1) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

}  // namespace

RopeFrequencies rope_frequencies(const Rope& r, int length) {
    RopeFrequencies out;
    const int dim = r.dim, half = dim / 2;
    switch (r.type) {
        case Rope::Type::Default:
            out.inv_freq = default_inv_freq(r.theta, dim);
            break;
        case Rope::Type::Linear:
            out.inv_freq = default_inv_freq(r.theta, dim);
            for (double& f : out.inv_freq) f /= r.factor;
            break;
        case Rope::Type::Dynamic: {
            const double L = std::max(length, r.max_positions), P = r.max_positions;
            const double base = r.theta * std::pow(r.factor * L / P - (r.factor - 1), static_cast<double>(dim) / (dim - 2));
            out.inv_freq = default_inv_freq(base, dim);
            break;
        }
        case Rope::Type::Llama3: {
            out.inv_freq = default_inv_freq(r.theta, dim);
            const double old = r.original_max_positions;
            const double low_wavelen = old / r.low_freq_factor, high_wavelen = old / r.high_freq_factor;
            for (double& f : out.inv_freq) {
                const double wavelen = 2 * kPi / f;
                if (wavelen > low_wavelen) f /= r.factor;  // long: interpolated
                else if (wavelen >= high_wavelen) {        // medium: smoothed between the two
                    const double smooth = (old / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
                    f = (1 - smooth) * f / r.factor + smooth * f;
                }
            }
            break;
        }
        case Rope::Type::Yarn: {
            // The factor as given (transformers 5: before, max / original replaced it when
            // original_max_position_embeddings was given); the ramp over the original length.
            const double original = r.original_max_positions > 0 ? r.original_max_positions : r.max_positions;
            const double factor = r.factor;
            out.attention_factor = r.attention_factor > 0 ? r.attention_factor
                                   : r.mscale > 0 && r.mscale_all_dim > 0
                                       ? yarn_mscale(factor, r.mscale) / yarn_mscale(factor, r.mscale_all_dim)
                                       : yarn_mscale(factor);
            const auto correction_dim = [&](double rotations) {
                return dim * std::log(original / (rotations * 2 * kPi)) / (2 * std::log(r.theta));
            };
            double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
            if (r.truncate) low = std::floor(low), high = std::ceil(high);
            low = std::max(low, 0.0), high = std::min(high, dim - 1.0);
            if (low == high) high += 0.001;
            out.inv_freq.resize(static_cast<std::size_t>(half));
            for (int i = 0; i < half; ++i) {
                const double pos_freq = std::pow(r.theta, 2.0 * i / dim);
                const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
                const double extrapolation = 1 - ramp;  // 1: keep the frequency, 0: divide by factor
                out.inv_freq[i] = 1 / (factor * pos_freq) * (1 - extrapolation) + 1 / pos_freq * extrapolation;
            }
            break;
        }
        case Rope::Type::LongRope: {
            const double original = r.original_max_positions > 0 ? r.original_max_positions : r.max_positions;
            const double factor = r.original_max_positions > 0 ? r.max_positions / original : r.factor;
            out.attention_factor = r.attention_factor > 0 ? r.attention_factor
                                   : factor <= 1 ? 1.0
                                                 : std::sqrt(1 + std::log(factor) / std::log(original));
            const std::vector<double>& ext = length > original ? r.long_factor : r.short_factor;
            out.inv_freq.resize(static_cast<std::size_t>(half));
            for (int i = 0; i < half; ++i) out.inv_freq[i] = 1 / (ext[i] * std::pow(r.theta, 2.0 * i / dim));
            break;
        }
    }
    for (std::size_t i = 0; i < r.freq_factors.size() && i < out.inv_freq.size(); ++i) out.inv_freq[i] /= r.freq_factors[i];
    if (r.own_frequencies)  // each section's frequencies those of its own rotation of 2·size dimensions
        for (std::size_t s = 0, i = 0; s < r.sections.size(); ++s) {
            const std::vector<double> own = default_inv_freq(r.theta, 2 * r.sections[s]);
            for (std::size_t j = 0; j < own.size() && i < out.inv_freq.size(); ++j, ++i) out.inv_freq[i] = own[j];
        }
    return out;
}

int stream_position(const PositionStreams& streams, int stream, int t) {
    if (streams.empty()) return t;
    const std::vector<int>& own = streams[static_cast<std::size_t>(std::min<std::size_t>(stream, streams.size() - 1))];
    const int n = static_cast<int>(own.size());
    if (t < n) return own[static_cast<std::size_t>(t)];
    int largest = -1;
    for (const std::vector<int>& s : streams)
        for (int p : s) largest = std::max(largest, p);
    return t + largest + 1 - n;
}

RopeTable rope_table(const Rope& r, int first, int T, int length) { return rope_table(r, PositionStreams{}, first, T, length); }

std::vector<int> pair_streams(const Rope& r) {
    std::vector<int> stream(static_cast<std::size_t>(r.dim / 2), 0);
    for (int s = 0, i = 0; s < static_cast<int>(r.sections.size()); ++s)
        for (int j = 0; j < r.sections[static_cast<std::size_t>(s)] && i < r.dim / 2; ++j, ++i) stream[static_cast<std::size_t>(i)] = s;
    return stream;
}

RopeTable rope_table(const Rope& r, const PositionStreams& streams, int first, int T, int length) {
    const RopeFrequencies f = rope_frequencies(r, length);
    const int half = r.dim / 2;
    const std::vector<int> stream = pair_streams(r);
    RopeTable t;
    t.dim = r.dim, t.first = first, t.T = T, t.interleaved = r.interleaved;
    t.cos.resize(static_cast<std::size_t>(T) * half), t.sin.resize(static_cast<std::size_t>(T) * half);
    for (int p = 0; p < T; ++p)
        for (int i = 0; i < half; ++i) {
            const int at = stream_position(streams, stream[static_cast<std::size_t>(i)], first + p);
            const double a = static_cast<double>(at) * f.inv_freq[i];
            t.cos[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::cos(a) * f.attention_factor);
            t.sin[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::sin(a) * f.attention_factor);
        }
    return t;
}

void apply_rope(const RopeTable& table, float* x, int row0, int T, int ld, int heads, int d_head) {
    const int half = table.dim / 2;
    for (int t = 0; t < T; ++t)
        for (int h = 0; h < heads; ++h) {
            float* v = x + static_cast<std::ptrdiff_t>(t) * ld + static_cast<std::ptrdiff_t>(h) * d_head;
            for (int i = 0; i < half; ++i) {
                float& x0 = table.interleaved ? v[2 * i] : v[i];
                float& x1 = table.interleaved ? v[2 * i + 1] : v[i + half];
                const float c = table.cos_at(row0 + t, i), s = table.sin_at(row0 + t, i), a = x0, b = x1;
                x0 = a * c - b * s;
                x1 = b * c + a * s;
            }
        }
}

}  // namespace attn
