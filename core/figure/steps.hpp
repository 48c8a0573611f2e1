// steps.hpp: attention as the seeds teach it, a pipeline of labelled matrices, and the
// arithmetic behind any one number of it, written out. Header-only; the Steps view draws
// these, the tests assert the same strings.
//
// [SECTION] Numbers
// [SECTION] Pipeline
// [SECTION] Where a number comes from
#pragma once

#include "scene.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace attn {

// [SECTION] Numbers ---------------------------------------------------------------------------

// Every number the Steps view shows: 4 decimals, as seed 001 prints its tables ("0.2976");
// −∞ for masked scores; scientific notation once the fixed form would not fit a cell.
inline std::string format_number(float x, int decimals = 4) {
    if (std::isinf(x)) return x < 0 ? "\xe2\x88\x92\xe2\x88\x9e" : "\xe2\x88\x9e";
    if (std::isnan(x)) return "nan";
    char buffer[48];
    if (std::fabs(x) >= 1e5f) std::snprintf(buffer, sizeof buffer, "%.3e", x);
    else std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
    std::string s = buffer;
    if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.0000"
    return s;
}

// One row of m, numbers separated by single spaces.
inline std::string format_row(const Matrix& m, int row, int decimals = 4) {
    std::string s;
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
        if (j) s += ' ';
        s += format_number(m(row, j), decimals);
    }
    return s;
}

// Shannon entropy of a row of weights in nats: 0 for one-hot, ln(T_k) for uniform.
inline float row_entropy(const Matrix& weights, int row) {
    double h = 0.0;
    for (Eigen::Index j = 0; j < weights.cols(); ++j) {
        const double w = weights(row, j);
        if (w > 0.0) h -= w * std::log(w);
    }
    return static_cast<float>(h);
}

// [SECTION] Pipeline --------------------------------------------------------------------------

// In the pipeline's order. QNormed, Angles, QRotated, KNormed, KRotated and Capped only where
// the model has them (a live model of today's families: Trace::family).
enum class StepKind {
    Patches, Embedded, Input, InputKv, Q, QNormed, Angles, QRotated, K, KNormed, KRotated, V,
    Scores, Scaled, Capped, Masked, Weights, Output, Concat, Final
};

// One matrix of the pipeline: its label ("Q = X·W_q"), shape ("T_q×d_k = 3×3"), a formula
// line ("× 0.5774", "concat·W_o + b_o"; may be empty) and its values (masked entries −∞).
// In a long trace the matrices with a row per query hold their first rows only: `rows` is
// the whole matrix's row count, as the shape says.
// Only symbols here: the words that say what a step means are the view's captions, in the
// reader's language.
struct Step {
    StepKind kind;
    std::string label, shape, formula;
    Matrix values;
    bool probabilities = false;  // weights: one fixed 0..1 colour scale
    Eigen::Index rows = 0;       // of the whole matrix (≥ values.rows())
};

inline std::string shape_text(const char* rows, const char* cols, Eigen::Index r, Eigen::Index c) {
    return std::string(rows) + "×" + cols + " = " + std::to_string(r) + "×" + std::to_string(c);
}

// A number of a formula line, as short as it is exact enough: "10000", "1e+06", "0.0316228".
inline std::string format_general(double x, int digits = 6) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    return buffer;
}

// The Q and K steps the scores read: the last of Q, RMSNorm(Q), Q′ the pipeline has; and the
// step a rotation turns.
inline StepKind scored_q(const FamilyTrace& f) { return f.rotary() ? StepKind::QRotated : f.qk_norm() ? StepKind::QNormed : StepKind::Q; }
inline StepKind scored_k(const FamilyTrace& f) { return f.rotary() ? StepKind::KRotated : f.qk_norm() ? StepKind::KNormed : StepKind::K; }
inline StepKind unrotated_of(StepKind rotated, const FamilyTrace& f) {
    if (rotated == StepKind::QRotated) return f.qk_norm() ? StepKind::QNormed : StepKind::Q;
    return f.qk_norm() ? StepKind::KNormed : StepKind::K;
}

