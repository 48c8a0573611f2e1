// describe.hpp: the figure in words and as a table, for readers who cannot see the canvas. The
// page keeps an accessible twin of the figure (web/ui/access.cpp): a live summary a screen
// reader speaks, and the map as an HTML table. One head's weights, or the heads' mean; what is
// selected is said first.
#pragma once

#include "scene.hpp"

#include <string>
#include <vector>

namespace attn {

// The words, printf formats in the UI's language (web/state/strings.cpp has the Chinese).
struct DescribeWords {
    std::string head_of = "Head %d of %d.";         // head, heads
    std::string mean_of = "The mean of %d heads.";  // heads
    std::string attends = "\xe2\x80\x9c%s\xe2\x80\x9d attends most to \xe2\x80\x9c%s\xe2\x80\x9d (%.2f)";   // query, key, weight
    std::string then = ", then \xe2\x80\x9c%s\xe2\x80\x9d (%.2f)";                                        // token, weight
    std::string attended = "\xe2\x80\x9c%s\xe2\x80\x9d is attended to most by \xe2\x80\x9c%s\xe2\x80\x9d (%.2f)";  // key, query, weight
    std::string strongest = "The strongest weight: \xe2\x80\x9c%s\xe2\x80\x9d to \xe2\x80\x9c%s\xe2\x80\x9d (%.2f).";
    std::string cell = "\xe2\x80\x9c%s\xe2\x80\x9d to \xe2\x80\x9c%s\xe2\x80\x9d: %.2f.";
    std::string cell_masked = "\xe2\x80\x9c%s\xe2\x80\x9d to \xe2\x80\x9c%s\xe2\x80\x9d: masked.";
    std::string caption = "%s attention weights, %s: queries as rows, keys as columns";  // kind, "head 1 of 3"
    std::string truncated = " (the first %d of %d queries and %d of %d keys)";
    std::string kind = "self";          // the kind's name, for the caption
    std::string head = "head %d of %d"; // for the caption
    std::string mean = "mean of %d heads";
    std::string sep = " ";              // between the summary's sentences ("" in Chinese)
};

struct DescribeInput {
    const Trace* trace = nullptr;
    int head = 0;                       // −1: the mean of the heads
    int query = -1, key = -1;           // the selection: a query, a key, or both (a cell)
    int max_rows = 64, max_cols = 64;   // the table's size at most
    // false: no table (the caller kept the last one: only the selection moved), and so without a
    // selection the summary names the map alone (the caller has the table's strongest weight).
    bool table = true;
    DescribeWords words;
};

struct FigureDescription {
    std::string summary;                // what a screen reader says when the figure changes
    std::string caption;                // the table's
    std::vector<std::string> rows, cols;  // the table's token labels: queries (rows), keys (columns)
    std::vector<float> cells;           // rows × cols, row-major; NaN where masked
};

// Reads the rows it needs once (HeadRows): a selected key's column only while the map has at
// most kDescribeColumnCells cells (a long trace computes rows again).
inline constexpr long long kDescribeColumnCells = 4 << 20;
FigureDescription describe_figure(const DescribeInput& in);

}  // namespace attn
