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

enum class StepKind { Input, InputKv, Q, K, V, Scores, Scaled, Masked, Weights, Output, Concat, Final };

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

// The pipeline of one head (plus concat and ·W_o), in order. Self / masked: X → Q, K, V;
// cross: Q from the target X, K and V from the source X_kv. "+ M" only when a key is masked.
inline std::vector<Step> pipeline_steps(const Trace& tr, int head, bool positional) {
    const MultiHeadTrace& mh = tr.attention;
    const HeadTrace& h = mh.heads.at(std::clamp(head, 0, static_cast<int>(mh.heads.size()) - 1));
    const bool cross = tr.kind == AttentionKind::Cross;
    const std::string pe = positional ? " + PE" : "";
    const std::string x_kv = cross ? "X_kv" : "X";
    std::vector<Step> steps;
    // Rows are tokens: T_q (all of them, also in a long trace) or T_k.
    auto add = [&](StepKind kind, std::string label, const char* row_name, const char* col_name,
                   std::string formula, Matrix values, bool probabilities = false) {
        const Eigen::Index rows = std::string_view(row_name) == "T_q" ? tr.T_q() : values.rows();
        std::string shape = shape_text(row_name, col_name, rows, values.cols());
        steps.push_back({kind, std::move(label), std::move(shape), std::move(formula), std::move(values),
                         probabilities, rows});
    };
    add(StepKind::Input, "X" + pe, "T_q", "d_model", "", mh.x_q);
    if (cross) add(StepKind::InputKv, "X_kv" + pe, "T_k", "d_model", "", mh.x_kv);
    add(StepKind::Q, "Q = X·W_q", "T_q", "d_k", "", h.q);
    add(StepKind::K, "K = " + x_kv + "·W_k", "T_k", "d_k", "", h.k);
    add(StepKind::V, "V = " + x_kv + "·W_v", "T_k", "d_k", "", h.v);
    add(StepKind::Scores, "QKᵀ", "T_q", "T_k", "q·k", h.scores);
    // ÷ √d_k before the mask: the scores times the factor everywhere.
    const float factor = tr.scale.factor(tr.d_k);
    const std::string scale_label = tr.scale.kind == ScaleKind::InvSqrtDk ? "÷ √d_k"
                                    : tr.scale.kind == ScaleKind::None    ? "÷ 1"
                                                                          : "÷ τ = " + format_number(tr.scale.divisor, 2);
    add(StepKind::Scaled, scale_label, "T_q", "T_k", "× " + format_number(factor), h.scores * factor);
    bool any_masked = false;
    for (Eigen::Index i = 0; i < tr.allowed.size(); ++i) any_masked |= tr.allowed.data()[i] == 0;
    if (any_masked) add(StepKind::Masked, "+ M", "T_q", "T_k", "M = 0 / −∞", h.scaled);
    add(StepKind::Weights, "softmax", "T_q", "T_k", "Σ = 1", h.weights, true);
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

// Score (q, k): q·k = q₁k₁ + … = value.
inline std::string explain_score(const HeadTrace& h, int q, int k, int max_terms = 4) {
    return "q\xc2\xb7k = " + sum_of_products(h.q.row(q), h.k.row(k), max_terms) + " = " + format_number(h.scores(q, k));
}

// Weight (q, k): e^s / Σ e^s over the allowed keys of row q.
inline std::string explain_weight(const HeadTrace& h, const MaskMatrix& allowed, int q, int k, int max_terms = 4) {
    if (!allowed(q, k)) return "e^(\xe2\x88\x92\xe2\x88\x9e) = 0";  // masked
    // Shifted by the row max as the kernel does; the ratio is the same and the numbers stay finite.
    float row_max = -INFINITY;
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
    return exp_name + " / \xce\xa3 " + exp_name + " = e^" + format_number(h.scaled(q, k) - (shift ? row_max : 0.0f)) + " / (" + terms +
           ") = " + format_number(static_cast<float>(e(h.scaled(q, k)))) + " / " + format_number(static_cast<float>(sum)) + " = " +
           format_number(h.weights(q, k));
}

// Output (q, c): Σ_k w_qk·v_kc over the row of weights and the column of V.
inline std::string explain_output(const HeadTrace& h, int q, int c, int max_terms = 4) {
    return "\xce\xa3 w\xc2\xb7v = " + sum_of_products(h.weights.row(q), h.v.col(c).transpose(), max_terms) + " = " +
           format_number(h.output(q, c));
}

}  // namespace attn
