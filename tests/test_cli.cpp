// `attnviz compute` in-process: the trace of SPEC.md §2 and one-line errors with exit 2.
#include "cli.hpp"
#include "builtin.hpp"
#include "model.hpp"
#include "docs_table.hpp"
#include "options.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

using namespace attn;

namespace {

struct Run {
    int code;
    std::string out, err;
};

Run compute_stdin(const std::string& scene) {
    std::istringstream in(scene);
    std::ostringstream out, err;
    int code = run_compute("-", in, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("compute prints the trace: shapes, masked scores null, weights 0") {
    const Run r = compute_stdin(R"({"kind": "masked", "tokens": ["我", "爱", "你"], "embeddings": [[1], [2], [3]]})");
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["kind"] == "masked");
    CHECK(j["queries"] == nlohmann::json({"我", "爱", "你"}));
    CHECK(j["keys"] == j["queries"]);
    CHECK(j["heads"] == 1);
    CHECK(j["d_k"] == 1);
    const auto& h = j["per_head"][0];
    for (const char* key : {"q", "k", "v", "scores", "scaled", "weights", "output"}) CHECK(h.contains(key));
    CHECK(h["scores"][0] == nlohmann::json({1, 2, 3}));
    CHECK(h["scaled"][0][1].is_null());
    CHECK(h["scaled"][1][0] == 2);
    CHECK(h["weights"][0] == nlohmann::json({1, 0, 0}));
    CHECK(j["output"].size() == 3);
}

TEST_CASE("compute reproduces seed 002's R output") {
    const Run r = compute_stdin(R"({"tokens": ["I", "am", "good"], "embeddings": [[1,3,2],[1,1,3],[1,2,1]],
                                     "scale": "none"})");
    REQUIRE(r.code == 0);
    const auto out = nlohmann::json::parse(r.out)["output"];
    CHECK(out[0][1].get<double>() == doctest::Approx(2.957691).epsilon(1e-6));
    CHECK(out[1][2].get<double>() == doctest::Approx(2.722573).epsilon(1e-6));
    CHECK(out[2][1].get<double>() == doctest::Approx(2.864164).epsilon(1e-6));
}

TEST_CASE("bad input: exit 2, nothing on stdout, one line naming <stdin> and the field or position") {
    const std::pair<const char*, const char*> cases[] = {
        {"{\"tokens\": [1}", "<stdin>:1:14: malformed JSON: syntax error while parsing array - unexpected '}'; expected ']'"},
        {R"({"tokens": ["a"], "heads": 3, "d_model": 4})", "<stdin>: heads: expected a divisor of d_model (4), got 3"},
        {R"({"tokens": ["a"], "kind": "sideways"})", "<stdin>: kind: expected"},
    };
    for (const auto& c : cases) {
        const std::string scene = c.first, want = c.second;
        CAPTURE(scene);
        const Run r = compute_stdin(scene);
        CHECK(r.code == kExitBadInput);
        CHECK(r.out.empty());
        CHECK(r.err.rfind(want, 0) == 0);
        CHECK(r.err.find('\n') == r.err.size() - 1);
    }
    std::istringstream none;
    std::ostringstream out, err;
    CHECK(run_compute("/no/such/scene.json", none, out, err) == kExitBadInput);
    CHECK(err.str() == "/no/such/scene.json: cannot open the file\n");
}

namespace {

Run import_stdin(const std::string& text, std::vector<std::string> args = {"-"}) {
    std::istringstream in(text);
    std::ostringstream out, err;
    int code = run_import(args, in, out, err);
    return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("import: a one-paragraph summary, one map as JSON, one-line errors with exit 2") {
    const std::string file = R"({"model": "m", "tokens": ["a", "b"], "attention": [[[[1, 0], [0.25, 0.75]]], [[[1, 0], [0.5, 0.5]]]]})";
    Run r = import_stdin(file);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == "<stdin>: m: 1 stack of attention. attention: 2 layers × 1 head, 2 tokens (a b).\n");
    r = import_stdin(file, {"-", "--layer", "0", "--head", "0", "--json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["weights"] == nlohmann::json::parse("[[1, 0], [0.25, 0.75]]"));
    CHECK(j["queries"] == nlohmann::json({"a", "b"}));
    r = import_stdin(file, {"-", "--layer", "1", "--head", "1", "--json"});
    CHECK(r.code == 2);
    CHECK(r.err == "<stdin>: --head: expected 0 to 0 (attention has 2 layers × 1 head), got 1\n");
    r = import_stdin(R"({"tokens": ["a", "b"], "attention": [[[[1, 0]]]]})");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "<stdin>: attention[0][0]: expected 2 rows (one per token), got 1\n");
    r = import_stdin("{\n  \"tokens\": [\"a\"],\n  \"attention\": [[[[1]]]\n");
    CHECK(r.err == "<stdin>:4:1: malformed JSON: unexpected end of input; expected ',' or ']'\n");
    CHECK(import_stdin(file, {"-", "--json"}).code == 2);
    CHECK(import_stdin(file, {"-", "--layer", "x", "--head", "0", "--json"}).code == 2);
    CHECK(import_stdin(file, {}).code == 2);
}

// [SECTION] The commands' option rows (main/options.hpp): the parser, --help and DESKTOP.md

namespace {

template <class O>
void check_rows(const CliCommand<O>& c) {
    CAPTURE(c.name);
    std::vector<std::string> names;
    for (const CliOption<O>& o : c.options) {
        CAPTURE(o.name);
        const std::string name = o.name;
        CHECK(name.rfind("--", 0) == 0);
        CHECK(std::find(names.begin(), names.end(), name) == names.end());  // each once
        names.push_back(name);
        for (const char* cell : {o.help, o.default_value}) CHECK(std::string(cell).find_first_of("|\n") == std::string::npos);
        CHECK(*o.help != '\0');
        CHECK(test::contains(usage_line(c), name));
        CHECK(test::contains(help_text(c), name));
        CHECK(test::contains(options_markdown(c), "`" + name));
        // A missing argument, or a value that no row takes, is one line naming the command and the option.
        O options;
        std::vector<std::string> operands;
        if (o.argument) {
            CHECK(read_options(c, {name}, options, operands) == std::string(c.name) + ": " + name + ": expected " + o.argument + " after it");
        }
    }
    O options;
    std::vector<std::string> operands;
    CHECK(read_options(c, {"--nope"}, options, operands) == std::string(c.name) + ": unknown option --nope (" + c.name + " --help lists them)");
}

}  // namespace

TEST_CASE("every command's options are rows: usage, --help and the parser from them") {
    check_rows(compute_command());
    check_rows(import_command());
    check_rows(run_command());
    check_rows(window_command());
    check_rows(render_command());
}

TEST_CASE("the rows read what they say, and refuse the rest by name") {
    ModelOptions m;
    std::vector<std::string> operands;
    REQUIRE(read_options(run_command(), {"tiny-lm", "--text", "a b", "--top", "3", "--knockout", "2:3,1:1", "--knockout-mode", "mean",
                                         "--hide-token", "2,2,1", "--generate", "4", "--temperature", "0.5", "--top-k", "40", "--seed", "7",
                                         "--threads", "2", "--json"},
                         m, operands) == "");
    CHECK(operands == std::vector<std::string>{"tiny-lm"});
    CHECK(m.text == "a b");
    CHECK(m.top == 3);
    CHECK(m.knockout == "2:3,1:1");
    CHECK(m.ablation == Ablation::Mean);
    CHECK(m.hidden == std::vector<int>{1, 0});
    CHECK(m.generate == 4);
    CHECK(m.temperature == 0.5f);
    CHECK(m.top_k == 40);
    CHECK(m.seed == 7u);
    CHECK(m.threads == 2);
    CHECK(m.json);
    const std::pair<std::vector<std::string>, std::string> bad[] = {
        {{"--top", "x"}, "attnviz run: --top: expected a whole number from 0 to 100000, got \"x\""},
        {{"--top", "-1"}, "attnviz run: --top: expected a whole number from 0 to 100000, got \"-1\""},
        {{"--threads", "0"}, "attnviz run: --threads: expected a whole number from 1 to 1024, got \"0\""},
        {{"--knockout-mode", "half"}, "attnviz run: --knockout-mode: expected zero or mean, got \"half\""},
        {{"--temperature", "101"}, "attnviz run: --temperature: expected a number from 0 to 100, got \"101\""},
        {{"--hide-token", "0"}, "attnviz run: --hide-token: expected token positions counted from 1, separated by commas (3,5), got \"0\""},
        {{"--knockout", "2-3"}, "attnviz run: --knockout: expected LAYER:HEAD counted from 1, comma-separated (2:3,1:1), or STACK:LAYER:HEAD, got \"2-3\""},
    };
    for (const auto& [args, message] : bad) {
        ModelOptions o;
        std::vector<std::string> rest;
        CHECK(read_options(run_command(), args, o, rest) == message);
    }
    ModelOptions w;
    CHECK(read_options(window_command(), {"--generate", "65"}, w, operands) ==
          "attnviz: --generate: expected a whole number from 1 to 64, got \"65\"");
    RenderOptions r;
    operands.clear();
    REQUIRE(read_options(render_command(), {"-", "--view", "qk", "--scale", "2", "--width", "640", "--theme", "dark"}, r, operands) == "");
    CHECK(operands == std::vector<std::string>{"-"});
    CHECK((r.view == "qk" && r.scale == 2.0f && r.width == 640 && r.height == 800 && r.theme == "dark" && r.lang == "en"));
    CHECK(read_options(render_command(), {"--view", "pie"}, r, operands) ==
          "attnviz render: --view: expected heatmap, lines, steps, model, explain or qk, got \"pie\"");
    CHECK(read_options(render_command(), {"--scale", "5"}, r, operands) == "attnviz render: --scale: expected a number from 0.5 to 4, got \"5\"");
}

TEST_CASE("--help prints the rows; a bad option is one line") {
    std::istringstream in;
    std::ostringstream out, err;
    CHECK(run_import({"--help"}, in, out, err) == 0);
    CHECK(out.str() == help_text(import_command()));
    std::ostringstream out2, err2;
    CHECK(run_model({"--help"}, out2, err2) == 0);
    CHECK(out2.str() == help_text(run_command()));
    std::ostringstream out3, err3;
    CHECK(run_model({"tiny-lm", "--top", "x"}, out3, err3) == kExitBadInput);
    CHECK(err3.str() == "attnviz run: --top: expected a whole number from 0 to 100000, got \"x\"\n");
}

TEST_CASE("DESKTOP.md's option tables are the commands' rows") {
    test::check_docs_table("DESKTOP.md", "cli-window", options_markdown(window_command()), "DESKTOP*");
    test::check_docs_table("DESKTOP.md", "cli-import", options_markdown(import_command()), "DESKTOP*");
    test::check_docs_table("DESKTOP.md", "cli-run", options_markdown(run_command()), "DESKTOP*");
    test::check_docs_table("DESKTOP.md", "cli-render", options_markdown(render_command()), "DESKTOP*");
}

#ifndef __EMSCRIPTEN__  // the built-in models' files are compiled in natively only
TEST_CASE("run --chat: the model's chat template writes the text, its ids carry no second BOS; bad input names the file and turn") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attn-chat-test";
    fs::remove_all(dir);
    fs::create_directories(dir / "model");
    const auto write = [](const fs::path& p, std::string_view text) { std::ofstream(p, std::ios::binary) << text; };
    // tiny-circuits with a chat template (its own files have none: a base model)
    const std::optional<ModelFiles> files = builtin_files("tiny-circuits");
    REQUIRE(files);
    for (const auto& [name, bytes] : files->files)
        if (name != "tokenizer_config.json") write(dir / "model" / name, bytes->text());
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(files->need("tokenizer_config.json").text());
    config["chat_template"] =
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system turns') }}{% endif %}"
        "[{{ m.role }}] {{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
    write(dir / "model" / "tokenizer_config.json", config.dump());
    write(dir / "chat.json", R"([{"role": "user", "content": " The old man saw "}, {"role": "assistant", "content": "a boat"}, {"role": "user", "content": "where?"}])");
    const std::string model = (dir / "model").string(), chat = (dir / "chat.json").string();

    std::ostringstream out, err;
    REQUIRE(run_model({model, "--chat", chat, "--json"}, out, err) == 0);
    const nlohmann::json j = nlohmann::json::parse(out.str());
    CHECK(j["prompt"] == "<|endoftext|>[user] The old man saw\n[assistant] a boat\n[user] where?\n[assistant]");
    // The template wrote the BOS: the ids are the tokenizer's alone, one <|endoftext|> first.
    const LoadedModel m = load_model(folder_or_builtin(model));
    CHECK(j["ids"].get<std::vector<int>>() == m.tokenizer.encode(j["prompt"].get<std::string>()));
    CHECK(std::count(j["ids"].begin(), j["ids"].end(), j["ids"][0]) == 1);
    CHECK(j["ids"][0] == m.tokenizer.encode("<|endoftext|>").at(0));

    // The last turn the assistant's: no generation prompt, the conversation as it stands.
    write(dir / "done.json", R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})");
    std::ostringstream out2, err2;
    REQUIRE(run_model({model, "--chat", (dir / "done.json").string(), "--json"}, out2, err2) == 0);
    CHECK(nlohmann::json::parse(out2.str())["prompt"] == "<|endoftext|>[user] hi\n[assistant] hello\n");

