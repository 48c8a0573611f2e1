// fonts.cpp: glyph bookkeeping and atlas rebuilds (see fonts.hpp).
#include "fonts.hpp"

#include "platform.hpp"

#include <backends/imgui_impl_opengl3.h>
#include <imgui_internal.h>

// A private copy of ImGui's stb_truetype (static functions), to ask which font has a glyph.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#define STBTT_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#include <imstb_truetype.h>
#pragma GCC diagnostic pop

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace attn {
namespace {

// Always baked: Latin, Greek, punctuation, arrows, math operators, geometric shapes.
constexpr ImWchar kBaseRanges[] = {
    0x0020, 0x017F, 0x0370, 0x03FF, 0x2010, 0x205E, 0x2070, 0x209F, 0x2190, 0x21FF,
    0x2200, 0x22FF, 0x25A0, 0x25FF, 0xFFFD, 0xFFFD, 0,
};
constexpr ImWchar kMissingGlyphBox = 0x25A1;  // □

bool in_base(ImWchar c) {
    for (int i = 0; kBaseRanges[i]; i += 2)
        if (c >= kBaseRanges[i] && c <= kBaseRanges[i + 1]) return true;
    return false;
}

// Droid Sans Fallback covers these (BMP, CJK and friends); worth fetching the full font for.
bool cjk_like(ImWchar c) { return (c >= 0x1100 && c <= 0x11FF) || (c >= 0x2E80 && c <= 0xFFEF); }

// unitsPerEm (table head) / (ascent − descent) (table hhea, as stb_truetype's
// GetFontVMetrics reads them); DejaVu Sans' numbers when the file has no such tables.
float ttf_em_per_size(const std::vector<char>& ttf) {
    auto u16 = [&](size_t at) { return at + 2 <= ttf.size() ? (static_cast<unsigned char>(ttf[at]) << 8) | static_cast<unsigned char>(ttf[at + 1]) : 0; };
    auto u32 = [&](size_t at) { return (static_cast<std::uint32_t>(u16(at)) << 16) | static_cast<std::uint32_t>(u16(at + 2)); };
    size_t head = 0, hhea = 0;
    const int tables = u16(4);
    for (int i = 0; i < tables; ++i) {
        const size_t record = 12 + 16 * static_cast<size_t>(i);
        if (record + 16 > ttf.size()) break;
        const std::string tag(ttf.data() + record, 4);
        if (tag == "head") head = u32(record + 8);
        if (tag == "hhea") hhea = u32(record + 8);
    }
    const int units = head ? u16(head + 18) : 0;
    const int ascent = hhea ? static_cast<std::int16_t>(u16(hhea + 4)) : 0, descent = hhea ? static_cast<std::int16_t>(u16(hhea + 6)) : 0;
    if (units <= 0 || ascent - descent <= 0) return 2048.0f / 2384.0f;
    return static_cast<float>(units) / static_cast<float>(ascent - descent);
}

}  // namespace

void Fonts::need(std::string_view text) {
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
        unsigned int c = 0;
        int n = ImTextCharFromUtf8(&c, p, end);
        if (n <= 0) break;
        p += n;
        if (c < 0x20 || in_base(static_cast<ImWchar>(c))) continue;
        if (extra_.insert(static_cast<ImWchar>(c)).second) dirty_ = true;
    }
}

const std::vector<char>* Fonts::file(const char* path) {
    for (auto& [name, bytes] : files_)
        if (name == path) return &bytes;
    std::FILE* f = std::fopen(path, "rb");
    if (!f) return nullptr;
    std::vector<char> bytes;
    char buffer[65536];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
    std::fclose(f);
    files_.emplace_back(path, std::move(bytes));
    return &files_.back().second;
}

bool Fonts::update(float ui_scale) {
    if (!dirty_ && ui_scale == baked_scale_) return false;
    rebuild(ui_scale);
    return true;
}