// The scaled scores of a soft-capped head before the mask: cap·tanh(s/cap) in every cell (the
// trace's own numbers where the mask allows, the same formula where it does not).
inline Matrix capped_scores(const Trace& tr, const HeadTrace& h) {
    const float factor = tr.scale.factor(tr.d_k), cap = tr.family.softcap;
    Matrix capped = h.scaled;
    for (Eigen::Index q = 0; q < capped.rows(); ++q)
        for (Eigen::Index k = 0; k < capped.cols(); ++k)
            if (!tr.allowed(q, k)) capped(q, k) = cap * std::tanh(h.scores(q, k) * factor / cap);
    return capped;
}

// M-RoPE's stream s (FamilyTrace::rope_positions) by name: t, h, w (qwen2_5_vl's time, height, width).
inline const char* stream_name(const FamilyTrace& f, int s) {
    static constexpr const char* kTimeHeightWidth[] = {"t", "h", "w"}, *kRowColumn[] = {"row", "col"};
    return f.rope_positions.size() == 3 ? kTimeHeightWidth[s] : f.rope_positions.size() == 2 ? kRowColumn[s] : "p";
}

// The pipeline of one head (plus concat and ·W_o), in order. Self / masked: X → Q, K, V;
// cross: Q from the target X, K and V from the source X_kv. "+ M" only when a key is masked.
// Today's families (Trace::family) add, where they have them:
//   Q → RMSNorm(Q) → p·θ_i (the angles) → Q′ = RoPE(Q), and K → RMSNorm(K) → K′ = RoPE(K)
//   (K's of the K/V head that serves this query head); ÷ √query_pre_attn_scalar (gemma) for
//   ÷ √d_k; cap·tanh(s/cap) after the scale.
inline std::vector<Step> pipeline_steps(const Trace& tr, int head, bool positional) {
    const MultiHeadTrace& mh = tr.attention;
    head = std::clamp(head, 0, static_cast<int>(mh.heads.size()) - 1);
    const HeadTrace& h = mh.heads.at(head);
    const FamilyTrace& f = tr.family;
    const size_t g = static_cast<size_t>(f.kv_head_of(head));
    const bool cross = tr.kind == AttentionKind::Cross;
    const std::string pe = positional ? " + PE" : "";
    const std::string x_kv = cross ? "X_kv" : "X";
    std::vector<Step> steps;
    // A layer's kept Q and K (figure.hpp Detail::Queries: no X, V or outputs): the pipeline from
    // Q and K as the scores read them, after any norm and rotation; the steps without values go.
    const bool kept = mh.x_q.size() == 0;
    // Rows are tokens: T_q (all of them, also in a long trace) or T_k.
    auto add = [&](StepKind kind, std::string label, const char* row_name, const char* col_name,
                   std::string formula, Matrix values, bool probabilities = false) {
        if (kept && values.size() == 0) return;
        const Eigen::Index rows = std::string_view(row_name) == "T_q" ? tr.T_q() : values.rows();
        std::string shape = shape_text(row_name, col_name, rows, values.cols());
        steps.push_back({kind, std::move(label), std::move(shape), std::move(formula), std::move(values),
                         probabilities, rows});
    };
    if (f.patch_pixels.size() > 0) {  // a vision model's first layer: X from the pixels
        add(StepKind::Patches, "P", "T", "pixels", "", f.patch_pixels);
        add(StepKind::Embedded, "E = P·W_e + b", "T", "d_model", "p·w + b", f.patch_embedded);
    }
    add(StepKind::Input, "X" + pe, "T_q", "d_model", "", mh.x_q);
    if (cross) add(StepKind::InputKv, "X_kv" + pe, "T_k", "d_model", "", mh.x_kv);
    // Q and K as projected, then normed, then turned: the scores read the last of them.
    const bool norm = f.qk_norm(), rope = f.rotary();
    const size_t hq = static_cast<size_t>(head);
    const std::string half = std::to_string(f.rope_dim / 2);
    add(StepKind::Q, kept ? "Q" : "Q = X·W_q", "T_q", "d_k", "", norm ? f.q_projected[hq] : rope ? f.q_unrotated[hq] : h.q);
    if (norm) add(StepKind::QNormed, "RMSNorm(Q)", "T_q", "d_k", "q / rms(q) · g", rope ? f.q_normed[hq] : h.q);
    if (rope) {
        const std::string theta = format_general(f.rope_theta);
        std::string formula =
            f.rope_scaling.empty() ? "θ_i = " + theta + "^(−2i/" + std::to_string(f.rope_dim) + ")" : "θ_i: " + theta + ", " + f.rope_scaling;
        if (!f.rope_positions.empty()) {  // M-RoPE: "; p by pairs: t 1–2, h 3, w 4"
            formula += "; p by pairs:";
            for (size_t i = 0; i < f.rope_streams.size();) {
                size_t end = i;
                while (end < f.rope_streams.size() && f.rope_streams[end] == f.rope_streams[i]) ++end;
                formula += (i ? ", " : " ") + std::string(stream_name(f, f.rope_streams[i])) + " " + std::to_string(i + 1) +
                           (end - i > 1 ? "–" + std::to_string(end) : "");
                i = end;
            }
        }
        add(StepKind::Angles, "p·θ_i", "T", "d_rot/2", formula, f.rope_angle);
        add(StepKind::QRotated, "Q′ = RoPE(Q)", "T_q", "d_k", "R(p·θ_i)·(q_i, q_i+" + half + ")", h.q);
    }
    const MatrixRef keys = head_keys(tr, head);  // as the scores read them (a block's, in a long trace)
    add(StepKind::K, kept ? "K" : "K = " + x_kv + "·W_k", "T_k", "d_k", "", norm ? MatrixRef(f.k_projected[g]) : rope ? MatrixRef(f.k_unrotated[g]) : keys);
    if (norm) add(StepKind::KNormed, "RMSNorm(K)", "T_k", "d_k", "k / rms(k) · g", rope ? MatrixRef(f.k_normed[g]) : keys);
    if (rope) add(StepKind::KRotated, "K′ = RoPE(K)", "T_k", "d_k", "R(p·θ_i)·(k_i, k_i+" + half + ")", keys);
    add(StepKind::V, "V = " + x_kv + "·W_v", "T_k", "d_k", "", h.v);
    add(StepKind::Scores, "QKᵀ", "T_q", "T_k", "q·k", h.scores);
    // ÷ √d_k before the mask: the scores times the factor everywhere. Gemma's factor is
    // query_pre_attn_scalar^−½ (a Divisor of its square root).
    const float factor = tr.scale.factor(tr.d_k);
    std::string scale_label = tr.scale.kind == ScaleKind::InvSqrtDk ? "÷ √d_k"
                              : tr.scale.kind == ScaleKind::None    ? "÷ 1"
                                                                    : "÷ τ = " + format_number(tr.scale.divisor, 2);
    std::string scale_formula = "× " + format_number(factor);
    if (f.query_pre_attn_scalar > 0) {
        scale_label = "÷ √query_pre_attn_scalar";
        scale_formula = "× " + format_general(f.query_pre_attn_scalar, 4) + "^(−½) = " + format_number(factor);
    }
    add(StepKind::Scaled, scale_label, "T_q", "T_k", scale_formula, h.scores * factor);
    if (f.softcap > 0) add(StepKind::Capped, "cap·tanh(s/cap)", "T_q", "T_k", "cap = " + format_general(f.softcap, 4), capped_scores(tr, h));
    if (tr.allowed.any_masked()) add(StepKind::Masked, "+ M", "T_q", "T_k", "M = 0 / −∞", h.scaled);
    // gpt-oss: the head's sink in the denominator; a row then sums to 1 less the sink's weight
    if (!f.sinks.empty()) add(StepKind::Weights, "softmax (+ sink)", "T_q", "T_k", "Σ = 1 − sink", h.weights, true);
    else add(StepKind::Weights, "softmax", "T_q", "T_k", "Σ = 1", h.weights, true);
    add(StepKind::Output, "· V", "T_q", "d_k", "weights·V", h.output);
    add(StepKind::Concat, "concat", "T_q", "d_model", tr.heads > 1 ? "[head₁ … head_h]" : "head₁", mh.concat);
    add(StepKind::Final, "· W_o", "T_q", "d_model", "concat·W_o + b_o", mh.output);
    return steps;
}

