// The chat templates' Jinja (jinja.hpp): first its rules one by one, each with the text Jinja2
// prints for it; then every real template of tests/model/chat_templates/ on every conversation
// there, against what Hugging Face's @huggingface/jinja rendered for the same variables
// (tests/model/jinja_reference.mjs, written by the build); then what a bad or hostile template
// gets: an error naming the line, never a crash or a hang.
#include "jinja.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace attn;
using Json = nlohmann::ordered_json;

namespace {

std::tm fixed_now() {  // the reference's instant: 2026-11-28 09:05:07, a Saturday
    std::tm t{};
    t.tm_year = 2026 - 1900, t.tm_mon = 10, t.tm_mday = 28, t.tm_hour = 9, t.tm_min = 5, t.tm_sec = 7, t.tm_wday = 6;
    t.tm_yday = 331;
    return t;
}

std::string render(const std::string& source, const Json& vars = Json::object()) {
    TemplateOptions o;
    o.now = fixed_now();
    return ChatTemplate(source).render(vars, o);
}

std::string render_error(const std::string& source, const Json& vars = Json::object()) {
    try {
        render(source, vars);
    } catch (const TemplateError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "missing " << path << " (the build writes it; npm packages: scripts/setup.sh)");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("jinja: text, tags and Jinja2's whitespace (trim_blocks, lstrip_blocks, '-', '+')") {
    CHECK(render("Hello {{ name }}!", {{"name", "Ada"}}) == "Hello Ada!");
    CHECK(render("a{# note #}b") == "ab");
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: the indent before it too.
    CHECK(render("{% if true %}\n  yes\n{% endif %}\n") == "  yes\n");
    CHECK(render("    {% if true %}x{% endif %}") == "x");
    CHECK(render("a  {% if true %}x{% endif %}") == "a  x");  // not at a line's start: kept
    CHECK(render("    {%+ if true %}x{% endif %}") == "    x");
    CHECK(render("a\n  {{ 1 }}\n") == "a\n  1");  // {{ }} is not a block; one trailing newline goes
    CHECK(render("a   {{- 'b' -}}   c") == "abc");
    CHECK(render("{%- if true -%}\n\n  x  \n{%- endif %}") == "x");
    CHECK(render("{{ 'a' }}\n{# c #}\nb") == "a\nb");
    CHECK(render("{% raw %}{{ not parsed }}{% endraw %}") == "{{ not parsed }}");
    CHECK(render("{{ {'a': {'b': 1}}['a']['b'] }}") == "1");  // a }} inside a dict does not close the tag
}

TEST_CASE("jinja: values print as Python prints them") {
    CHECK(render("{{ none }} {{ true }} {{ False }} {{ 1 }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 0.0001 }} {{ 1e-5 }}") ==
          "None True False 1 1.0 0.30000000000000004 1e+20 0.0001 1e-05");
    CHECK(render("{{ [1, 'a', \"it's\", none, [true]] }}") == "[1, 'a', \"it's\", None, [True]]");
    CHECK(render("{{ {'k': 'v', 'n': 2} }}") == "{'k': 'v', 'n': 2}");
    CHECK(render("{{ undefined_name }}|{{ x.y if x is defined }}") == "|");
    CHECK(render("{{ 'a' 'b' }}") == "ab");
    CHECK(render("{{ '\\u00e9\\n\\t\\x41' }}") == "\xC3\xA9\n\tA");
}

TEST_CASE("jinja: operators, in Jinja2's precedence") {
    CHECK(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }}") ==
          "7 9 1024 3 -4 2 3.5");
    CHECK(render("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2] }}") == "a1None ababab [1, 2]");
    CHECK(render("{{ 1 < 2 and 'x' or 'y' }} {{ not 1 == 2 }} {{ 'b' in 'abc' }} {{ 3 not in [1, 2] }}") == "x True True True");
    CHECK(render("{{ 'yes' if 0 else 'no' }}|{{ 'yes' if 0 }}|") == "no||");
    CHECK(render("{{ [1, 2, 3] | length - 1 }}") == "2");  // a filter binds tighter than -
    CHECK(render("{{ -3 | abs }}") == "3");
    CHECK(render("{{ x is defined and x > 1 }}", {{"x", 2}}) == "True");
    CHECK(render("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }}") == "True True True");
}

