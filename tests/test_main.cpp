// The doctest runner shared by the native, sanitizer and wasm builds of the suite.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
