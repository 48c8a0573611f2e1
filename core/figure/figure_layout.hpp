// figure_layout.hpp: what the lines and heatmap layouts (lines_layout.hpp, heatmap_layout.hpp)
// are made of, with no GL and no ImGui: how text is measured, the box a figure fills, and the
// plain items a layout lists for the screen (web/ui draws them with ImGui) and for the SVG
// writer (core/svg writes them as elements). Both read the same numbers, so the SVG sits where
// the screen draws.
//
// Coordinates are the UI's display units (CSS pixels times the UI scale `s`), y down, as ImGui's.
//
// [SECTION] Text measuring
// [SECTION] Boxes and items
// [SECTION] The frame of a figure drawn alone (PNG, SVG)
#pragma once

#include "palette.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] Text measuring -------------------------------------------------------------------

// The fonts a figure uses: the views' ctx.fonts.title / body / small (web/ui/fonts.hpp).
enum class FontRole { Title, Body, Small };

// Widths of text as the screen will draw it. On screen: ImGui's baked fonts (web/ui); in the
// tests a deterministic fake. A layout measures only through this.
struct TextMeasure {
    virtual ~TextMeasure() = default;
    // Advance width of UTF-8 text in the role's font at its own size (no kerning, as ImGui).
    virtual float width(std::string_view text, FontRole role) const = 0;
    // The role's size: the height of a line of text (ImGui's FontSize).
    virtual float size(FontRole role) const = 0;
    // The baseline's distance below the top of a line (ImGui's ImFont::Ascent, whole pixels).
    virtual float ascent(FontRole role) const { return static_cast<float>(static_cast<int>(size(role) * 0.8f + 0.5f)); }
    // The CSS font-size that draws the same glyphs: ImGui scales a font so that its ascent −
    // descent is the size, CSS so that its em is (DejaVu Sans: em = 2048 / 2384 of the size).
    virtual float em(FontRole role) const { return size(role) * (2048.0f / 2384.0f); }
    // A code point the role's font draws from a fallback font merged into it (web/ui/fonts.cpp:
    // CJK from Droid Sans Fallback, baked a little larger and lower): that font's CSS font-size
    // and how far below the baseline its glyphs sit. false: the role's own font draws it.
    // The height of text wrapped at `wrap_width` (ImGui's word wrap on screen). The default
    // breaks at spaces by width().
    virtual float wrapped_height(std::string_view text, FontRole role, float wrap_width) const;
    // The lines of text wrapped at `wrap_width` as wrapped_height's default counts them (the SVG
    // writes one <text> per line: SVG 1.1 does not wrap).
    std::vector<std::string_view> wrapped_lines(std::string_view text, FontRole role, float wrap_width) const;
    struct Fallback {
        float em = 0.0f, dy = 0.0f;
    };
    virtual bool fallback(char32_t /*code_point*/, FontRole /*role*/, Fallback& /*out*/) const { return false; }
};

// A printf format (the words of a layout, in the UI's language) filled in.
template <typename... Values>
std::string printf_string(const std::string& format, Values... values) {
    const int n = std::snprintf(nullptr, 0, format.c_str(), values...);
    if (n <= 0) return {};
    std::string out(static_cast<size_t>(n), '\0');
    std::snprintf(out.data(), out.size() + 1, format.c_str(), values...);
    return out;
}

// The label of a token as the figures show it, wherever a token is drawn or named: ∅ for an
// empty one, whitespace made visible (a newline as ↵, as display_token writes it; a tab as ⇥; a
// carriage return left out), and a token of spaces only as as many ·. Spaces beside other
// characters stay (" cat": a word's leading space).
inline std::string token_text(const std::string& token) {
    if (token.empty()) return "\xe2\x88\x85";
    const bool spaces = token.find_first_not_of(' ') == std::string::npos;
    std::string out;
    for (char c : token) {
        if (c == '\n') out += "\xe2\x86\xb5";
        else if (c == '\t') out += "\xe2\x87\xa5";
        else if (c == '\r') continue;  // "\r\n" reads as one newline
        else if (c == ' ' && spaces) out += "\xc2\xb7";
        else out += c;
    }
    return out.empty() ? "\xe2\x86\xb5" : out;  // a lone "\r"
}

