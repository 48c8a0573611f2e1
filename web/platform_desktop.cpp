// platform_desktop.cpp: the desktop side of platform.hpp.
#include "platform.hpp"

#include <GLFW/glfw3.h>

namespace attn::platform {

float ui_scale(GLFWwindow* window) {
    float x = 1.0f, y = 1.0f;
    if (window) glfwGetWindowContentScale(window, &x, &y);
    return x > 0.5f ? x : 1.0f;
}

void request_font(const char*) {}  // the desktop reads the full font from the Debian package
void set_text_input(bool, float, float) {}  // GLFW delivers IME text as characters
void install_clipboard() {}                 // ImGui's GLFW backend uses GLFW's clipboard
void set_cursor(int) {}                     // ImGui's GLFW backend sets the cursor

}  // namespace attn::platform
