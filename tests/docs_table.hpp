// docs_table.hpp: a table in docs/ that the code writes (the link's parameters, the commands'
// options), held to the code: the page's text between `<!-- MARKER … -->` and `<!-- /MARKER -->`
// must be the table. ATTN_UPDATE_DOCS=1 rewrites it instead (native build).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace attn::test {

// A page of docs/, whole (ATTN_TEST_DATA is tests/data).
inline std::string docs_path(const char* page) {
    std::string path = ATTN_TEST_DATA;  // appended, not operator+: GCC 12 warns of a false overflow there
    path.append("/../../docs/").append(page);
    return path;
}

inline std::string read_docs_page(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `test` names the test case for the message: ATTN_UPDATE_DOCS=1 build/attn_tests -tc="TEST".
inline void check_docs_table(const char* page_name, const std::string& marker, const std::string& table, const char* test) {
    const std::string path = docs_path(page_name);
    std::string page = read_docs_page(path);
    const std::string begin = "<!-- " + marker, end = "<!-- /" + marker + " -->";
    const size_t b = page.find(begin), e = page.find(end);
    REQUIRE_MESSAGE(b != std::string::npos, "docs/" << page_name << " has no " << begin << " marker");
    REQUIRE(e != std::string::npos);
    const size_t first = page.find("-->\n", b) + 4;
    REQUIRE(first <= e);
    const std::string block = "\n" + table + "\n";  // blank lines: the comments are blocks of their own
    if (const char* update = std::getenv("ATTN_UPDATE_DOCS"); update && std::string(update) == "1") {
        page.replace(first, e - first, block);
        std::ofstream(path, std::ios::binary) << page;
        MESSAGE("wrote " << marker << " to " << path);
        return;
    }
    CHECK_MESSAGE(page.substr(first, e - first) == block, "docs/" << page_name << "'s " << marker << " table is out of date: ATTN_UPDATE_DOCS=1 build/attn_tests -tc=\""
                                                                   << test << "\" rewrites it");
}

}  // namespace attn::test