// [SECTION] Where a number comes from ---------------------------------------------------------

// Σ a_i·b_i written out, at most max_terms terms then "…": "1.0000×1.0000 + 3.0000×1.0000 + …".
inline std::string sum_of_products(const RowVector& a, const RowVector& b, int max_terms = 4) {
    std::string s;
    const Eigen::Index n = a.size();
    for (Eigen::Index i = 0; i < n; ++i) {
        if (i == max_terms && n > max_terms + 1) {
            s += " + \xe2\x80\xa6";
            i = n - 2;  // the last term stays visible
            continue;
        }
        if (i) s += " + ";
        s += format_number(a(i)) + "\xc3\x97" + format_number(b(i));
    }
    return s;
}

// Score (q, k) of a head: q·k = q₁k₁ + … = value.
inline std::string explain_score(const Trace& tr, int head, int q, int k, int max_terms = 4) {
    const HeadTrace& h = tr.attention.heads.at(static_cast<size_t>(head));
    return "q\xc2\xb7k = " + sum_of_products(h.q.row(q), head_keys(tr, head).row(k), max_terms) + " = " + format_number(h.scores(q, k));
}

// Weight (q, k): e^s / Σ e^s over the allowed keys of row q (and the head's sink, gpt-oss: a
// logit of no key, its term last: "+ e^sink").
inline std::string explain_weight(const HeadTrace& h, const KeyMask& allowed, int q, int k, int max_terms = 4,
                                  float sink = -INFINITY) {
    if (!allowed(q, k)) return "e^(\xe2\x88\x92\xe2\x88\x9e) = 0";  // masked
    // Shifted by the row max as the kernel does; the ratio is the same and the numbers stay finite.
    float row_max = sink;
    for (Eigen::Index j = 0; j < h.scaled.cols(); ++j)
        if (allowed(q, j)) row_max = std::max(row_max, h.scaled(q, j));
    const bool shift = row_max > 20.0f;
    auto e = [&](float s) { return std::exp(static_cast<double>(s - (shift ? row_max : 0.0f))); };
    std::string exp_name = shift ? "e^(s\xe2\x88\x92max)" : "e^s";
    double sum = 0.0;
    std::string terms;
    int shown = 0, kept = 0;
    for (Eigen::Index j = 0; j < h.scaled.cols(); ++j) {
        if (!allowed(q, j)) continue;
        sum += e(h.scaled(q, j));
        ++kept;
        if (shown < max_terms) {
            if (shown) terms += " + ";
            terms += "e^" + format_number(h.scaled(q, j) - (shift ? row_max : 0.0f));
            ++shown;
        }
    }
    if (kept > shown) terms += " + \xe2\x80\xa6";
    if (sink > -INFINITY) {
        sum += e(sink);
        terms += " + e^" + format_number(sink - (shift ? row_max : 0.0f)) + " (sink)";
    }
    return exp_name + " / \xce\xa3 " + exp_name + " = e^" + format_number(h.scaled(q, k) - (shift ? row_max : 0.0f)) + " / (" + terms +
           ") = " + format_number(static_cast<float>(e(h.scaled(q, k)))) + " / " + format_number(static_cast<float>(sum)) + " = " +
           format_number(h.weights(q, k));
}

