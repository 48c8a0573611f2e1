// figure_layout.cpp: the frame of a figure drawn alone (see figure_layout.hpp).
#include "figure_layout.hpp"

#include <cmath>

namespace attn {

FigureFrame figure_frame(float width, float height, float scale, const TextMeasure& measure) {
    // ImGui's window padding and item spacing (web/ui/theme.cpp: 12 and 6), floored when scaled;
    // the cursor after a line of text is floored too, and so is a child window's size.
    const float pad = std::floor(12.0f * scale), spacing = std::floor(6.0f * scale);
    FigureFrame f;
    f.width = width, f.height = height;
    f.title_x = pad, f.title_y = pad;
    const float top = std::floor(pad + measure.size(FontRole::Title) + spacing);
    f.box = {pad, top, pad + std::floor(width - 2.0f * pad), top + std::floor(height - pad - top)};
    return f;
}

}  // namespace attn
