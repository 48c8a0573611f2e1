// figure_layout.cpp: the frame of a figure drawn alone (see figure_layout.hpp).
#include "figure_layout.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

std::vector<std::string_view> TextMeasure::wrapped_lines(std::string_view text, FontRole role, float wrap_width) const {
    // Greedy: words (split at spaces) fill a line while they fit; a word longer than the line
    // takes a line of its own.
    std::vector<std::string_view> lines;
    float line_w = 0.0f;
    const float space = width(" ", role);
    size_t i = 0, start = 0;
    while (i < text.size()) {
        const size_t end = std::min(text.find(' ', i), text.size());
        const float w = width(text.substr(i, end - i), role);
        if (line_w > 0.0f && line_w + space + w > wrap_width) {
            lines.push_back(text.substr(start, i - 1 - start));
            start = i, line_w = w;
        } else {
            line_w += (line_w > 0.0f ? space : 0.0f) + w;
        }
        i = end + 1;
    }
    lines.push_back(text.substr(start, std::min(text.size(), i) - start));
    return lines;
}

float TextMeasure::wrapped_height(std::string_view text, FontRole role, float wrap_width) const {
    return static_cast<float>(wrapped_lines(text, role, wrap_width).size()) * size(role);
}

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
