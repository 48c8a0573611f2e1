// frame_overlay.cpp: frame_overlay.hpp.
#include "frame_overlay.hpp"

#include "kernels.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace attn {
namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

float median_of(const float* v, int n) {
    if (n == 0) return 0.0f;
    std::vector<float> sorted(v, v + n);
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    return sorted[static_cast<size_t>(n / 2)];
}

const char* view_label(Lang lang, View v) {
    return tr(lang, v == View::Lines     ? Str::ViewLines
                    : v == View::Heatmap ? Str::ViewHeatmap
                    : v == View::Model   ? Str::ViewModel
                    : v == View::Explain ? Str::ViewExplain
                    : v == View::Compare ? Str::ViewCompare
                    : v == View::Why     ? Str::ViewWhy
                    : v == View::Image   ? Str::ViewImage
                    : v == View::Qk      ? Str::ViewQk
                                         : Str::ViewSteps);
}

}  // namespace

void FrameTimes::begin_frame() {
    begin_ = now_ms();
    pending_interval_ = last_begin_ < 0.0 ? -1.0f : static_cast<float>(begin_ - last_begin_);
    last_begin_ = begin_;
}

void FrameTimes::end_cpu(bool drawn) {
    if (begin_ < 0.0 || pending_interval_ < 0.0f) return;
    interval_[next_] = pending_interval_;
    drawn_[next_] = drawn;
    drawn_total_ += drawn ? 1 : 0;
    cpu_[next_] = static_cast<float>(now_ms() - begin_);
    next_ = (next_ + 1) % kFrameWindow;
    count_ = std::min(count_ + 1, kFrameWindow);
    pending_interval_ = -1.0f;
}

void FrameTimes::begin_gpu() { gpu_begin_ = gpu_sync ? now_ms() : -1.0; }

void FrameTimes::end_gpu() {
    if (gpu_begin_ < 0.0) return;
    gpu_[gpu_next_] = static_cast<float>(now_ms() - gpu_begin_);
    gpu_next_ = (gpu_next_ + 1) % kFrameWindow;
    gpu_count_ = std::min(gpu_count_ + 1, kFrameWindow);
    gpu_begin_ = -1.0;
}

int FrameTimes::drawn() const { return static_cast<int>(std::count(drawn_, drawn_ + count_, true)); }

float FrameTimes::gpu_median_ms() const { return median_of(gpu_, gpu_count_); }

float FrameTimes::median_ms() const { return median_of(interval_, count_); }
float FrameTimes::worst_ms() const { return count_ ? *std::max_element(interval_, interval_ + count_) : 0.0f; }
float FrameTimes::cpu_median_ms() const { return median_of(cpu_, count_); }
float FrameTimes::cpu_worst_ms() const { return count_ ? *std::max_element(cpu_, cpu_ + count_) : 0.0f; }

void draw_frame_overlay(ViewContext& ctx, const FrameTimes& times) {
    const AppState& st = ctx.state;
    if (!st.show_frame_time) return;
    const float s = ctx.scale;
    const Palette& pal = palette(st.theme);
    ImFont* font = ctx.fonts.small;
    const float fs = font->FontSize;
    char line1[200], line2[200], line3[64], cpu[64], heads[32];
    std::snprintf(line1, sizeof line1, tr(st.lang, Str::FrameTimeLine), times.median_ms(), times.count(), times.worst_ms(), times.fps());
    std::snprintf(cpu, sizeof cpu, " · CPU %.1f ms", times.cpu_median_ms());
    std::strncat(line1, cpu, sizeof line1 - std::strlen(line1) - 1);
    std::snprintf(heads, sizeof heads, tr(st.lang, st.figure.trace().heads == 1 ? Str::HeadsOne : Str::HeadsMany), st.figure.trace().heads);
    std::snprintf(line2, sizeof line2, tr(st.lang, Str::FrameTimeFigure), view_label(st.lang, st.view), st.figure.trace().T_q(), st.figure.trace().T_k(),
                  heads, st.view == View::Lines ? st.lines_drawn : 0);
    const int threads = st.model.threads_used();
    std::snprintf(line3, sizeof line3, "kernels: %s · %d thread%s", kernels::isa_name(kernels::best_isa()), threads,
                  threads == 1 ? "" : "s");  // which wasm build runs
    const float p = 6.0f * s;
    const ProbeRect& f = st.figure_rect;
    // Top-right of the figure, below the line where the views write their notes; on a narrow
    // figure (a phone) the lines wrap inside it.
    const float wrap = std::max(f[2] - 2.0f * p - 16.0f * s, 40.0f * s);
    const char* lines[] = {line1, line2, line3};
    ImVec2 size[3];
    float w = 0.0f, h = 0.0f;
    for (int i = 0; i < 3; ++i) {
        size[i] = font->CalcTextSizeA(fs, FLT_MAX, wrap, lines[i]);
        w = std::max(w, std::min(size[i].x, wrap)), h += size[i].y + (i ? 2.0f * s : 0.0f);
    }
    const ImVec2 a(f[0] + f[2] - w - 2.0f * p - 8.0f * s, f[1] + fs + 14.0f * s);
    const ImVec2 b(a.x + w + 2.0f * p, a.y + h + 2.0f * p);
    ImDrawList* dl = ImGui::GetForegroundDrawList();
    ImVec4 bg = ImGui::ColorConvertU32ToFloat4(pal.background);
    bg.w = 0.85f;
    dl->AddRectFilled(a, b, ImGui::GetColorU32(bg), 4.0f * s);
    dl->AddRect(a, b, pal.text_muted, 4.0f * s);
    float y = a.y + p;
    for (int i = 0; i < 3; ++i) {
        dl->AddText(font, fs, ImVec2(a.x + p, y), i == 0 ? pal.text : pal.text_muted, lines[i], nullptr, wrap);
        y += size[i].y + 2.0f * s;
    }
    ctx.state.probe["frame_overlay"] = {a.x, a.y, b.x - a.x, b.y - a.y};
}

nlohmann::json frame_times_json(const AppState& st, const FrameTimes& t) {
    nlohmann::json recent = nlohmann::json::array();  // the window's CPU times, the newest last
    for (int i = std::min(t.count_, kFrameWindow); i > 0; --i) recent.push_back(t.cpu_[(t.next_ + kFrameWindow - i) % kFrameWindow]);
    return {{"shown", st.show_frame_time}, {"frames", t.count()}, {"median_ms", t.median_ms()}, {"worst_ms", t.worst_ms()},
            {"fps", t.fps()}, {"cpu_median_ms", t.cpu_median_ms()}, {"cpu_worst_ms", t.cpu_worst_ms()}, {"cpu_last_ms", t.cpu_last_ms()},
            {"drawn", t.drawn()}, {"drawn_total", t.drawn_total()}, {"vertices", t.vtx_}, {"indices", t.idx_}, {"line_instances", t.lines_}, {"gpu_median_ms", t.gpu_median_ms()},
            {"cpu_recent_ms", recent}};
}

}  // namespace attn