TEST_CASE("jinja: subscripts, slices, attributes and methods") {
    Json vars = {{"m", {{"role", "user"}, {"content", "  Hi there  "}}}, {"l", {1, 2, 3, 4}}};
    CHECK(render("{{ m.role }} {{ m['role'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }}", vars) == "user user 1 4 2");
    CHECK(render("{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ 'hello'[1:3] }} {{ 'héllo'[::-1] }}", vars) ==
          "[2, 3, 4] [1, 2, 3] [4, 3, 2, 1] [1, 3] el oll\xC3\xA9h");
    CHECK(render("[{{ m.content.strip() }}] [{{ m.content.lstrip() }}] [{{ 'xxaxx'.strip('x') }}]", vars) == "[Hi there] [Hi there  ] [a]");
    CHECK(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}") ==
          "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
    CHECK(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'Hello'.upper() }} {{ 'Hello'.lower() }}") ==
          "True True HELLO hello");
    CHECK(render("{{ 'a-b-c'.replace('-', '+', 1) }} {{ 'hello world'.title() }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.count('bc') }}") ==
          "a+b-c Hello World 2 2");
    CHECK(render("{{ m.get('role') }} {{ m.get('x', 'none') }} {{ m.keys() | list }} {% for k, v in m.items() %}{{ k }}={{ v | trim }};{% endfor %}", vars) ==
          "user none ['role', 'content'] role=user;content=Hi there;");
    CHECK(render("{{ m.missing is defined }} {{ l[9] is defined }}", vars) == "False False");
    CHECK(render("{{ 'a' in nothing }} {% for x in nothing %}x{% endfor %}{{ nothing | length }}") == "False 0");  // Undefined iterates as empty
}

TEST_CASE("jinja: filters") {
    Json vars = {{"msgs", Json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}})}};
    CHECK(render("{{ '  x ' | trim }}|{{ 'abc' | length }}|{{ x | default('d') }}|{{ '' | default('d', true) }}|{{ 'x' | upper }}") ==
          "x|3|d|d|X");
    CHECK(render("{{ msgs | selectattr('role', 'equalto', 'user') | list | length }} {{ msgs | map(attribute='role') | join(', ') }}", vars) ==
          "1 system, user");
    CHECK(render("{{ msgs | rejectattr('role', 'eq', 'system') | map(attribute='content') | first }}", vars) == "U");
    CHECK(render("{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 1] | unique | list }} {{ [1, 2] | sum }} {{ [4, 9] | max }}") ==
          "[1, 2, 3] [3, 2, 1] [1, 2] 3 9");
    CHECK(render("{{ {'b': 1, 'a': 2} | dictsort }} {{ 'x' | first }} {{ [1, 2] | last }} {{ 'ab' | reverse }} {{ '3' | int + 1 }} {{ '2.5' | float }}") ==
          "[['a', 2], ['b', 1]] x 2 ba 4 2.5");
    CHECK(render("{{ '<a & b>' | e }} {{ 'x\ny' | indent(2) }}|{{ 'x\ny' | indent(2, true) }} {{ 2.567 | round(1) }} {{ 'a b  c' | wordcount }}") ==
          "&lt;a &amp; b&gt; x\n  y|  x\n  y 2.6 3");
    CHECK(render("{{ [1, 2, 3] | select('odd') | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ ['a', 'b'] | map('upper') | list }}") ==
          "[1, 3] [2] ['A', 'B']");
}

TEST_CASE("jinja: tojson writes json.dumps' text, keys in their order") {
    Json vars = {{"t", {{"name", "f"}, {"b", true}, {"n", nullptr}, {"x", 1.5}, {"l", {1, "é\"\n"}}, {"e", Json::object()}}}};
    CHECK(render("{{ t | tojson }}", vars) == "{\"name\": \"f\", \"b\": true, \"n\": null, \"x\": 1.5, \"l\": [1, \"\xC3\xA9\\\"\\n\"], \"e\": {}}");
    CHECK(render("{{ t.l | tojson(indent=2) }}", vars) == "[\n  1,\n  \"\xC3\xA9\\\"\\n\"\n]");
    CHECK(render("{{ {'a': [1, {'b': 2}]} | tojson(indent=4) }}") == "{\n    \"a\": [\n        1,\n        {\n            \"b\": 2\n        }\n    ]\n}");
}

