// fonts.hpp: the font atlas, baked with just the glyphs the app shows.
//
// ImGui 1.86 has no dynamic atlas: glyphs must be baked before the frame that draws them. The
// app reports every string it will show (need()); between frames update() rebuilds the atlas
// and the font texture when new code points appeared, the UI scale changed or a font arrived.
// Latin, Greek, arrows and math come from DejaVu Sans; everything else (CJK above all) is merged
// from Droid Sans Fallback. Code points no font has (most emoji) draw as a visible box (U+25A1).
#pragma once

#include "figure_layout.hpp"

#include <imgui.h>

#include <cfloat>
#include <cmath>
#include <list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

class Fonts {
public:
    ImFont* body = nullptr;   // panels and token labels
    ImFont* small = nullptr;  // numbers in heatmap cells, legends
    ImFont* title = nullptr;  // the app name, figure headings

    // Adds the code points of a UTF-8 string to the set to bake.
    void need(std::string_view text);
    // Rebuilds atlas + font texture when needed. Call between frames (before NewFrame).
    // Returns true when it rebuilt.
    bool update(float ui_scale);
    // Browser: the font requested last finished downloading (or failed: then its file is absent).
    void font_arrived() { ++lazy_ready_; dirty_ = true; }
    bool font_pending() const { return lazy_requested_ > lazy_ready_; }
    int glyph_count() const { return glyph_count_; }
    int missing_count() const { return missing_count_; }
    int rebuild_count() const { return rebuild_count_; }
    // The export's second atlas (web/ui/export.cpp): merge the fonts `other` has downloaded, and
    // never start a download of its own (its arrival is reported to the app on screen).
    void use_downloads_of(const Fonts& other) {
        lazy_requested_ = lazy_ready_ = other.lazy_ready_;
        may_download_ = false;
    }
    // Bake on the CPU only, without a font texture: for measuring text where there is no GL
    // (`attnviz render --svg`, the SVG export's own atlas).
    void cpu_only() { upload_ = false; }
    // The CSS font-size per ImGui size of the UI font: ImGui scales a font so that its hhea
    // ascent − descent is the size, CSS so that its em is (unitsPerEm / (ascent − descent)).
    float em_per_size() const { return em_per_size_; }
    // Whether the atlas draws c from a merged fallback font (CJK), and that font's em per size.
    bool from_fallback(ImWchar c) const { return from_fallback_.count(c) > 0; }
    float fallback_em_per_size() const { return fallback_em_per_size_; }

private:
    void rebuild(float ui_scale);
    const std::vector<char>* file(const char* path);

    std::set<ImWchar> extra_;        // needed code points outside the base ranges
    std::set<ImWchar> baked_extra_;  // extra_ as of the last bake
    float baked_scale_ = 0.0f;
    bool dirty_ = true;
    int lazy_requested_ = 0, lazy_ready_ = 0;  // of platform::kCjkLazyFonts, in order
    bool may_download_ = true;
    bool upload_ = true;
    float em_per_size_ = 2048.0f / 2384.0f;  // DejaVu Sans, until the file says
    float fallback_em_per_size_ = 1.0f;
    std::set<ImWchar> from_fallback_;        // of extra_: not in the UI font, in a merged one
    int glyph_count_ = 0, missing_count_ = 0, rebuild_count_ = 0;
    std::list<std::pair<std::string, std::vector<char>>> files_;  // bytes kept for the atlas (stable addresses)
    ImVector<ImWchar> ui_ranges_, extra_ranges_;
};

// Text measured with the baked fonts (core/figure/figure_layout.hpp TextMeasure): the views'
// layouts and the SVG writer measure with the same glyph advances ImGui draws.
class FontsMeasure final : public TextMeasure {
public:
    explicit FontsMeasure(const Fonts& fonts) : fonts_(fonts) {}
    ImFont* font(FontRole role) const {
        return role == FontRole::Title ? fonts_.title : role == FontRole::Small ? fonts_.small : fonts_.body;
    }
    float width(std::string_view text, FontRole role) const override {
        ImFont* f = font(role);
        return f->CalcTextSizeA(f->FontSize, FLT_MAX, 0.0f, text.data(), text.data() + text.size()).x;
    }
    float size(FontRole role) const override { return font(role)->FontSize; }
    float ascent(FontRole role) const override { return font(role)->Ascent; }
    float em(FontRole role) const override { return font(role)->FontSize * fonts_.em_per_size(); }
    float wrapped_height(std::string_view text, FontRole role, float wrap_width) const override {
        ImFont* f = font(role);
        return f->CalcTextSizeA(f->FontSize, FLT_MAX, wrap_width, text.data(), text.data() + text.size()).y;
    }
    // Fonts::rebuild bakes a merged font at round(1.12 size), round(0.04 size) lower.
    bool fallback(char32_t c, FontRole role, Fallback& out) const override {
        if (c > 0xffffffu || !fonts_.from_fallback(static_cast<ImWchar>(c))) return false;
        const float size = font(role)->FontSize;
        out = {std::round(size * 1.12f) * fonts_.fallback_em_per_size(), std::round(size * 0.04f)};
        return true;
    }

private:
    const Fonts& fonts_;
};

}  // namespace attn