// Output (q, c): Σ_k w_qk·v_kc over the row of weights and the column of V.
inline std::string explain_output(const HeadTrace& h, int q, int c, int max_terms = 4) {
    return "\xce\xa3 w\xc2\xb7v = " + sum_of_products(h.weights.row(q), h.v.col(c).transpose(), max_terms) + " = " +
           format_number(h.output(q, c));
}

// A factor written out in a product: a negative number in parentheses, "(-0.2000)".
inline std::string factor_text(float x) {
    const std::string s = format_number(x);
    return s[0] == '-' ? "(" + s + ")" : s;
}

// The angle of pair i (its dimensions counted from 1, as the columns) at token t's position p = t
// (from 0, as RoPE's formula counts; the token's number from 1, as every row and tooltip counts, beside it),
// and its cos and sin as the rotation uses them (times the attention factor a of yarn and
// longrope). Lines short enough for a phone's tooltip:
//   pair (3, 11), p = 3 (token 4)
//   p·θ_i = 3 × 0.0316228 = 0.0948683
//   cos = 0.9955, sin = 0.0948        or   cos = a·cos(p·θ_i) = …
//                                          sin = a·sin(p·θ_i) = …, a = 1.19
// M-RoPE (FamilyTrace::rope_positions): p is the token's position in its pair's stream, and the
// token's three are named:
//   pair (3, 7), p = h = 4 (token 9: t 1, h 4, w 2)
inline std::string angle_lines(const FamilyTrace& f, int t, int i) {
    const int half = f.rope_dim / 2;
    const double theta_i = f.rope_inv_freq.at(static_cast<size_t>(i));
    const size_t row = static_cast<size_t>(t);
    std::string where = "p = " + std::to_string(t) + " (token " + std::to_string(t + 1) + ")";
    int p = t;
    if (!f.rope_positions.empty()) {
        const int stream = f.rope_streams.at(static_cast<size_t>(i));
        p = f.rope_positions.at(static_cast<size_t>(stream)).at(row);
        where = "p = " + std::string(stream_name(f, stream)) + " = " + std::to_string(p) + " (token " + std::to_string(t + 1) + ":";
        for (size_t s = 0; s < f.rope_positions.size(); ++s)
            where += (s ? ", " : " ") + std::string(stream_name(f, static_cast<int>(s))) + " " + std::to_string(f.rope_positions[s].at(row));
        where += ")";
    }
    std::string s = "pair (" + std::to_string(i + 1) + ", " + std::to_string(i + half + 1) + "), " + where + "\np·θ_i = " + std::to_string(p) +
                    " × " + format_general(theta_i) + " = " + format_general(p * theta_i) + "\n";
    const std::string cos = format_number(f.rope_cos(t, i)), sin = format_number(f.rope_sin(t, i));
    const double a = f.rope_attention_factor;
    if (std::fabs(a - 1.0) > 1e-9)
        return s + "cos = a·cos(p·θ_i) = " + cos + "\nsin = a·sin(p·θ_i) = " + sin + ", a = " + format_general(a, 5);
    return s + "cos = " + cos + ", sin = " + sin;
}

