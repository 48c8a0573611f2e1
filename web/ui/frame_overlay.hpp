// frame_overlay.hpp: frame times of the window's app, and the optional overlay that shows them
// (Display menu, link fps=1) in the figure's top-right corner, in the browser and the desktop.
// Two numbers per frame: the interval since the previous frame (what the reader sees, bounded
// below by the display's refresh) and the CPU time of building it (before_frame … before_render:
// layout, views, instance uploads; the GPU's own work shows in the interval only).
#pragma once

#include "view.hpp"

#include <nlohmann/json_fwd.hpp>

namespace attn {

inline constexpr int kFrameWindow = 120;  // frames the median and the worst are taken over

class FrameTimes {
public:
    void begin_frame();  // App::before_frame
    void end_cpu(bool drawn);  // App::before_render; drawn: false when the frame is skipped (unchanged)
    // The size of the frame's ImGui draw lists (ImDrawData totals), and the instanced lines.
    void set_geometry(int vertices, int indices, int line_instances) { vtx_ = vertices, idx_ = indices, lines_ = line_instances; }
    // Diagnostics (bench/frame_time.mjs through attnviz_gpu_sync): when on, App::after_render
    // waits for the GPU to finish the frame (a 1-pixel read back) and records the time from
    // before_render to then: the rasterization cost the interval otherwise hides. Off by
    // default: the wait stalls the pipeline.
    bool gpu_sync = false;
    void begin_gpu();
    void end_gpu();
    float gpu_median_ms() const;
    int count() const { return count_; }
    float median_ms() const;     // of the intervals
    float worst_ms() const;
    float cpu_median_ms() const;
    float cpu_worst_ms() const;
    float cpu_last_ms() const { return count_ ? cpu_[(next_ + kFrameWindow - 1) % kFrameWindow] : 0.0f; }
    float fps() const { const float m = median_ms(); return m > 0.0f ? 1000.0f / m : 0.0f; }
    int drawn() const;  // of the frames in the window, those drawn (the others were unchanged)
    long long drawn_total() const { return drawn_total_; }  // since the start

private:
    float interval_[kFrameWindow]{}, cpu_[kFrameWindow]{}, gpu_[kFrameWindow]{};
    bool drawn_[kFrameWindow]{};
    int count_ = 0, next_ = 0, gpu_count_ = 0, gpu_next_ = 0;
    int vtx_ = 0, idx_ = 0, lines_ = 0;
    long long drawn_total_ = 0;
    double gpu_begin_ = -1.0;
    friend nlohmann::json frame_times_json(const AppState& st, const FrameTimes& times);
    double last_begin_ = -1.0, begin_ = -1.0;
    float pending_interval_ = -1.0f;
};

// Draws the overlay over the figure (st.figure_rect) when st.show_frame_time.
void draw_frame_overlay(ViewContext& ctx, const FrameTimes& times);
// {"shown", "frames", "median_ms", "worst_ms", "fps", "cpu_median_ms", "cpu_worst_ms",
//  "drawn", "drawn_total", "vertices", "indices", "line_instances", "gpu_median_ms" (0 unless gpu_sync),
//  "cpu_recent_ms": the window's CPU times, the newest last}
nlohmann::json frame_times_json(const AppState& st, const FrameTimes& times);

}  // namespace attn