// [SECTION] Boxes and items ------------------------------------------------------------------

// [x0, x1) × [y0, y1).
struct Box {
    float x0 = 0.0f, y0 = 0.0f, x1 = 0.0f, y1 = 0.0f;
    float w() const { return x1 - x0; }
    float h() const { return y1 - y0; }
    bool contains(float x, float y) const { return x >= x0 && x < x1 && y >= y0 && y < y1; }
};

// What an item is, for the SVG's classes and the tests; the screen ignores it.
enum class ItemRole {
    Other,
    Title,                                      // the figure's title (a figure drawn alone)
    Heading, Note,                              // lines: column headings, the note above the lines
    TokenQuery, TokenKey, TokenLabel,           // lines: token boxes and their labels
    Rail, Strip, Tick, RailLabel,               // lines, compact: the rails, heat strips, ticks, labels
    Number, NumberMasked,                       // lines: weights beside tokens; heatmap: values in cells
    HeadSwatch, HeadLabel,                      // lines: the heads legend (PNG, SVG)
    Caption, RowLabel, ColLabel, LabelMark,     // heatmap: axis captions, token labels, a label's highlight
    Selection, Hover,                           // heatmap: outlines of the selected row / column, hovered cell
    LegendTitle, LegendBar, LegendTick, LegendLabel, MaskedSwatch, MaskedLabel,
    WindowSwatch, WindowLabel,                  // heatmap: the sliding window's mask in the legend
    SinkSwatch, SinkLabel,                      // heatmap: the first key left out (the sink option)
    GroupFrame,                                 // model view: the query heads that share K and V
    HeadTag,                                    // model view: what a head does (its score), on its thumbnail
    Knockout,                                   // model view: the veil and cross of a knocked-out head; picture: a hidden token's stripes
    PatchCrop,                                  // heatmap, lines: a vision model's patch as its piece of the picture
};

// One thing to draw, in a layout's list order (later items over earlier ones).
//   Rect:      box, filled with `fill` (alpha 0: none), `stroke` of `stroke_width` inside-centred
//              on the edge as ImGui's AddRect (0: none), corner `rounding`.
//   Text:      `text` in `font` whose line's top-left ImGui puts at (x, y) (it floors both);
//              `align` says which point the SVG anchors (the left, the end or the middle:
//              anchor_x = x + 0, w, or w / 2); `upwards`: turned −90° about (x, y), reading up.
//   Segment:   (x, y) → (x2, y2), `stroke` of `stroke_width`.
//   Hatch:     box filled with the masked cells' stripes (palette hatch_a / hatch_b).
//   WindowHatch: box filled with the stripes of cells outside a sliding window (window_a / window_b,
//              the other diagonal).
//   Colormap:  box, the colormap as a vertical bar, t = 1 at the top.
//   Lines, Grid: where the GPU's lines or heatmap cells go in the order (the layout says where).
//   Picture:   box, showing the part (x, y) … (x2, y2) of the figure's picture, as fractions of its
//              width and height (PatchCrops); `index` the token.
// `clip`: index into the layout's clip boxes, −1 for none.
struct Item {
    enum Kind { Rect, Text, Segment, Hatch, WindowHatch, Colormap, Lines, Grid, Picture } kind = Rect;
    ItemRole role = ItemRole::Other;
    int index = -1;                 // the token, head or tick it belongs to (−1: none)
    Box box;
    float x = 0.0f, y = 0.0f, x2 = 0.0f, y2 = 0.0f;
    Color fill{0, 0, 0, 0}, stroke{0, 0, 0, 0};
    float stroke_width = 0.0f, rounding = 0.0f;
    FontRole font = FontRole::Body;
    enum Align { Left, Right, Center } align = Left;
    bool upwards = false;
    float text_w = 0.0f;            // the measured width of `text`
    float wrap = 0.0f;              // Text: wrapped at this width (0: one line; the SVG does not wrap)
    std::string text;
    int clip = -1;
};