TEST_CASE("jinja: tests") {
    CHECK(render("{{ 'a' is string }} {{ 1 is number }} {{ 1.5 is float }} {{ 2 is integer }} {{ none is none }} {{ x is undefined }}") ==
          "True True True True True True");
    CHECK(render("{{ [1] is iterable }} {{ {} is mapping }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }}") ==
          "True True True True True False");
    CHECK(render("{{ 1 is not none }} {{ true is true }} {{ 0 is false }} {{ 'A' is upper }} {{ 'b' is in 'abc' }} {{ 2 is gt 1 }}") ==
          "True True False True True True");
}

TEST_CASE("jinja: statements: if, for and loop, set and namespace, macros, call, filter blocks") {
    CHECK(render("{% if 0 %}a{% elif 1 %}b{% else %}c{% endif %}") == "b");
    CHECK(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}") ==
          "103TrueFalse3;212FalseFalse3;321FalseTrue3;");
    CHECK(render("{% for x in [1, 2, 3] if x != 2 %}{{ x }}{{ loop.length }}{% endfor %}") == "1232");
    CHECK(render("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
    CHECK(render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "13");
    CHECK(render("{% for x in 'ab' %}{{ loop.previtem }}{{ x }}{{ loop.nextitem }}|{% endfor %}") == "ab|ab|");  // undefined at either end prints nothing
    CHECK(render("{% for x in [1, 2, 3] %}{{ loop.cycle('o', 'e') }}{% endfor %}") == "oeo");
    CHECK(render("{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}") == "37");
    CHECK(render("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}") == "xy");
    // A set in a loop stays in the loop; a namespace carries it out.
    CHECK(render("{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}") == "0");
    CHECK(render("{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}") == "3");
    CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t %}x{{ a }}{% endset %}{{ t }} {% set u | upper %}y{% endset %}{{ u }}") == "12 x1 Y");
    CHECK(render("{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}") == "[1B][12][43]");
    CHECK(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}") == "321");
    CHECK(render("{% macro box() %}<{{ caller() }}>{% endmacro %}{% call box() %}in{% endcall %}") == "<in>");
    CHECK(render("{% macro row(x) %}{{ caller(x * 2) }}{% endmacro %}{% call(v) row(4) %}={{ v }}{% endcall %}") == "=8");
    CHECK(render("{% filter upper %}abc{% endfilter %}") == "ABC");
    // A macro defined in a loop and kept past it reads the template's scope, not the loop's (gone).
    CHECK(render("{% set ns = namespace(f=0) %}{% for x in [1] %}{% macro m() %}[{{ x }}]{% endmacro %}{% set ns.f = m %}{% endfor %}"
                 "{{ ns.f() }}") == "[]");
    CHECK(render("{% generation %}said{% endgeneration %}") == "said");
    CHECK(render("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ dict(a=1)['a'] }}") == "[0, 1, 2] [1, 3, 5] 1");
    CHECK(render("{{ strftime_now('%d %b %Y') }} {{ strftime_now('%-d %B %Y, %A %H:%M') }}") ==
          "28 Nov 2026 28 November 2026, Saturday 09:05");
}

