// options.hpp: every option of every attnviz command as a row: its name, its argument, the check
// that reads it and one line of help. The parser, `--help` and docs/DESKTOP.md's option tables are
// made from these rows and nothing else (tests/test_cli.cpp holds the page to them), as
// web/state/link_state.cpp's kParams make the link. No GL, no window: the suites link it.
#pragma once

#include "transformer.hpp"  // Ablation, Sampling

#include <algorithm>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// One option of a command whose options land in an O.
template <class O>
struct CliOption {
    const char* name;           // "--top"
    const char* argument;       // its argument in usage lines ("N"), or nullptr: a switch
    const char* help;           // what it does, one line (markdown: DESKTOP.md shows it as is)
    const char* default_value;  // what not giving it means (markdown: "`5`", "every core"), or ""
    // Reads the argument ("" for a switch) into `options`: "" or what was wrong, without the
    // option's name ("expected a whole number from 0, got \"x\"").
    std::string (*read)(O& options, std::string_view argument);
};

// A command: "attnviz run", its operands, one line about it, its option rows.
template <class O>
struct CliCommand {
    const char* name;      // "attnviz run"
    const char* operands;  // "MODEL", "FILE|-", "" for none
    const char* about;     // one line
    std::span<const CliOption<O>> options;
};

// [SECTION] The commands' options ---------------------------------------------------------------

// attnviz import FILE|- (SPEC.md §3)
struct ImportOptions {
    int layer = -1, head = -1;  // --layer/--head (from 0), -1: not given
    bool json = false;
    std::string stack;
};

// attnviz run MODEL … (SPEC.md §5), and the window after a model (attnviz tiny-lm --text …):
// what is given, nothing more (the window keeps a link's values for what is not).
struct ModelOptions {
    std::optional<std::string> text, source, ids, source_ids, compare, knockout;
    std::optional<std::vector<int>> hidden;  // --hide-token, from 0
    std::optional<Ablation> ablation;
    std::optional<int> generate;
    std::optional<float> temperature;
    std::optional<int> top_k;
    std::optional<std::uint64_t> seed;
    std::optional<int> threads;
    std::optional<std::string> maps;  // --maps: "all", or heads as --knockout writes them
    int pool = 0;                     // --pool: at most N × N blocks per printed map (0: exact)
    std::string quant;                // --quant: which .gguf of a Hub repo or folder ("Q4_K_M"; "": the only one)
    std::optional<std::string> chat;  // --chat: a conversation's JSON file, rendered by the model's template
    std::optional<std::string> image; // --image: a picture for a vision model (PNG, JPEG)
    std::optional<std::string> attribute, contrast, corrupted, corrupted_ids;  // the why views (why.hpp): tokens as text or #ID
    bool lens = false;
    bool probs = false;
    bool json = false, importance = false;
    int top = 5, max_new = 32;
};

// attnviz render SCENE.json|MODEL.json|--preset NAME … (desktop only, but its rows are plain data)
struct RenderOptions {
    std::string view = "heatmap", png, svg, layout, preset, theme = "light", lang = "en";
    int width = 1200, height = 800;
    float scale = 1.0f;
};

struct NoOptions {};

const CliCommand<NoOptions>& compute_command();
const CliCommand<ImportOptions>& import_command();
const CliCommand<ModelOptions>& run_command();
const CliCommand<ModelOptions>& window_command();  // `attnviz MODEL …`: the desktop app
const CliCommand<RenderOptions>& render_command();

// [SECTION] Made from the rows -------------------------------------------------------------------

// "attnviz run MODEL [--text T] [--json] …"
template <class O>
std::string usage_line(const CliCommand<O>& c) {
    std::string s = std::string(c.name) + (*c.operands ? " " : "") + c.operands;
    for (const CliOption<O>& o : c.options) s += std::string(" [") + o.name + (o.argument ? std::string(" ") + o.argument : "") + "]";
    return s;
}

// `--help`: the usage line, what the command does, then one line per option.
template <class O>
std::string help_text(const CliCommand<O>& c) {
    std::string s = "usage: " + usage_line(c) + "\n" + c.about + "\n";
    const auto columns = [](const std::string& text) {  // code points: "…" is one column
        return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char b) { return (b & 0xC0) != 0x80; }));
    };
    const auto head = [](const CliOption<O>& o) { return std::string(o.name) + (o.argument ? std::string(" ") + o.argument : ""); };
    std::size_t width = 0;
    for (const CliOption<O>& o : c.options) width = std::max(width, columns(head(o)));
    for (const CliOption<O>& o : c.options) {
        s += "  " + head(o) + std::string(width + 2 - columns(head(o)), ' ') + o.help;
        if (*o.default_value) {
            std::string shown = o.default_value;  // without markdown's backquotes
            shown.erase(std::remove(shown.begin(), shown.end(), '`'), shown.end());
            s += " (default " + shown + ")";
        }
        s += "\n";
    }
    return s;
}

// docs/DESKTOP.md's table of the command's options (a "|" in a cell is written "\|").
template <class O>
std::string options_markdown(const CliCommand<O>& c) {
    const auto cell = [](std::string text) {
        for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2)) text.insert(at, "\\");
        return text;
    };
    std::string s = "| option | meaning | default |\n|---|---|---|\n";
    for (const CliOption<O>& o : c.options)
        s += "| `" + cell(std::string(o.name) + (o.argument ? std::string(" ") + o.argument : "")) + "` | " + cell(o.help) + " | " +
             cell(o.default_value) + " |\n";
    return s;
}

// Reads `args` (what follows the command's name) into `options`, the rest (what does not start
// with "--", and "-") into `operands`. Returns "" or one line naming the command and the option:
// "attnviz run: --top: expected a whole number from 0, got \"x\"".
template <class O>
std::string read_options(const CliCommand<O>& c, const std::vector<std::string>& args, O& options,
                         std::vector<std::string>& operands) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0) {
            operands.push_back(a);
            continue;
        }
        const CliOption<O>* row = nullptr;
        for (const CliOption<O>& o : c.options)
            if (a == o.name) row = &o;
        if (!row) return std::string(c.name) + ": unknown option " + a + " (" + c.name + " --help lists them)";
        if (row->argument && i + 1 >= args.size()) return std::string(c.name) + ": " + a + ": expected " + row->argument + " after it";
        const std::string why = row->read(options, row->argument ? std::string_view(args[++i]) : std::string_view());
        if (!why.empty()) return std::string(c.name) + ": " + a + ": " + why;
    }
    return "";
}

// Whether args (after the command) are `--help` or `-h` alone.
bool asks_for_help(const std::vector<std::string>& args);

// How every command starts: `--help` (or -h) alone prints help_text on `out` and stops with exit
// 0; else the options are read, and a bad one is its one line on `err`, exit 2. Returns the code
// to stop with, or nothing: go on with `options` and `operands`.
template <class O>
std::optional<int> start_command(const CliCommand<O>& c, const std::vector<std::string>& args, O& options,
                                 std::vector<std::string>& operands, std::ostream& out, std::ostream& err) {
    if (asks_for_help(args)) {
        out << help_text(c);
        return 0;
    }
    if (const std::string why = read_options(c, args, options, operands); !why.empty()) {
        err << why << "\n";
        return 2;  // kExitBadInput (cli.hpp)
    }
    return std::nullopt;
}

}  // namespace attn