    const auto error = [&](std::vector<std::string> args) {
        std::ostringstream o, e;
        CHECK(run_model(args, o, e) == kExitBadInput);
        CHECK(o.str().empty());
        return e.str();
    };
    write(dir / "system.json", R"([{"role": "system", "content": "be brief"}])");
    CHECK(error({model, "--chat", (dir / "system.json").string()}) ==
          model + "/tokenizer_config.json: chat_template: the template refused the conversation: no system turns\n");
    write(dir / "bad.json", "[{\"role\": \"user\",\n \"content\": }]");
    CHECK(error({model, "--chat", (dir / "bad.json").string()}) == "attnviz run: " + (dir / "bad.json").string() + ":2:13: malformed JSON\n");
    write(dir / "norole.json", R"([{"role": "user", "content": "a"}, {"content": "b"}])");
    CHECK(error({model, "--chat", (dir / "norole.json").string()}) ==
          (dir / "norole.json").string() + ": [1].role: expected a string (system, user, assistant, tool)\n");
    CHECK(error({"tiny-circuits", "--chat", chat}) == "tiny-circuits: --chat: the model has no chat template (a base model: give --text)\n");
    CHECK(attn::test::contains(error({model, "--chat", chat, "--text", "x"}), "--text, --ids, --chat or --image, one of them"));
    config["chat_template"] = "{% for m in messages %}{{ m.role | nosuch }}{% endfor %}";
    write(dir / "model" / "tokenizer_config.json", config.dump());
    CHECK(error({model, "--chat", chat}) == model + "/tokenizer_config.json: chat_template: line 1: unknown filter 'nosuch'\n");
    fs::remove_all(dir);
}
#endif
