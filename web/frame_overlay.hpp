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
    void end_cpu();      // App::before_render
    int count() const { return count_; }
    float median_ms() const;     // of the intervals
    float worst_ms() const;
    float cpu_median_ms() const;
    float cpu_worst_ms() const;
    float fps() const { const float m = median_ms(); return m > 0.0f ? 1000.0f / m : 0.0f; }

private:
    float interval_[kFrameWindow]{}, cpu_[kFrameWindow]{};
    int count_ = 0, next_ = 0;
    double last_begin_ = -1.0, begin_ = -1.0;
    float pending_interval_ = -1.0f;
};

// Draws the overlay over the figure (st.figure_rect) when st.show_frame_time.
void draw_frame_overlay(ViewContext& ctx, const FrameTimes& times);
// {"shown", "frames", "median_ms", "worst_ms", "fps", "cpu_median_ms", "cpu_worst_ms"}
nlohmann::json frame_times_json(const AppState& st, const FrameTimes& times);

}  // namespace attn