// Angle (p, i) of the table p·θ_i: θ_i from the base (without rope scaling), then angle_lines:
//   θ_i = 1e+06^(−2·2/16) = 0.0316228
//   pair (3, 11), p = 3 (token 4)
//   p·θ_i = 3 × 0.0316228 = 0.0948683
//   cos = 0.9955, sin = 0.0948
inline std::string explain_angle(const FamilyTrace& f, int p, int i) {
    std::string s;
    if (f.rope_scaling.empty())
        s = "θ_i = " + format_general(f.rope_theta) + "^(−2·" + std::to_string(i) + "/" + std::to_string(f.rope_dim) + ") = " +
            format_general(f.rope_inv_freq.at(static_cast<size_t>(i))) + "\n";
    return s + angle_lines(f, p, i);
}

// A rotated number (p, c) of Q′ or K′ (`name`: "q" or "k"; `before`, `after`: the head before
// and after the rotation): its pair's angle, cos and sin, and the turn written out:
//   pair (3, 11), p = 2 (token 3)
//   p·θ_i = 2 × 0.1 = 0.2
//   cos = 0.9801, sin = 0.1987
//   q′ = q·cos − q_pair·sin
//      = 0.5000×0.9801 − (-0.2000)×0.1987
//      = 0.5298
// (the second of a pair: q′ = q·cos + q_pair·sin). Past rope_dim: "q′ = q = 0.1234".
inline std::string explain_rotation(const FamilyTrace& f, const Matrix& before, const Matrix& after, int p, int c,
                                    const std::string& name) {
    const std::string result = format_number(after(p, c));
    if (c >= f.rope_dim) return name + "′ = " + name + " = " + result;
    const int half = f.rope_dim / 2, i = c % half, pair = c < half ? c + half : c - half;
    const std::string s = angle_lines(f, p, i);
    const std::string cos = factor_text(f.rope_cos(p, i)), sin = factor_text(f.rope_sin(p, i));
    const std::string x = factor_text(before(p, c)), x_pair = factor_text(before(p, pair));
    const std::string sign = c < half ? " − " : " + ";
    return s + "\n" + name + "′ = " + name + "·cos" + sign + name + "_pair·sin\n   = " + x + "×" + cos + sign + x_pair + "×" + sin +
           "\n   = " + result;  // short lines: a phone's tooltip holds them
}