TEST_CASE("jinja: every real template, every conversation, as @huggingface/jinja renders it") {
    const std::string dir = ATTN_CHAT_TEMPLATES;
    const Json cases = Json::parse(read_text_file(dir + "/conversations.json"));
    const Json specials = Json::parse(read_text_file(dir + "/specials.json"));
    const Json renders = Json::parse(read_text_file(std::string(ATTN_CHAT_TEMPLATE_REFS) + "/renders.json"));
    REQUIRE(renders.size() >= 100);
    int rendered = 0, raised = 0;
    for (const Json& r : renders) {
        const std::string file = r["template"], name = r["case"];
        CAPTURE(file);
        CAPTURE(name);
        const Json* c = nullptr;
        for (const Json& x : cases)
            if (x["name"] == name) c = &x;
        REQUIRE(c);
        // The reference's variables (jinja_reference.mjs): the case, tools and documents null, the
        // special tokens that are not null, then the case's extra.
        Json vars = {{"messages", (*c)["messages"]}, {"add_generation_prompt", (*c)["add_generation_prompt"]},
                     {"tools", nullptr}, {"documents", nullptr}};
        for (const auto& [k, v] : specials[file].items())
            if (!v.is_null()) vars[k] = v;
        if (c->contains("extra"))
            for (const auto& [k, v] : (*c)["extra"].items()) vars[k] = v;
        const std::string source = read_text_file(dir + "/" + file);
        if (r.contains("output")) {
            CHECK(render(source, vars) == r["output"].get<std::string>());
            ++rendered;
        } else if (file == "meetkai--functionary-medium-v3.2.jinja" && name == "tools") {
            // @huggingface/jinja 0.5.11 cannot unpack a tuple literal in a for loop ("Cannot unpack
            // non-iterable type: TupleValue"); Jinja2 can, and so does this engine.
            const std::string out = render(source, vars);
            CHECK(out.find("get_current_weather") != std::string::npos);
        } else {
            // An error there is an error here (raise_exception's own message, word for word).
            const std::string want = r["error"];
            const std::string got = render_error(source, vars);
            CHECK(got != "(no error)");
            if (want.find("Conversation roles") != std::string::npos || want.find("not supported") != std::string::npos)
                CHECK(got == want);
            ++raised;
        }
    }
    MESSAGE(rendered << " renders equal @huggingface/jinja's, " << raised << " errors where it has one");
    CHECK(rendered >= 100);
}

TEST_CASE("jinja: a bad template names its line; a hostile one ends in an error") {
    CHECK(render_error("a\n{% if x %}") == "line 2: no {% endif %} for this if");
    CHECK(render_error("{% endfor %}") == "line 1: {% endfor %} with nothing open");
    CHECK(render_error("{{ x | nosuch }}") == "line 1: unknown filter 'nosuch'");
    CHECK(render_error("{{ x is nosuch }}") == "line 1: unknown test 'nosuch'");
    CHECK(render_error("\n\n{% frobnicate %}") == "line 3: unknown statement {% frobnicate %}");
    CHECK(render_error("{{ 'abc }}") == "line 1: a string with no closing quote");
    CHECK(render_error("{{ 1 +") == "line 1: a tag {{ with no }}");
    CHECK(render_error("{{ raise_exception('Only user and assistant roles') }}") == "Only user and assistant roles");
    CHECK(render_error("{{ x.y }}") == "line 1: 'x' is undefined (reading .y)");
    CHECK(render_error("{{ 1 / 0 }}") == "line 1: division by zero");
    CHECK(render_error("{{ 'a' + 1 }}") == "line 1: cannot add string + int");
    CHECK(render_error("{% set x.y = 1 %}", {{"x", {{"y", 0}}}}) == "line 1: 'x' is not a namespace: cannot set .y");
    CHECK(render_error("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}").find("nested more than") != std::string::npos);
    CHECK(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("calls nested more than 100 deep") != std::string::npos);
    CHECK(render_error("{% for i in range(100000000) %}{% endfor %}").find("range: more than") != std::string::npos);
    CHECK(render_error("{{ 'x' * 10000000 }}").find("a repeat of more than") != std::string::npos);
    TemplateOptions small;
    small.max_output = 100;
    CHECK_THROWS_WITH_AS(ChatTemplate("{% for i in range(1000) %}xx{% endfor %}").render(Json::object(), small),
                         "line 1: the output passed 100 B", TemplateError);
    small.max_steps = 10000;
    CHECK_THROWS_WITH_AS(ChatTemplate("{% for i in range(999) %}{% for j in range(999) %}{% endfor %}{% endfor %}").render(Json::object(), small),
                         "line 1: the template ran more than 10000 steps", TemplateError);
    // raised is set only for the template's own exception
    try {
        render("{{ raise_exception('no') }}");
    } catch (const TemplateError& e) {
        CHECK(e.raised);
    }
    try {
        render("{{ 1 / 0 }}");
    } catch (const TemplateError& e) {
        CHECK(!e.raised);
    }
}
