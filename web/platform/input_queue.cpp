// input_queue.cpp: see input_queue.hpp.
#include "input_queue.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <utility>

namespace attn {

namespace {

// Keys ImGui acts on: Enter, arrows, Backspace, Escape, modifiers (every key from
// GLFW_KEY_ESCAPE up), Space (the model view's knock-out key, access.hpp), and any key held
// with Ctrl, Alt or Super (Ctrl+A, Ctrl+V). A letter typed alone reaches ImGui as text, so its
// key state may change twice in a frame.
bool is_editing_key(const InputEvent& e) {
    return e.key >= GLFW_KEY_ESCAPE || e.key == GLFW_KEY_SPACE || (e.mods & (GLFW_MOD_CONTROL | GLFW_MOD_ALT | GLFW_MOD_SUPER)) != 0;
}

}  // namespace

std::vector<InputEvent> InputQueue::take_frame() {
    std::vector<InputEvent> frame;
    // Keys pressed or released in this frame, and whether that change was an editing key's.
    // Two changes of one key share a frame only if neither is an editing key's (a letter
    // typed alone).
    std::vector<std::pair<int, bool>> changed;
    bool pressed = false;  // an editing key went down in this frame
    while (!events_.empty()) {
        const InputEvent& e = events_.front();
        if (e.is_text()) {
            if (pressed) break;
        } else if (e.action != GLFW_REPEAT) {
            const bool editing = is_editing_key(e);
            const auto clash = [&](const std::pair<int, bool>& c) { return c.first == e.key && (c.second || editing); };
            if (std::any_of(changed.begin(), changed.end(), clash)) break;
            changed.emplace_back(e.key, editing);
            pressed = pressed || (editing && e.action == GLFW_PRESS);
        }
        frame.push_back(std::move(events_.front()));
        events_.pop_front();
    }
    return frame;
}

}  // namespace attn