// A number (r, c) of RMSNorm(Q) or RMSNorm(K) (`name`: "q" or "k"): the row's root mean square
// and the quotient times the gain, with the numbers:
//   rms(q) = √(Σq²/16 + ε)
//      = √(0.4321 + 1e-06) = 0.6573
//   q / rms(q) · g
//      = 0.5000 / 0.6573 × 1.0500 = 0.7987
inline std::string explain_norm(const Matrix& projected, const Matrix& normed, const RowVector& gain, float eps, int r, int c,
                                const std::string& name) {
    double squares = 0;
    for (Eigen::Index j = 0; j < projected.cols(); ++j) squares += static_cast<double>(projected(r, j)) * projected(r, j);
    const double mean = squares / static_cast<double>(projected.cols());
    const float rms = static_cast<float>(std::sqrt(mean + eps));
    return "rms(" + name + ") = √(Σ" + name + "²/" + std::to_string(projected.cols()) + " + ε)\n   = √(" +
           format_number(static_cast<float>(mean)) + " + " + format_general(eps, 3) + ") = " + format_number(rms) + "\n" + name +
           " / rms(" + name + ") · g\n   = " + format_number(projected(r, c)) + " / " + format_number(rms) + " × " +
           factor_text(gain(c)) + " = " + format_number(normed(r, c));
}

// A number (t, c) of E = P·W_e + b: token t's pixels times column c of W_e, plus b_c (the
// patch embedding, one product per patch):
//   e = p·w + b = 0.2510×0.0312 + … + (-0.1020)×0.0044 + 0.0100
//     = 0.1234
// The [CLS] and the registers have no pixels: their row is the learned vector.
inline std::string explain_embedding(const FamilyTrace& f, int t, int c, int max_terms = 4) {
    const std::string result = format_number(f.patch_embedded(t, c));
    if (t < f.patch_first) return "e = " + result;
    return "e = p\xc2\xb7w + b = " + sum_of_products(f.patch_pixels.row(t), f.patch_weight.col(c).transpose(), max_terms) + " + " +
           factor_text(f.patch_bias(c)) + "\n  = " + result;
}

// A soft-capped score, from the scaled score s:
//   cap·tanh(s/cap) = 1.5 × tanh(2.1000/1.5)
//      = 1.5 × 0.8854 = 1.3281
inline std::string explain_softcap(float cap, float scaled, float capped) {
    const std::string c = format_general(cap, 4);
    return "cap·tanh(s/cap) = " + c + " × tanh(" + format_number(scaled) + "/" + c + ")\n   = " + c + " × " +
           format_number(std::tanh(scaled / cap)) + " = " + format_number(capped);
}

}  // namespace attn