// Builders that keep the layouts' code short.
inline Item rect_item(ItemRole role, Box box, Color fill, float rounding = 0.0f, int index = -1) {
    Item it;
    it.kind = Item::Rect, it.role = role, it.box = box, it.fill = fill, it.rounding = rounding, it.index = index;
    return it;
}
inline Item outline_item(ItemRole role, Box box, Color stroke, float width, float rounding = 0.0f, int index = -1) {
    Item it;
    it.kind = Item::Rect, it.role = role, it.box = box, it.stroke = stroke, it.stroke_width = width, it.rounding = rounding;
    it.index = index;
    return it;
}
inline Item text_item(ItemRole role, float x, float y, FontRole font, Color color, std::string text, float text_w,
                      Item::Align align = Item::Left, int index = -1) {
    Item it;
    it.kind = Item::Text, it.role = role, it.x = x, it.y = y, it.font = font, it.fill = color, it.text = std::move(text);
    it.text_w = text_w, it.align = align, it.index = index;
    return it;
}
inline Item segment_item(ItemRole role, float x, float y, float x2, float y2, Color color, float width, int index = -1) {
    Item it;
    it.kind = Item::Segment, it.role = role, it.x = x, it.y = y, it.x2 = x2, it.y2 = y2, it.stroke = color;
    it.stroke_width = width, it.index = index;
    return it;
}

// A vision model's patches as the pieces of its picture they are (labels of the heatmap's rows
// and columns): token first + r·cols + c is patch (r, c), the pixels [c·patch, (c + 1)·patch) ×
// [r·patch, (r + 1)·patch) of the picture as the model saw it (width × height). rows = 0: none.
// A vision-language model's image tokens instead: `pieces`, token → its part of the picture as
// fractions (x0, y0, x1, y1) of width and height (a tile's cell; a global view's cell, the same
// part of the whole).
struct PatchCrops {
    int first = 0, rows = 0, cols = 0, patch = 0, width = 0, height = 0;
    std::map<int, std::array<float, 4>> pieces;
    bool any() const { return width > 0 && height > 0 && (!pieces.empty() || (rows > 0 && cols > 0 && patch > 0)); }
    bool has(int token) const {
        if (!any()) return false;
        return pieces.empty() ? token >= first && token - first < rows * cols : pieces.contains(token);
    }
    // Token `token`'s piece as an Item::Picture at `box`, or false: the token is not a patch.
    bool item(int token, Box box, Item& out) const {
        if (!has(token)) return false;
        out = Item();
        out.kind = Item::Picture, out.role = ItemRole::PatchCrop, out.box = box, out.index = token;
        if (!pieces.empty()) {
            const std::array<float, 4>& f = pieces.at(token);
            out.x = f[0], out.y = f[1], out.x2 = f[2], out.y2 = f[3];
            return true;
        }
        const int i = token - first;
        const float r = static_cast<float>(i / cols), c = static_cast<float>(i % cols), p = static_cast<float>(patch);
        const float w = static_cast<float>(width), h = static_cast<float>(height);
        out.x = c * p / w, out.y = r * p / h, out.x2 = (c + 1.0f) * p / w, out.y2 = (r + 1.0f) * p / h;
        return true;
    }
};

// [SECTION] The frame of a figure drawn alone (PNG, SVG) ---------------------------------------

// A figure drawn alone (`attnviz render`, the PNG export) is a window of width × height with
// the figure's title on top and the figure's box below it: the window's padding floor(12 s)
// around, floor(6 s) between the title line and the box (ImGui's style, web/ui/theme.cpp,
// scaled by ImGuiStyle::ScaleAllSizes, which floors). web/ui/panels.cpp draw_figure lays it out
// with ImGui; the SVG writer with this, and the desktop test checks that they agree.
struct FigureFrame {
    float width = 0.0f, height = 0.0f;
    float title_x = 0.0f, title_y = 0.0f;  // top-left of the title line (title font)
    Box box;                               // the view's box
};
FigureFrame figure_frame(float width, float height, float scale, const TextMeasure& measure);

}  // namespace attn
