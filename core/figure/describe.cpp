// describe.cpp: see describe.hpp.
#include "describe.hpp"

#include "figure_layout.hpp"  // token_text

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attn {
namespace {

// One query's weights in the shown map (a head, or the heads' mean), NaN where masked.
class MapRows {
public:
    // block_rows: the rows a long trace computes again at a time (HeadRows): the table's 64, or
    // 1 for a selected query alone.
    MapRows(const Trace& trace, int head, int block_rows) : trace_(trace) {
        const int first = head >= 0 ? head : 0, last = head >= 0 ? head + 1 : trace.heads;
        for (int h = first; h < last; ++h) heads_.emplace_back(trace, h, block_rows);
    }
    std::vector<float> row(int q) {
        std::vector<float> out(static_cast<size_t>(trace_.T_k()), 0.0f);
        for (HeadRows& r : heads_) {
            const float* w = r.weights(q);
            for (int k = 0; k < trace_.T_k(); ++k) out[static_cast<size_t>(k)] += w[k];
        }
        for (int k = 0; k < trace_.T_k(); ++k) {
            float& v = out[static_cast<size_t>(k)];
            v = trace_.allowed(q, k) ? v / static_cast<float>(heads_.size()) : std::numeric_limits<float>::quiet_NaN();
        }
        return out;
    }

private:
    const Trace& trace_;
    std::vector<HeadRows> heads_;
};

std::string label(const std::string& token) { return token_text(token); }

// "“a” attends most to “b” (0.91), then “c” (0.05), then “d” (0.02)": the three strongest
// weights of a row or column (none below 0.005), or "" when all are masked.
std::string strongest_three(const std::vector<float>& values, const std::vector<std::string>& others,
                            const std::string& self, const std::string& first, const std::string& then) {
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(values.size()); ++i)
        if (!std::isnan(values[static_cast<size_t>(i)])) order.push_back(i);
    if (order.empty()) return "";
    const size_t n = std::min<size_t>(3, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(n), order.end(), [&](int a, int b) {
        return values[static_cast<size_t>(a)] > values[static_cast<size_t>(b)] || (values[static_cast<size_t>(a)] == values[static_cast<size_t>(b)] && a < b);
    });
    std::string out = printf_string(first, self.c_str(), label(others[static_cast<size_t>(order[0])]).c_str(), values[static_cast<size_t>(order[0])]);
    for (size_t i = 1; i < n && values[static_cast<size_t>(order[i])] >= 0.005f; ++i)
        out += printf_string(then, label(others[static_cast<size_t>(order[i])]).c_str(), values[static_cast<size_t>(order[i])]);
    return out + ".";
}

}  // namespace

FigureDescription describe_figure(const DescribeInput& in) {
    FigureDescription d;
    const Trace& tr = *in.trace;
    const DescribeWords& w = in.words;
    const int T_q = tr.T_q(), T_k = tr.T_k();
    if (T_q == 0 || T_k == 0) return d;
    const int head = in.head >= 0 && in.head < tr.heads ? in.head : tr.heads > 1 ? -1 : 0;

    // The table (unless the caller keeps it): the first rows and columns, and its strongest weight.
    int best_q = -1, best_k = -1;
    float best = -1.0f;
    if (in.table) {
        MapRows map(tr, head, 64);
        const int rows = std::min(T_q, in.max_rows), cols = std::min(T_k, in.max_cols);
        const std::string which = head >= 0 ? printf_string(w.head, head + 1, tr.heads) : printf_string(w.mean, tr.heads);
        d.caption = printf_string(w.caption, w.kind.c_str(), which.c_str());
        if (rows < T_q || cols < T_k) d.caption += printf_string(w.truncated, rows, T_q, cols, T_k);
        for (int q = 0; q < rows; ++q) d.rows.push_back(label(tr.queries[static_cast<size_t>(q)]));
        for (int k = 0; k < cols; ++k) d.cols.push_back(label(tr.keys[static_cast<size_t>(k)]));
        d.cells.reserve(static_cast<size_t>(rows) * static_cast<size_t>(cols));
        for (int q = 0; q < rows; ++q) {
            const std::vector<float> r = map.row(q);
            for (int k = 0; k < cols; ++k) {
                const float v = r[static_cast<size_t>(k)];
                d.cells.push_back(v);
                if (!std::isnan(v) && v > best) best = v, best_q = q, best_k = k;
            }
        }
    }

    // The summary: which map, then the selection, or the strongest weight in the table.
    d.summary = head >= 0 ? printf_string(w.head_of, head + 1, tr.heads) : printf_string(w.mean_of, tr.heads);
    const bool q_ok = in.query >= 0 && in.query < T_q, k_ok = in.key >= 0 && in.key < T_k;
    std::string said;
    if (q_ok) {  // one row, computed again alone in a long trace
        const std::vector<float> row = MapRows(tr, head, 1).row(in.query);
        if (k_ok) {
            const float v = row[static_cast<size_t>(in.key)];
            const std::string a = label(tr.queries[static_cast<size_t>(in.query)]), b = label(tr.keys[static_cast<size_t>(in.key)]);
            said = std::isnan(v) ? printf_string(w.cell_masked, a.c_str(), b.c_str()) : printf_string(w.cell, a.c_str(), b.c_str(), v);
        }
        const std::string most = strongest_three(row, tr.keys, label(tr.queries[static_cast<size_t>(in.query)]), w.attends, w.then);
        said += (said.empty() ? "" : w.sep) + most;
    } else if (k_ok && static_cast<long long>(T_q) * T_k * std::max(tr.heads, 1) <= kDescribeColumnCells) {
        MapRows map(tr, head, 64);
        std::vector<float> column(static_cast<size_t>(T_q));
        for (int q = 0; q < T_q; ++q) column[static_cast<size_t>(q)] = map.row(q)[static_cast<size_t>(in.key)];
        said = strongest_three(column, tr.queries, label(tr.keys[static_cast<size_t>(in.key)]), w.attended, w.then);
    }
    if (said.empty() && best_q >= 0)
        said = printf_string(w.strongest, label(tr.queries[static_cast<size_t>(best_q)]).c_str(), label(tr.keys[static_cast<size_t>(best_k)]).c_str(), best);
    if (!said.empty()) d.summary += w.sep + said;
    return d;
}

}  // namespace attn
