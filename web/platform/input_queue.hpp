// input_queue.hpp: key and text events handed to ImGui in order, at most one change per key
// per frame.
//
// ImGui 1.86 reads keys as a state (io.KeysDown) once per frame, and a frame's text before its
// keys. A key pressed and released between two frames (a quick Ctrl+A or Backspace while a big
// figure takes 300 ms a frame) would never be seen, and text typed after an End key would land
// before the cursor moved. The queue keeps the events and, each frame, hands over those up to
// the first that would hide another: a second change of a key already changed this frame, or
// text after an editing key went down. The rest waits for the next frame.
#pragma once

#include <deque>
#include <string>
#include <vector>

namespace attn {

struct InputEvent {
    int key = -1;  // a GLFW key; -1: a text event
    int scancode = 0, action = 0, mods = 0;
    std::string text;            // text event: UTF-8 (the page's text field, IME, paste) ...
    unsigned int codepoint = 0;  // ... or one character (GLFW's character callback)

    bool is_text() const { return key < 0; }
};

class InputQueue {
public:
    void push(InputEvent event) { events_.push_back(std::move(event)); }
    // The events of the next frame, in order, taken off the queue.
    std::vector<InputEvent> take_frame();
    bool empty() const { return events_.empty(); }

private:
    std::deque<InputEvent> events_;
};

}  // namespace attn