void Fonts::rebuild(float ui_scale) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();

    ImFontGlyphRangesBuilder builder;
    builder.AddRanges(kBaseRanges);
    for (ImWchar c : extra_) builder.AddChar(c);
    ui_ranges_.clear();
    builder.BuildRanges(&ui_ranges_);
    ImFontGlyphRangesBuilder extra_builder;
    for (ImWchar c : extra_) extra_builder.AddChar(c);
    extra_ranges_.clear();
    extra_builder.BuildRanges(&extra_ranges_);

    const std::vector<char>* ui = file(platform::kUiFont);
    // Merged after DejaVu in this order; a glyph comes from the first font that has it.
    std::vector<const std::vector<char>*> merged;
    if (!extra_.empty()) {
        if (auto* f = file(platform::kCjkFont)) merged.push_back(f);
        for (int i = 0; i < lazy_ready_; ++i) {
            const char* name = platform::kCjkLazyFonts[i];
            if (!name) break;
            if (auto* f = file((std::string(platform::kFontDir) + name).c_str())) merged.push_back(f);
        }
    }

    auto add = [&](float size_px) -> ImFont* {
        ImFontConfig cfg;
        cfg.FontDataOwnedByAtlas = false;
        cfg.OversampleH = 2;
        ImFont* font = nullptr;
        if (ui) font = io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(ui->data()), (int)ui->size(), size_px, &cfg, ui_ranges_.Data);
        else font = io.Fonts->AddFontDefault(&cfg);
        ImFontConfig merge;
        merge.FontDataOwnedByAtlas = false;
        merge.MergeMode = true;
        merge.OversampleH = 1;
        // Droid's ideographs fill less of the em than DejaVu's Latin: a little larger, they match
        // the Latin cap height; the offset keeps them on the same optical centre line.
        merge.GlyphOffset = ImVec2(0.0f, std::round(size_px * 0.04f));
        for (const std::vector<char>* extra : merged)
            if (!extra_ranges_.empty())
                io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(extra->data()), (int)extra->size(),
                                               std::round(size_px * 1.12f), &merge, extra_ranges_.Data);
        font->FallbackChar = kMissingGlyphBox;
        return font;
    };
    body = add(std::round(15.0f * ui_scale));
    small = add(std::round(12.5f * ui_scale));
    title = add(std::round(19.0f * ui_scale));
    if (!io.Fonts->Build()) {
        // A font file that stb_truetype cannot read: keep the UI up with ImGui's own font.
        io.Fonts->Clear();
        ImFontConfig cfg;
        cfg.SizePixels = std::round(13.0f * ui_scale);
        body = small = title = io.Fonts->AddFontDefault(&cfg);
        io.Fonts->Build();
    }
    if (upload_) {
        ImGui_ImplOpenGL3_DestroyFontsTexture();
        ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    if (ui) em_per_size_ = ttf_em_per_size(*ui);
    // Which needed code points the merged fonts draw (the SVG sizes and shifts them the same way).
    from_fallback_.clear();
    if (ui && !merged.empty()) {
        fallback_em_per_size_ = ttf_em_per_size(*merged.front());
        auto info_of = [](const std::vector<char>& ttf, stbtt_fontinfo& info) {
            const auto* data = reinterpret_cast<const unsigned char*>(ttf.data());
            return stbtt_InitFont(&info, data, stbtt_GetFontOffsetForIndex(data, 0)) != 0;
        };
        stbtt_fontinfo main_font;
        std::vector<stbtt_fontinfo> others(merged.size());
        bool ok = info_of(*ui, main_font);
        for (size_t i = 0; i < merged.size(); ++i) ok = ok && info_of(*merged[i], others[i]);
        for (ImWchar c : extra_) {
            if (!ok || stbtt_FindGlyphIndex(&main_font, static_cast<int>(c)) != 0) continue;
            for (stbtt_fontinfo& other : others)
                if (stbtt_FindGlyphIndex(&other, static_cast<int>(c)) != 0) {
                    from_fallback_.insert(c);
                    break;
                }
        }
    }
    io.FontDefault = body;

    glyph_count_ = body->Glyphs.Size;
    missing_count_ = 0;
    bool want_full = false;
    for (ImWchar c : extra_) {
        if (body->FindGlyphNoFallback(c)) continue;
        ++missing_count_;
        if (cjk_like(c)) want_full = true;
    }
    // One download at a time; the next, bigger font only if the last one left some missing.
    if (want_full && may_download_ && !font_pending() && platform::kCjkLazyFonts[lazy_requested_]) {
        platform::request_font(platform::kCjkLazyFonts[lazy_requested_]);
        ++lazy_requested_;
    }
    ++rebuild_count_;
    baked_extra_ = extra_;
    baked_scale_ = ui_scale;
    dirty_ = false;
}

}  // namespace attn
