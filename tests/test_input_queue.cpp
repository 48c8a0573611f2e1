// test_input_queue.cpp: InputQueue against what ImGui 1.86 would see. The model of ImGui: a
// frame's events set io.KeysDown, then the frame reads the key states and the text.
#include "input_queue.hpp"

#include <GLFW/glfw3.h>
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace attn;

namespace {

InputEvent key(int k, int action, int mods = 0) { return {k, 0, action, mods, {}, 0}; }
InputEvent text(const std::string& s) { return {-1, 0, 0, 0, s, 0}; }

// What one frame shows ImGui: the keys down after its events, and its text.
struct Seen {
    std::map<int, bool> down;
    std::string text;
};

std::vector<Seen> run_frames(InputQueue& queue, std::vector<InputEvent>* order = nullptr) {
    std::vector<Seen> frames;
    std::map<int, bool> down;
    while (!queue.empty()) {
        std::vector<InputEvent> events = queue.take_frame();
        REQUIRE(!events.empty());  // every frame makes progress
        Seen seen;
        for (const InputEvent& e : events) {
            if (e.is_text()) seen.text += e.text;
            else if (e.action != GLFW_REPEAT) down[e.key] = e.action == GLFW_PRESS;
            if (order) order->push_back(e);
        }
        seen.down = down;
        frames.push_back(seen);
    }
    return frames;
}

}  // namespace

TEST_CASE("input queue: a Ctrl+A tapped between two frames is seen with both keys down") {
    InputQueue queue;
    queue.push(key(GLFW_KEY_LEFT_CONTROL, GLFW_PRESS, GLFW_MOD_CONTROL));
    queue.push(key(GLFW_KEY_A, GLFW_PRESS, GLFW_MOD_CONTROL));
    queue.push(key(GLFW_KEY_A, GLFW_RELEASE, GLFW_MOD_CONTROL));
    queue.push(key(GLFW_KEY_LEFT_CONTROL, GLFW_RELEASE));
    queue.push(text("我爱你"));
    const std::vector<Seen> frames = run_frames(queue);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].down.at(GLFW_KEY_LEFT_CONTROL));
    CHECK(frames[0].down.at(GLFW_KEY_A));
    CHECK(frames[0].text.empty());  // the text comes after the select-all, not with it
    CHECK(!frames[1].down.at(GLFW_KEY_A));
    CHECK(frames[1].text == "我爱你");
}

TEST_CASE("input queue: text typed after End waits for the frame after End") {
    InputQueue queue;
    queue.push(key(GLFW_KEY_END, GLFW_PRESS));
    queue.push(key(GLFW_KEY_END, GLFW_RELEASE));
    queue.push(text(" ok"));
    const std::vector<Seen> frames = run_frames(queue);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].down.at(GLFW_KEY_END));
    CHECK(frames[0].text.empty());
    CHECK(frames[1].text == " ok");
}

TEST_CASE("input queue: letters typed alone, text first, and held keys' repeats share one frame") {
    InputQueue queue;
    queue.push(text("x"));
    for (const char c : std::string("hello")) {
        const int k = GLFW_KEY_A + (c - 'a');
        queue.push(key(k, GLFW_PRESS));
        queue.push(text(std::string(1, c)));
        queue.push(key(k, GLFW_RELEASE));
    }
    queue.push(key(GLFW_KEY_BACKSPACE, GLFW_PRESS));
    queue.push(key(GLFW_KEY_BACKSPACE, GLFW_REPEAT));
    queue.push(key(GLFW_KEY_BACKSPACE, GLFW_REPEAT));
    const std::vector<Seen> frames = run_frames(queue);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].text == "xhello");
    CHECK(frames[0].down.at(GLFW_KEY_BACKSPACE));
}

TEST_CASE("input queue: random streams keep their order and show every editing key press") {
    const int keys[] = {GLFW_KEY_A, GLFW_KEY_C, GLFW_KEY_LEFT_CONTROL, GLFW_KEY_LEFT_SHIFT,
                        GLFW_KEY_END, GLFW_KEY_BACKSPACE, GLFW_KEY_ENTER};
    std::mt19937 rng(6);
    for (int trial = 0; trial < 200; ++trial) {
        InputQueue queue;
        std::vector<InputEvent> pushed;
        std::map<int, bool> down;
        const int n = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) {
            InputEvent e;
            if (rng() % 4 == 0) {
                e = text(std::string(1, static_cast<char>('a' + rng() % 26)));
            } else {
                const int k = keys[rng() % std::size(keys)];
                const int mods = down[GLFW_KEY_LEFT_CONTROL] ? GLFW_MOD_CONTROL : 0;
                e = key(k, down[k] ? (rng() % 3 == 0 ? GLFW_REPEAT : GLFW_RELEASE) : GLFW_PRESS, mods);
                if (e.action != GLFW_REPEAT) down[k] = e.action == GLFW_PRESS;
            }
            pushed.push_back(e);
            queue.push(e);
        }
        std::vector<InputEvent> order;
        const std::vector<Seen> frames = run_frames(queue, &order);
        REQUIRE(order.size() == pushed.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            CHECK(order[i].key == pushed[i].key);
            CHECK(order[i].action == pushed[i].action);
            CHECK(order[i].text == pushed[i].text);
        }
        // Each press of a key other than a plain letter is seen down by some frame: count the
        // presses, and the frames where a key turns from up to down.
        for (const int k : keys) {
            int presses = 0;
            for (const InputEvent& e : pushed) {
                const bool editing = k >= GLFW_KEY_ESCAPE || (e.mods & GLFW_MOD_CONTROL);
                if (e.key == k && e.action == GLFW_PRESS && editing) ++presses;
            }
            int seen = 0;
            bool was_down = false;
            for (const Seen& f : frames) {
                const auto it = f.down.find(k);
                const bool now = it != f.down.end() && it->second;
                if (now && !was_down) ++seen;
                was_down = now;
            }
            CHECK(seen >= presses);
        }
    }
}

TEST_CASE("input queue: a Space tapped between two frames is seen down (the model view's knock-out key)") {
    InputQueue queue;
    queue.push(key(GLFW_KEY_SPACE, GLFW_PRESS));
    queue.push(text(" "));
    queue.push(key(GLFW_KEY_SPACE, GLFW_RELEASE));
    const std::vector<Seen> frames = run_frames(queue);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].down.at(GLFW_KEY_SPACE));
    CHECK(frames[1].text == " ");  // typed in a text box, the space still arrives, a frame later
    CHECK(!frames[1].down.at(GLFW_KEY_SPACE));
}
