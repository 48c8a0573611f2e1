// jinja.cpp: the chat templates' Jinja (jinja.hpp). Four passes, each in its section:
//   1. lex     the source → text and tag tokens, with Jinja2's whitespace rules applied
//   2. parse   tokens → statements (Node) holding expressions (Expr)
//   3. values  Value: Jinja's data as Python holds it (None, True, 1, 1.5, 'a', [..], {..})
//   4. render  statements → text, expressions → values, in a chain of scopes
//
// [SECTION] Values
// [SECTION] Lexing
// [SECTION] Parsing
// [SECTION] Printing values (str, repr, tojson)
// [SECTION] Rendering: expressions
// [SECTION] Rendering: filters, tests, methods, globals
// [SECTION] Rendering: statements
// [SECTION] The template
#include "jinja.hpp"

#include "unicode.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attn {

namespace {

// [SECTION] Values -------------------------------------------------------------------------------

struct Value;
struct Renderer;
using ValueList = std::vector<Value>;
struct ValueDict;
struct Args;
using Builtin = std::function<Value(Renderer&, Args&)>;

struct Value {
    enum class Kind : unsigned char { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
    Kind kind = Kind::Undefined;
    bool b = false;
    long long i = 0;
    double f = 0;
    std::string s;                            // String; the name of an Undefined (for its error)
    std::shared_ptr<ValueList> list;          // List (tuples too)
    std::shared_ptr<ValueDict> dict;          // Dict (namespace() too)
    std::shared_ptr<const Builtin> fn;        // Function

    static Value none() { return with(Kind::None); }
    static Value boolean(bool v) { Value r = with(Kind::Bool); r.b = v; return r; }
    static Value integer(long long v) { Value r = with(Kind::Int); r.i = v; return r; }
    static Value real(double v) { Value r = with(Kind::Float); r.f = v; return r; }
    static Value string(std::string v) { Value r = with(Kind::String); r.s = std::move(v); return r; }
    static Value of_list(ValueList v) { Value r = with(Kind::List); r.list = std::make_shared<ValueList>(std::move(v)); return r; }
    static Value function(Builtin f) { Value r = with(Kind::Function); r.fn = std::make_shared<const Builtin>(std::move(f)); return r; }
    static Value undefined(std::string name) { Value r; r.s = std::move(name); return r; }
    static Value with(Kind k) { Value r; r.kind = k; return r; }

    bool is(Kind k) const { return kind == k; }
    bool defined() const { return kind != Kind::Undefined; }
    bool number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    double as_double() const { return kind == Kind::Float ? f : kind == Kind::Bool ? b : static_cast<double>(i); }
};

struct ValueDict {
    std::vector<std::pair<std::string, Value>> entries;  // in the order given
    bool is_namespace = false;
    const Value* find(std::string_view key) const {
        for (const auto& [k, v] : entries)
            if (k == key) return &v;
        return nullptr;
    }
    void set(const std::string& key, Value v) {
        for (auto& [k, old] : entries)
            if (k == key) { old = std::move(v); return; }
        entries.emplace_back(key, std::move(v));
    }
};

Value of_dict(ValueDict d) {
    Value r = Value::with(Value::Kind::Dict);
    r.dict = std::make_shared<ValueDict>(std::move(d));
    return r;
}

Value from_json(const nlohmann::ordered_json& j) {
    using J = nlohmann::ordered_json::value_t;
    switch (j.type()) {
    case J::null: return Value::none();
    case J::boolean: return Value::boolean(j.get<bool>());
    case J::number_integer: return Value::integer(j.get<long long>());
    case J::number_unsigned: return Value::integer(static_cast<long long>(j.get<unsigned long long>()));
    case J::number_float: return Value::real(j.get<double>());
    case J::string: return Value::string(j.get<std::string>());
    case J::array: {
        ValueList l;
        for (const auto& e : j) l.push_back(from_json(e));
        return Value::of_list(std::move(l));
    }
    case J::object: {
        ValueDict d;
        for (const auto& [k, v] : j.items()) d.entries.emplace_back(k, from_json(v));
        return of_dict(std::move(d));
    }
    default: return Value::none();  // binary, discarded: never in parsed JSON
    }
}

bool truthy(const Value& v) {
    switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s.empty();
    case Value::Kind::List: return !v.list->empty();
    case Value::Kind::Dict: return !v.dict->entries.empty();
    case Value::Kind::Function: return true;
    }
    return false;
}

const char* type_name(const Value& v) {
    switch (v.kind) {
    case Value::Kind::Undefined: return "undefined";
    case Value::Kind::None: return "none";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "string";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return v.dict->is_namespace ? "namespace" : "dict";
    case Value::Kind::Function: return "function";
    }
    return "value";
}

[[noreturn]] void fail(int line, const std::string& what) { throw TemplateError("line " + std::to_string(line) + ": " + what); }

// [SECTION] Lexing -------------------------------------------------------------------------------

struct Token {
    enum class Kind : unsigned char { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
    Kind kind;
    std::string text;  // the text, name, string's value, number's digits or operator
    int line;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
public:
    explicit Lexer(std::string_view src) : src_(src) {}

    std::vector<Token> run() {
        bool strip_next = false;    // the tag before ended with '-'
        bool trim_newline = false;  // or was a block or comment (trim_blocks)
        while (pos_ < src_.size()) {
            const size_t open = find_tag(pos_);
            size_t begin = pos_;
            if (strip_next) {
                while (begin < open && is_space(src_[begin])) ++begin;
            } else if (trim_newline) {
                begin += src_.substr(begin, 1) == "\n" ? 1 : src_.substr(begin, 2) == "\r\n" ? 2 : 0;
            }
            strip_next = trim_newline = false;
            const bool line_start = begin == 0 || src_[begin - 1] == '\n';
            std::string text(src_.substr(begin, open - begin));
            if (open == src_.size()) {
                push_text(std::move(text));
                break;
            }
            const char kind = src_[open + 1];  // '{', '%' or '#'
            const char mark = open + 2 < src_.size() ? src_[open + 2] : '\0';
            if (mark == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (kind != '{' && mark != '+') {
                // lstrip_blocks: the spaces from the line's start to a block or comment tag
                const size_t nl = text.rfind('\n');
                const size_t from = nl == std::string::npos ? 0 : nl + 1;
                if ((nl != std::string::npos || line_start) &&
                    std::all_of(text.begin() + static_cast<long>(from), text.end(), [](char c) { return is_space(c) && c != '\n'; }))
                    text.erase(from);
            }
            count_lines(pos_, open);
            push_text(std::move(text));
            pos_ = open + 2 + (mark == '-' || mark == '+');
            if (kind == '#') {
                size_t close = src_.find("#}", pos_);
                if (close == std::string_view::npos) fail(line_, "a comment {# with no #}");
                strip_next = close > pos_ && src_[close - 1] == '-';
                trim_newline = true;
                count_lines(pos_, close + 2);
                pos_ = close + 2;
                continue;
            }
            const bool block = kind == '%';
            tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
            const size_t first = tokens_.size();
            strip_next = lex_tag(block);
            trim_newline = block;
            if (block && tokens_.size() == first + 2 && tokens_[first].text == "raw") lex_raw(first, strip_next);
        }
        tokens_.push_back({Token::Kind::End, "", line_});
        return std::move(tokens_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t p = src_.find('{', from); p != std::string_view::npos; p = src_.find('{', p + 1))
            if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
        return src_.size();
    }
    void count_lines(size_t from, size_t to) { line_ += static_cast<int>(std::count(src_.begin() + from, src_.begin() + to, '\n')); }
    void push_text(std::string text) {
        if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), line_});
    }

    // The tokens inside {{ … }} or {% … %}; true when the closing mark had a '-'.
    bool lex_tag(bool block) {
        int depth = 0;  // brackets open: a }} inside a dict literal does not close the tag
        const char closer = block ? '%' : '}';
        while (true) {
            while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
            if (pos_ >= src_.size()) fail(line_, block ? "a tag {% with no %}" : "a tag {{ with no }}");
            const char c = src_[pos_];
            const bool dash = c == '-' && src_.substr(pos_ + 1, 2) == std::string{closer, '}'};
            if (depth == 0 && (dash || (c == closer && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}'))) {
                tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
                pos_ += dash ? 3 : 2;
                return dash;
            }
            if (is_name_start(c)) {
                size_t e = pos_;
                while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
                tokens_.push_back({Token::Kind::Name, std::string(src_.substr(pos_, e - pos_)), line_});
                pos_ = e;
            } else if (is_digit(c)) {
                lex_number();
            } else if (c == '\'' || c == '"') {
                lex_string(c);
            } else {
                static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", "<=", ">="};
                std::string op(1, c);
                for (std::string_view two : kTwo)
                    if (src_.substr(pos_, 2) == two) op = two;
                if (op.size() == 1 && std::string_view("+-*/%~<>()[]{}.,:|=").find(c) == std::string_view::npos)
                    fail(line_, std::string("unexpected character '") + c + "'");
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                tokens_.push_back({Token::Kind::Op, op, line_});
                pos_ += op.size();
            }
        }
    }

    void lex_number() {
        size_t e = pos_;
        bool real = false;
        while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
        if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
            real = true;
            for (++e; e < src_.size() && (is_digit(src_[e]) || src_[e] == '_');) ++e;
        }
        if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
            size_t k = e + 1;
            if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
            if (k < src_.size() && is_digit(src_[k])) {
                real = true;
                for (e = k; e < src_.size() && is_digit(src_[e]);) ++e;
            }
        }
        std::string digits;
        for (char d : src_.substr(pos_, e - pos_))
            if (d != '_') digits += d;
        tokens_.push_back({real ? Token::Kind::Float : Token::Kind::Int, digits, line_});
        pos_ = e;
    }

    void lex_string(char quote) {
        std::string out;
        size_t p = pos_ + 1;
        while (true) {
            if (p >= src_.size()) fail(line_, "a string with no closing quote");
            char c = src_[p++];
            if (c == quote) break;
            if (c == '\n') ++line_;
            if (c != '\\') { out += c; continue; }
            if (p >= src_.size()) fail(line_, "a string with no closing quote");
            char e = src_[p++];
            switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case 'b': out += '\b'; break;
            case 'a': out += '\a'; break;
            case '0': out += '\0'; break;
            case '\\': case '\'': case '"': out += e; break;
            case '\n': ++line_; break;  // a line continued
            case 'x': case 'u': case 'U': {
                const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                unsigned cp = 0;
                auto [end, ec] = std::from_chars(src_.data() + p, src_.data() + std::min(src_.size(), p + n), cp, 16);
                if (ec != std::errc() || end != src_.data() + p + n || cp > 0x10FFFF) fail(line_, std::string("a bad \\") + e + " escape in a string");
                append_utf8(out, static_cast<char32_t>(cp));
                p += n;
                break;
            }
            default: out += '\\'; out += e;  // Python keeps an unknown escape as written
            }
        }
        tokens_.push_back({Token::Kind::String, std::move(out), line_});
        pos_ = p;
    }

    // {% raw %}…{% endraw %}: the text between, as written.
    void lex_raw(size_t first, bool& strip_next) {
        tokens_.resize(first - 1);  // drop {% raw %}
        size_t p = pos_;
        while (true) {
            size_t open = src_.find("{%", p);
            if (open == std::string_view::npos) fail(line_, "{% raw %} with no {% endraw %}");
            size_t k = open + 2 + (open + 2 < src_.size() && src_[open + 2] == '-');
            while (k < src_.size() && is_space(src_[k])) ++k;
            if (src_.substr(k, 6) != "endraw") { p = open + 2; continue; }
            k += 6;
            while (k < src_.size() && is_space(src_[k])) ++k;
            const bool dash = k < src_.size() && src_[k] == '-';
            if (src_.substr(k + dash, 2) != "%}") { p = open + 2; continue; }
            std::string text(src_.substr(pos_, open - pos_));
            if (!strip_next && !text.empty() && text[0] == '\n') text.erase(0, 1);  // trim_blocks
            if (strip_next) text.erase(0, static_cast<size_t>(std::find_if_not(text.begin(), text.end(), is_space) - text.begin()));
            if (src_[open + 2] == '-') while (!text.empty() && is_space(text.back())) text.pop_back();
            count_lines(pos_, k + dash + 2);
            push_text(std::move(text));
            pos_ = k + dash + 2;
            strip_next = dash;
            return;
        }
    }

    std::string_view src_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

// [SECTION] Parsing ------------------------------------------------------------------------------

struct Expr {
    enum class Kind : unsigned char {
        Literal, Name, List, Tuple, Dict, Attr, Item, Slice, Call, Filter, Test, Neg, Pos, Not, And, Or, Cond, Binary, Compare
    };
    Kind kind;
    int line;
    Value value;           // Literal
    std::string name;      // Name, Attr's attribute, Filter's and Test's name, Binary's and Compare's operator
    std::vector<std::unique_ptr<Expr>> args;  // operands (Filter and Test: the subject first; Slice: null = absent)
    std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;  // Call, Filter, Test
    bool negated = false;  // Test: `is not`
};
using ExprPtr = std::unique_ptr<Expr>;

}  // namespace

struct ChatTemplate::Node {
    enum class Kind : unsigned char { Body, Text, Print, If, For, Break, Continue, Set, SetBlock, Macro, CallBlock, FilterBlock };
    Kind kind = Kind::Body;
    int line = 0;
    std::string text;                          // Text; Set's namespace attribute; Macro's and SetBlock's name
    std::vector<std::string> targets;          // For, Set (more than one: unpacked); Macro's and CallBlock's parameters
    std::vector<ExprPtr> defaults;             // Macro's and CallBlock's parameters' defaults (null: none)
    ExprPtr expr;                              // Print, If's condition, For's sequence, Set's value, CallBlock's call
    ExprPtr cond;                              // For's `if`
    std::vector<ExprPtr> filters;              // FilterBlock's, SetBlock's (subject null)
    std::vector<std::unique_ptr<Node>> body, orelse;
};

namespace {

using Node = ChatTemplate::Node;
using NodePtr = std::unique_ptr<Node>;

constexpr int kMaxNesting = 100;  // brackets and blocks inside each other, while parsing

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    NodePtr parse() {
        auto root = std::make_unique<Node>();
        parse_body(root->body, {});
        return root;
    }

private:
    const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
    const Token& next() { const Token& t = peek(); if (i_ < t_.size() - 1) ++i_; return t; }
    bool at_op(std::string_view op) const { return peek().kind == Token::Kind::Op && peek().text == op; }
    bool at_name(std::string_view n) const { return peek().kind == Token::Kind::Name && peek().text == n; }
    bool take_op(std::string_view op) { if (!at_op(op)) return false; next(); return true; }
    bool take_name(std::string_view n) { if (!at_name(n)) return false; next(); return true; }
    void expect_op(std::string_view op) {
        if (!take_op(op)) fail(peek().line, "expected '" + std::string(op) + "', got " + shown(peek()));
    }
    std::string expect_name() {
        if (peek().kind != Token::Kind::Name) fail(peek().line, "expected a name, got " + shown(peek()));
        return next().text;
    }
    void expect_block_end() {
        if (peek().kind != Token::Kind::BlockEnd) fail(peek().line, "expected %}, got " + shown(peek()));
        next();
    }
    static std::string shown(const Token& t) {
        switch (t.kind) {
        case Token::Kind::End: return "the end of the template";
        case Token::Kind::BlockEnd: return "%}";
        case Token::Kind::VarEnd: return "}}";
        case Token::Kind::Text: return "text";
        case Token::Kind::String: return "a string";
        default: return "'" + t.text + "'";
        }
    }
    ExprPtr make(Expr::Kind k, int line) { auto e = std::make_unique<Expr>(); e->kind = k; e->line = line; return e; }
    struct Depth {
        Depth(int& d, int line) : d(d) { if (++d > kMaxNesting) fail(line, "nested more than " + std::to_string(kMaxNesting) + " deep"); }
        ~Depth() { --d; }
        int& d;
    };

    // Statements up to one of `ends` ({% endif %}, {% else %}, …): that word ("" at the end).
    std::string parse_body(std::vector<NodePtr>& out, std::initializer_list<std::string_view> ends) {
        Depth guard(depth_, peek().line);
        while (true) {
            const Token& t = peek();
            if (t.kind == Token::Kind::End) return "";
            if (t.kind == Token::Kind::Text) {
                auto n = std::make_unique<Node>();
                n->kind = Node::Kind::Text, n->line = t.line, n->text = t.text;
                out.push_back(std::move(n));
                next();
            } else if (t.kind == Token::Kind::VarBegin) {
                next();
                auto n = std::make_unique<Node>();
                n->kind = Node::Kind::Print, n->line = t.line, n->expr = parse_expression();
                if (peek().kind != Token::Kind::VarEnd) fail(peek().line, "expected }}, got " + shown(peek()));
                next();
                out.push_back(std::move(n));
            } else {  // BlockBegin
                const Token& word = peek(1);
                if (word.kind != Token::Kind::Name) fail(word.line, "expected a statement after {%, got " + shown(word));
                for (std::string_view e : ends)
                    if (word.text == e) {
                        next(), next();
                        return word.text;
                    }
                next();
                out.push_back(parse_statement());
            }
        }
    }

    void parse_to(std::vector<NodePtr>& body, std::string_view end, int line) {
        if (parse_body(body, {end}) != end) fail(line, "no {% " + std::string(end) + " %} for this block");
        expect_block_end();
    }

    NodePtr parse_statement() {
        const Token& word = next();
        if (word.text.rfind("end", 0) == 0 || word.text == "else" || word.text == "elif")
            fail(word.line, "{% " + word.text + " %} with nothing open");
        auto n = std::make_unique<Node>();
        n->line = word.line;
        const std::string& w = word.text;
        if (w == "if") {
            parse_if(*n);
        } else if (w == "for") {
            n->kind = Node::Kind::For;
            n->targets = parse_targets();
            if (!take_name("in")) fail(peek().line, "expected 'in' in the for loop, got " + shown(peek()));
            n->expr = parse_or_condition(false);
            if (take_name("if")) n->cond = parse_or_condition(false);
            expect_block_end();
            std::string end = parse_body(n->body, {"else", "endfor"});
            if (end == "else") {
                expect_block_end();
                end = parse_body(n->orelse, {"endfor"});
            }
            if (end != "endfor") fail(n->line, "no {% endfor %} for this loop");
            expect_block_end();
        } else if (w == "break" || w == "continue") {
            n->kind = w == "break" ? Node::Kind::Break : Node::Kind::Continue;
            expect_block_end();
        } else if (w == "set") {
            parse_set(*n);
        } else if (w == "macro") {
            n->kind = Node::Kind::Macro;
            n->text = expect_name();
            parse_parameters(*n);
            expect_block_end();
            parse_to(n->body, "endmacro", n->line);
        } else if (w == "call") {
            n->kind = Node::Kind::CallBlock;
            if (at_op("(")) parse_parameters(*n);
            n->expr = parse_expression();
            if (n->expr->kind != Expr::Kind::Call) fail(n->line, "{% call %} needs a macro call");
            expect_block_end();
            parse_to(n->body, "endcall", n->line);
        } else if (w == "filter") {
            n->kind = Node::Kind::FilterBlock;
            do n->filters.push_back(parse_filter(nullptr)); while (take_op("|"));
            expect_block_end();
            parse_to(n->body, "endfilter", n->line);
        } else if (w == "generation") {
            // transformers' AssistantTracker marks the assistant's text for return_assistant_tokens_mask;
            // rendered, it is its body.
            n->kind = Node::Kind::Body;
            expect_block_end();
            parse_to(n->body, "endgeneration", n->line);
        } else {
            fail(word.line, "unknown statement {% " + w + " %}");
        }
        return n;
    }

    void parse_if(Node& n) {
        n.kind = Node::Kind::If;
        n.expr = parse_expression();
        expect_block_end();
        std::string end = parse_body(n.body, {"elif", "else", "endif"});
        if (end == "elif") {
            auto inner = std::make_unique<Node>();
            inner->line = peek().line;
            parse_if(*inner);  // reads to the shared {% endif %}
            n.orelse.push_back(std::move(inner));
            return;
        }
        if (end == "else") {
            expect_block_end();
            end = parse_body(n.orelse, {"endif"});
        }
        if (end != "endif") fail(n.line, "no {% endif %} for this if");
        expect_block_end();
    }

    void parse_set(Node& n) {
        n.kind = Node::Kind::Set;
        n.targets.push_back(expect_name());
        if (take_op(".")) {
            n.text = expect_name();  // ns.attr
        } else {
            while (take_op(",")) n.targets.push_back(expect_name());
        }
        if (take_op("=")) {
            n.expr = parse_tuple_expression();
            expect_block_end();
            return;
        }
        if (!n.text.empty() || n.targets.size() != 1) fail(n.line, "expected '=' in {% set %}");
        n.kind = Node::Kind::SetBlock;  // {% set x %}…{% endset %}, with filters: {% set x | trim %}
        while (take_op("|")) n.filters.push_back(parse_filter(nullptr));
        expect_block_end();
        parse_to(n.body, "endset", n.line);
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> names;
        const bool paren = take_op("(");
        do names.push_back(expect_name()); while (take_op(","));
        if (paren) expect_op(")");
        return names;
    }

    void parse_parameters(Node& n) {
        expect_op("(");
        while (!take_op(")")) {
            n.targets.push_back(expect_name());
            n.defaults.push_back(take_op("=") ? parse_expression() : nullptr);
            if (!at_op(")")) expect_op(",");
        }
    }

    // [expressions, loosest first: Jinja2's parser.py order]
    ExprPtr parse_tuple_expression() {  // a, b (a tuple without brackets)
        const int line = peek().line;
        ExprPtr first = parse_expression();
        if (!at_op(",")) return first;
        auto t = make(Expr::Kind::Tuple, line);
        t->args.push_back(std::move(first));
        while (take_op(",") && peek().kind != Token::Kind::BlockEnd) t->args.push_back(parse_expression());
        return t;
    }

    ExprPtr parse_expression() { return parse_or_condition(true); }

    ExprPtr parse_or_condition(bool with_cond) {
        Depth guard(depth_, peek().line);
        ExprPtr e = parse_or();
        while (with_cond && at_name("if")) {
            auto c = make(Expr::Kind::Cond, next().line);
            c->args.push_back(parse_or());                              // the condition
            c->args.push_back(std::move(e));                            // then
            c->args.push_back(take_name("else") ? parse_or_condition(true) : nullptr);  // else (undefined)
            e = std::move(c);
        }
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (at_name("or")) {
            const int line = next().line;
            e = pair(Expr::Kind::Or, "", std::move(e), parse_and(), line);
        }
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (at_name("and")) {
            const int line = next().line;
            e = pair(Expr::Kind::And, "", std::move(e), parse_not(), line);
        }
        return e;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            Depth guard(depth_, peek().line);
            auto n = make(Expr::Kind::Not, next().line);
            n->args.push_back(parse_not());
            return n;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        ExprPtr e = parse_math1();
        while (true) {
            std::string op;
            const int line = peek().line;
            if (peek().kind == Token::Kind::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                                   peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
                op = next().text;
            } else if (at_name("in")) {
                next(), op = "in";
            } else if (at_name("not") && peek(1).kind == Token::Kind::Name && peek(1).text == "in") {
                next(), next(), op = "not in";
            } else {
                return e;
            }
            e = pair(Expr::Kind::Compare, op, std::move(e), parse_math1(), line);
        }
    }

    // An operator's node over two operands (`op` names a Binary's or Compare's operator).
    ExprPtr pair(Expr::Kind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
        auto b = make(kind, line);
        b->name = std::move(op);
        b->args.push_back(std::move(left));
        b->args.push_back(std::move(right));
        return b;
    }
    ExprPtr binary(ExprPtr left, std::string op, ExprPtr right, int line) {
        return pair(Expr::Kind::Binary, std::move(op), std::move(left), std::move(right), line);
    }

    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (at_op("+") || at_op("-")) {
            const Token& op = next();
            e = binary(std::move(e), op.text, parse_concat(), op.line);
        }
        return e;
    }

    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (at_op("~")) {
            const int line = next().line;
            e = binary(std::move(e), "~", parse_math2(), line);
        }
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const Token& op = next();
            e = binary(std::move(e), op.text, parse_pow(), op.line);
        }
        return e;
    }

    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (at_op("**")) {
            const int line = next().line;
            e = binary(std::move(e), "**", parse_unary(true), line);
        }
        return e;
    }

    ExprPtr parse_unary(bool with_filter) {
        Depth guard(depth_, peek().line);
        ExprPtr e;
        if (at_op("-") || at_op("+")) {
            const Token& op = next();
            e = make(op.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, op.line);
            e->args.push_back(parse_unary(false));
        } else {
            e = parse_postfix(parse_primary());
        }
        if (with_filter) e = parse_filters_and_tests(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = next();
        switch (t.kind) {
        case Token::Kind::String: {
            std::string s = t.text;
            while (peek().kind == Token::Kind::String) s += next().text;  // 'a' 'b' is 'ab', as in Python
            auto e = make(Expr::Kind::Literal, t.line);
            e->value = Value::string(std::move(s));
            return e;
        }
        case Token::Kind::Int: {
            auto e = make(Expr::Kind::Literal, t.line);
            long long v = 0;
            auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
            if (ec != std::errc()) fail(t.line, "the number " + t.text + " is too large");
            e->value = Value::integer(v);
            return e;
        }
        case Token::Kind::Float: {
            auto e = make(Expr::Kind::Literal, t.line);
            e->value = Value::real(std::strtod(t.text.c_str(), nullptr));
            return e;
        }
        case Token::Kind::Name: {
            auto e = make(Expr::Kind::Literal, t.line);
            if (t.text == "true" || t.text == "True") e->value = Value::boolean(true);
            else if (t.text == "false" || t.text == "False") e->value = Value::boolean(false);
            else if (t.text == "none" || t.text == "None") e->value = Value::none();
            else e->kind = Expr::Kind::Name, e->name = t.text;
            return e;
        }
        case Token::Kind::Op:
            if (t.text == "(") {
                if (take_op(")")) return make(Expr::Kind::Tuple, t.line);
                ExprPtr first = parse_expression();
                if (take_op(")")) return first;
                auto tuple = make(Expr::Kind::Tuple, t.line);
                tuple->args.push_back(std::move(first));
                while (take_op(",") && !at_op(")")) tuple->args.push_back(parse_expression());
                expect_op(")");
                return tuple;
            }
            if (t.text == "[") {
                auto list = make(Expr::Kind::List, t.line);
                while (!take_op("]")) {
                    list->args.push_back(parse_expression());
                    if (!at_op("]")) expect_op(",");
                }
                return list;
            }
            if (t.text == "{") {
                auto dict = make(Expr::Kind::Dict, t.line);
                while (!take_op("}")) {
                    dict->args.push_back(parse_expression());
                    expect_op(":");
                    dict->args.push_back(parse_expression());
                    if (!at_op("}")) expect_op(",");
                }
                return dict;
            }
            [[fallthrough]];
        default: fail(t.line, "expected a value, got " + shown(t));
        }
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const int line = peek().line;
            if (take_op(".")) {
                auto a = make(Expr::Kind::Attr, line);
                if (peek().kind == Token::Kind::Int) {  // foo.0 is foo[0]
                    a->kind = Expr::Kind::Item;
                    a->args.push_back(std::move(e));
                    a->args.push_back(parse_primary());
                } else {
                    a->name = expect_name();
                    a->args.push_back(std::move(e));
                }
                e = std::move(a);
            } else if (take_op("[")) {
                e = parse_subscript(std::move(e), line);
            } else if (at_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr e, int line) {
        Depth guard(depth_, line);
        ExprPtr parts[3];
        int colons = 0;
        for (int k = 0; k < 3 && !at_op("]"); ++k) {
            if (!at_op(":")) parts[k] = parse_expression();
            if (!take_op(":")) break;
            ++colons;
        }
        expect_op("]");
        if (colons == 0) {
            if (!parts[0]) fail(line, "an empty subscript []");
            auto item = make(Expr::Kind::Item, line);
            item->args.push_back(std::move(e));
            item->args.push_back(std::move(parts[0]));
            return item;
        }
        auto slice = make(Expr::Kind::Slice, line);
        slice->args.push_back(std::move(e));
        for (auto& p : parts) slice->args.push_back(std::move(p));
        return slice;
    }

    void parse_arguments(Expr& call) {
        Depth guard(depth_, peek().line);
        expect_op("(");
        while (!take_op(")")) {
            if (peek().kind == Token::Kind::Name && peek(1).kind == Token::Kind::Op && peek(1).text == "=") {
                std::string key = next().text;
                next();
                call.kwargs.emplace_back(std::move(key), parse_expression());
            } else {
                if (!call.kwargs.empty()) fail(peek().line, "a positional argument after a keyword argument");
                call.args.push_back(parse_expression());
            }
            if (!at_op(")")) expect_op(",");
        }
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto call = make(Expr::Kind::Call, peek().line);
        call->args.push_back(std::move(callee));
        parse_arguments(*call);
        return call;
    }

    // name, name(args) — `subject` null in {% filter %} and {% set x | f %}
    ExprPtr parse_filter(ExprPtr subject) {
        auto f = make(Expr::Kind::Filter, peek().line);
        f->name = expect_name();
        f->args.push_back(std::move(subject));
        if (at_op("(")) parse_arguments(*f);
        return f;
    }

    ExprPtr parse_filters_and_tests(ExprPtr e) {
        while (true) {
            if (take_op("|")) {
                e = parse_filter(std::move(e));
                e = parse_postfix(std::move(e));
            } else if (at_name("is")) {
                auto t = make(Expr::Kind::Test, next().line);
                t->negated = take_name("not");
                t->name = expect_name();
                t->args.push_back(std::move(e));
                if (at_op("(")) {
                    parse_arguments(*t);
                } else if (starts_argument()) {  // `is divisibleby 3`, `is sameas none`
                    t->args.push_back(parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else {
                return e;
            }
        }
    }

    bool starts_argument() const {
        const Token& t = peek();
        if (t.kind == Token::Kind::String || t.kind == Token::Kind::Int || t.kind == Token::Kind::Float) return true;
        if (t.kind == Token::Kind::Name) return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" && t.text != "in" && t.text != "not" && t.text != "is";
        return t.kind == Token::Kind::Op && (t.text == "[" || t.text == "{");
    }

    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
};

// [SECTION] Printing values (str, repr, tojson) -------------------------------------------------------

// Python's repr of a float: the shortest digits that read back, in fixed notation from 1e-4 to
// 1e16, else as 1e+16.
std::string float_text(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    for (int digits = 1; digits <= 17; ++digits) {  // the fewest that read back (to_chars' float form is not in every libc++)
        std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    std::string sci(buf);                       // "-1.2345e+02"
    const size_t e = sci.find('e');
    const int exp = std::atoi(sci.c_str() + e + 1);
    std::string digits;
    for (size_t k = 0; k < e; ++k)
        if (is_digit(sci[k])) digits += sci[k];
    const std::string sign = v < 0 ? "-" : "";
    if (exp < -4 || exp >= 16) {
        std::string m = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
        std::string x = std::to_string(std::abs(exp));
        return sign + m + "e" + (exp < 0 ? "-" : "+") + (x.size() < 2 ? "0" : "") + x;
    }
    if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    const size_t whole = static_cast<size_t>(exp) + 1;
    if (digits.size() <= whole) return sign + digits + std::string(whole - digits.size(), '0') + ".0";
    return sign + digits.substr(0, whole) + "." + digits.substr(whole);
}

std::string repr(const Value& v);

std::string python_quoted(const std::string& s) {
    const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == q) out += std::string("\\") + static_cast<char>(c);
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
    return out + q;
}

// What {{ v }} prints: Python's str().
std::string str(const Value& v) {
    switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return float_text(v.f);
    case Value::Kind::String: return v.s;
    default: return repr(v);
    }
}

std::string repr(const Value& v) {
    switch (v.kind) {
    case Value::Kind::String: return python_quoted(v.s);
    case Value::Kind::List: {
        std::string out = "[";
        for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + repr((*v.list)[k]);
        return out + "]";
    }
    case Value::Kind::Dict: {
        if (v.dict->is_namespace) return "<Namespace>";
        std::string out = "{";
        bool first = true;
        for (const auto& [k, e] : v.dict->entries) {
            out += (first ? "" : ", ") + python_quoted(k) + ": " + repr(e);
            first = false;
        }
        return out + "}";
    }
    case Value::Kind::Function: return "<function>";
    default: return str(v);
    }
}

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    out += '"';
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent), keys in their order.
void to_json(std::string& out, const Value& v, int indent, int level, int line) {
    const std::string nl = indent > 0 ? "\n" + std::string(static_cast<size_t>(indent * (level + 1)), ' ') : "";
    const std::string close = indent > 0 ? "\n" + std::string(static_cast<size_t>(indent * level), ' ') : "";
    const char* sep = indent > 0 ? "," : ", ";
    if (level > 100) fail(line, "tojson: nested more than 100 deep");
    switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float: out += std::isfinite(v.f) ? float_text(v.f) : std::isnan(v.f) ? "NaN" : v.f < 0 ? "-Infinity" : "Infinity"; return;
    case Value::Kind::String: json_string(out, v.s); return;
    case Value::Kind::List:
        if (v.list->empty()) { out += "[]"; return; }
        out += "[";
        for (size_t k = 0; k < v.list->size(); ++k) {
            out += (k ? sep : "") + nl;
            to_json(out, (*v.list)[k], indent, level + 1, line);
        }
        out += close + "]";
        return;
    case Value::Kind::Dict: {
        if (v.dict->entries.empty()) { out += "{}"; return; }
        out += "{";
        bool first = true;
        for (const auto& [k, e] : v.dict->entries) {
            out += (first ? "" : sep) + nl;
            json_string(out, k);
            out += ": ";
            to_json(out, e, indent, level + 1, line);
            first = false;
        }
        out += close + "}";
        return;
    }
    case Value::Kind::Function: fail(line, "tojson: a function is not JSON");
    }
}

// [SECTION] Rendering: expressions --------------------------------------------------------------

struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    int line = 0;
    std::string what;  // the filter's or function's name, for errors

    const Value* keyword(std::string_view name) const {
        for (const auto& [k, v] : kw)
            if (k == name) return &v;
        return nullptr;
    }
    // Argument `index` (0 after the subject) or keyword `name`, else `fallback`.
    Value get(size_t index, std::string_view name, Value fallback = {}) const {
        if (index < pos.size()) return pos[index];
        if (const Value* v = keyword(name)) return *v;
        return fallback;
    }
};

struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
    Value* find(const std::string& name) {
        for (Scope* s = this; s; s = s->parent)
            if (auto it = s->vars.find(name); it != s->vars.end()) return &it->second;
        return nullptr;
    }
};

enum class Flow { Normal, Break, Continue };

constexpr int kMaxCallDepth = 100;     // macros calling macros
constexpr long long kMaxItems = 1'000'000;  // range(), a string or list repeated

struct Renderer {
    const TemplateOptions& options;
    long steps = 0;
    int call_depth = 0;
    Scope* root = nullptr;

    void step(int line) {
        if (++steps > options.max_steps) fail(line, "the template ran more than " + std::to_string(options.max_steps) + " steps");
    }
    void emit(std::string& out, std::string_view text, int line) const {
        if (out.size() + text.size() > options.max_output) fail(line, "the output passed " + byte_size(static_cast<double>(options.max_output)));
        out += text;
    }

    Value eval(const Expr& e, Scope& scope);
    Value call(const Value& callee, Args& args);
    Value filter(const std::string& name, const Value& subject, Args& args, Scope& scope);
    bool test(const std::string& name, const Value& subject, Args& args);
    Value attribute(const Value& object, const std::string& name, int line);
    Value item(const Value& object, const Value& key, int line);
    Flow exec(const std::vector<NodePtr>& body, Scope& scope, std::string& out);
    Flow exec(const Node& n, Scope& scope, std::string& out);
    Value macro(const Node& n, Scope& defined_in);
    std::string capture(const std::vector<NodePtr>& body, Scope& scope);
};

Args eval_args(Renderer& r, const Expr& e, size_t first, Scope& scope) {
    Args a;
    a.line = e.line;
    a.what = e.name;
    for (size_t k = first; k < e.args.size(); ++k) a.pos.push_back(r.eval(*e.args[k], scope));
    for (const auto& [name, x] : e.kwargs) a.kw.emplace_back(name, r.eval(*x, scope));
    return a;
}

long long to_index(const Value& v, int line, const char* what) {
    if (v.is(Value::Kind::Int)) return v.i;
    if (v.is(Value::Kind::Bool)) return v.b;
    fail(line, std::string(what) + " must be an integer, got " + type_name(v));
}

// Python's a[start:stop:step] on n items: the indices taken.
std::vector<size_t> slice_indices(long long n, const std::optional<long long>& start, const std::optional<long long>& stop,
                                  long long step, int line) {
    if (step == 0) fail(line, "slice step cannot be zero");
    auto clamp = [&](long long v, long long lo, long long hi) { return std::max(lo, std::min(hi, v)); };
    long long a, b;
    if (step > 0) {
        a = start ? clamp(*start < 0 ? *start + n : *start, 0, n) : 0;
        b = stop ? clamp(*stop < 0 ? *stop + n : *stop, 0, n) : n;
    } else {
        a = start ? clamp(*start < 0 ? *start + n : *start, -1, n - 1) : n - 1;
        b = stop ? clamp(*stop < 0 ? *stop + n : *stop, -1, n - 1) : -1;
    }
    std::vector<size_t> out;
    for (long long k = a; step > 0 ? k < b : k > b; k += step) out.push_back(static_cast<size_t>(k));
    return out;
}

int compare_values(const Value& a, const Value& b, int line) {
    if (a.number() && b.number()) {
        if (a.is(Value::Kind::Float) || b.is(Value::Kind::Float)) {
            const double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : x > y;
        }
        const long long x = a.is(Value::Kind::Bool) ? a.b : a.i, y = b.is(Value::Kind::Bool) ? b.b : b.i;
        return x < y ? -1 : x > y;
    }
    if (a.is(Value::Kind::String) && b.is(Value::Kind::String)) return a.s < b.s ? -1 : a.s > b.s;
    if (a.is(Value::Kind::List) && b.is(Value::Kind::List)) {
        for (size_t k = 0; k < std::min(a.list->size(), b.list->size()); ++k)
            if (int c = compare_values((*a.list)[k], (*b.list)[k], line)) return c;
        return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
    }
    fail(line, std::string("cannot compare ") + type_name(a) + " with " + type_name(b));
}

bool equal(const Value& a, const Value& b) {
    if (a.number() && b.number()) return a.as_double() == b.as_double() && (a.is(Value::Kind::Float) || b.is(Value::Kind::Float) || (a.is(Value::Kind::Bool) ? a.b : a.i) == (b.is(Value::Kind::Bool) ? b.b : b.i));
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.s == b.s;
    case Value::Kind::List:
        if (a.list->size() != b.list->size()) return false;
        for (size_t k = 0; k < a.list->size(); ++k)
            if (!equal((*a.list)[k], (*b.list)[k])) return false;
        return true;
    case Value::Kind::Dict:
        if (a.dict == b.dict) return true;
        if (a.dict->entries.size() != b.dict->entries.size()) return false;
        for (const auto& [k, v] : a.dict->entries) {
            const Value* w = b.dict->find(k);
            if (!w || !equal(v, *w)) return false;
        }
        return true;
    default: return a.fn == b.fn;
    }
}

bool contains(const Value& haystack, const Value& needle, int line) {
    switch (haystack.kind) {
    case Value::Kind::String:
        if (!needle.is(Value::Kind::String)) fail(line, std::string("'in <string>' needs a string, got ") + type_name(needle));
        return haystack.s.find(needle.s) != std::string::npos;
    case Value::Kind::List:
        return std::any_of(haystack.list->begin(), haystack.list->end(), [&](const Value& v) { return equal(v, needle); });
    case Value::Kind::Dict: return needle.is(Value::Kind::String) && haystack.dict->find(needle.s);
    case Value::Kind::Undefined: return false;  // Jinja2's Undefined iterates as empty
    default: fail(line, std::string("'in' needs a string, list or dict, got ") + type_name(haystack));
    }
}

// The items a for loop or a filter walks: a list's, a dict's keys, a string's characters (an
// undefined value: none, as Jinja2's Undefined iterates).
ValueList items_of(const Value& v, int line) {
    switch (v.kind) {
    case Value::Kind::List: return *v.list;
    case Value::Kind::Dict: {
        ValueList keys;
        for (const auto& e : v.dict->entries) keys.push_back(Value::string(e.first));
        return keys;
    }
    case Value::Kind::String: {
        ValueList chars;
        for (size_t p = 0; p < v.s.size();) {
            const size_t from = p;
            decode_utf8(v.s, p);
            chars.push_back(Value::string(v.s.substr(from, p - from)));
        }
        return chars;
    }
    case Value::Kind::Undefined: return {};
    default: fail(line, std::string("a ") + type_name(v) + " is not iterable");
    }
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
    using K = Value::Kind;
    if (op == "~") return Value::string(str(a) + str(b));
    if (op == "+") {
        if (a.is(K::String) && b.is(K::String)) return Value::string(a.s + b.s);
        if (a.is(K::List) && b.is(K::List)) {
            ValueList l = *a.list;
            l.insert(l.end(), b.list->begin(), b.list->end());
            return Value::of_list(std::move(l));
        }
    }
    if (op == "*" && (a.is(K::String) || a.is(K::List) || b.is(K::String) || b.is(K::List))) {
        const Value& seq = a.is(K::String) || a.is(K::List) ? a : b;
        const Value& n = &seq == &a ? b : a;
        const long long times = std::max(0LL, to_index(n, line, "a repeat count"));
        const long long size = seq.is(K::String) ? static_cast<long long>(seq.s.size()) : static_cast<long long>(seq.list->size());
        if (times > 0 && size > kMaxItems / times) fail(line, "a repeat of more than " + std::to_string(kMaxItems) + " items");
        if (seq.is(K::String)) {
            std::string s;
            for (long long k = 0; k < times; ++k) s += seq.s;
            return Value::string(std::move(s));
        }
        ValueList l;
        for (long long k = 0; k < times; ++k) l.insert(l.end(), seq.list->begin(), seq.list->end());
        return Value::of_list(std::move(l));
    }
    if (!a.number() || !b.number())
        fail(line, std::string("cannot ") + (op == "+" ? "add" : "compute") + " " + type_name(a) + " " + op + " " + type_name(b));
    const bool real = a.is(K::Float) || b.is(K::Float);
    const double x = a.as_double(), y = b.as_double();
    const long long i = a.is(K::Bool) ? a.b : a.i, j = b.is(K::Bool) ? b.b : b.i;
    if (op == "/") {
        if (y == 0) fail(line, "division by zero");
        return Value::real(x / y);
    }
    if (op == "**") {
        if (!real && j >= 0) return Value::integer(static_cast<long long>(std::pow(static_cast<double>(i), static_cast<double>(j))));
        return Value::real(std::pow(x, y));
    }
    if (op == "//" || op == "%") {
        if (y == 0) fail(line, op == "//" ? "division by zero" : "modulo by zero");
        if (real) {
            const double q = std::floor(x / y);
            return Value::real(op == "//" ? q : x - q * y);
        }
        long long q = i / j;
        if ((i % j != 0) && ((i < 0) != (j < 0))) --q;  // Python floors
        return Value::integer(op == "//" ? q : i - q * j);
    }
    if (real) return Value::real(op == "+" ? x + y : op == "-" ? x - y : x * y);
    return Value::integer(op == "+" ? i + j : op == "-" ? i - j : i * j);
}

Value Renderer::attribute(const Value& object, const std::string& name, int line) {
    using K = Value::Kind;
    if (object.is(K::Dict)) {
        if (const Value* v = object.dict->find(name)) return *v;
    }
    if (object.is(K::Undefined)) fail(line, "'" + object.s + "' is undefined (reading ." + name + ")");
    if (object.is(K::None)) fail(line, "None has no attribute '" + name + "'");
    // A method: bound to the object, called at once (`x.strip()`); anything else is undefined.
    static const char* const kStringMethods[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith", "upper",
                                                 "lower", "title", "capitalize", "replace", "find", "count"};
    static const char* const kDictMethods[] = {"items", "keys", "values", "get"};
    auto listed = [&](auto& names) { return std::any_of(std::begin(names), std::end(names), [&](const char* m) { return name == m; }); };
    if ((object.is(K::String) && listed(kStringMethods)) || (object.is(K::Dict) && !object.dict->is_namespace && listed(kDictMethods))) {
        Value self = object;
        return Value::function([self, name](Renderer& r, Args& a) { return r.filter("." + name, self, a, *r.root); });
    }
    return Value::undefined(name);
}

Value Renderer::item(const Value& object, const Value& key, int line) {
    using K = Value::Kind;
    if (object.is(K::List) || object.is(K::String)) {
        if (!key.is(K::Int) && !key.is(K::Bool)) {
            if (key.is(K::String)) return attribute(object, key.s, line);
            fail(line, std::string("an index must be an integer, got ") + type_name(key));
        }
        long long k = key.is(K::Bool) ? key.b : key.i;
        if (object.is(K::String)) {
            ValueList chars = items_of(object, line);
            const long long n = static_cast<long long>(chars.size());
            if (k < 0) k += n;
            return k >= 0 && k < n ? chars[static_cast<size_t>(k)] : Value::undefined("[" + std::to_string(key.i) + "]");
        }
        const long long n = static_cast<long long>(object.list->size());
        if (k < 0) k += n;
        return k >= 0 && k < n ? (*object.list)[static_cast<size_t>(k)] : Value::undefined("[" + std::to_string(key.i) + "]");
    }
    if (object.is(K::Dict)) {
        const std::string name = key.is(K::String) ? key.s : str(key);
        if (const Value* v = object.dict->find(name)) return *v;
        return Value::undefined(name);
    }
    if (object.is(K::Undefined)) fail(line, "'" + object.s + "' is undefined (reading [" + repr(key) + "])");
    fail(line, std::string("a ") + type_name(object) + " cannot be indexed");
}

Value Renderer::eval(const Expr& e, Scope& scope) {
    using K = Expr::Kind;
    switch (e.kind) {
    case K::Literal: return e.value;
    case K::Name: {
        if (Value* v = scope.find(e.name)) return *v;
        return Value::undefined(e.name);
    }
    case K::List:
    case K::Tuple: {
        ValueList l;
        for (const auto& a : e.args) l.push_back(eval(*a, scope));
        return Value::of_list(std::move(l));
    }
    case K::Dict: {
        ValueDict d;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
            Value key = eval(*e.args[k], scope);
            d.set(key.is(Value::Kind::String) ? key.s : str(key), eval(*e.args[k + 1], scope));
        }
        return of_dict(std::move(d));
    }
    case K::Attr: return attribute(eval(*e.args[0], scope), e.name, e.line);
    case K::Item: return item(eval(*e.args[0], scope), eval(*e.args[1], scope), e.line);
    case K::Slice: {
        Value object = eval(*e.args[0], scope);
        std::optional<long long> bound[3];
        for (int k = 0; k < 3; ++k)
            if (e.args[1 + k]) {
                Value b = eval(*e.args[1 + k], scope);
                if (!b.is(Value::Kind::None)) bound[k] = to_index(b, e.line, "a slice bound");
            }
        if (!object.is(Value::Kind::List) && !object.is(Value::Kind::String)) fail(e.line, std::string("a ") + type_name(object) + " cannot be sliced");
        ValueList all = items_of(object, e.line);
        ValueList picked;
        for (size_t k : slice_indices(static_cast<long long>(all.size()), bound[0], bound[1], bound[2].value_or(1), e.line)) picked.push_back(all[k]);
        if (object.is(Value::Kind::List)) return Value::of_list(std::move(picked));
        std::string s;
        for (const Value& c : picked) s += c.s;
        return Value::string(std::move(s));
    }
    case K::Call: {
        Value callee = eval(*e.args[0], scope);
        Args a = eval_args(*this, e, 1, scope);
        if (!callee.is(Value::Kind::Function)) {
            const std::string name = e.args[0]->kind == K::Name || e.args[0]->kind == K::Attr ? e.args[0]->name : "this";
            fail(e.line, callee.defined() ? "'" + name + "' is a " + type_name(callee) + ", not a function" : "'" + name + "' is undefined");
        }
        a.what = e.args[0]->name;
        return call(callee, a);
    }
    case K::Filter: {
        Value subject = eval(*e.args[0], scope);
        Args a = eval_args(*this, e, 1, scope);
        return filter(e.name, subject, a, scope);
    }
    case K::Test: {
        Value subject = eval(*e.args[0], scope);
        Args a = eval_args(*this, e, 1, scope);
        return Value::boolean(test(e.name, subject, a) != e.negated);
    }
    case K::Neg:
    case K::Pos: {
        Value v = eval(*e.args[0], scope);
        if (!v.number()) fail(e.line, std::string("a ") + type_name(v) + " has no sign");
        if (e.kind == K::Pos) return v.is(Value::Kind::Bool) ? Value::integer(v.b) : v;
        return v.is(Value::Kind::Float) ? Value::real(-v.f) : Value::integer(-(v.is(Value::Kind::Bool) ? v.b : v.i));
    }
    case K::Not: return Value::boolean(!truthy(eval(*e.args[0], scope)));
    case K::And: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? eval(*e.args[1], scope) : a;
    }
    case K::Or: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? a : eval(*e.args[1], scope);
    }
    case K::Cond:
        if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("");
    case K::Binary: return arithmetic(e.name, eval(*e.args[0], scope), eval(*e.args[1], scope), e.line);
    case K::Compare: {
        Value a = eval(*e.args[0], scope), b = eval(*e.args[1], scope);
        if (e.name == "==") return Value::boolean(equal(a, b));
        if (e.name == "!=") return Value::boolean(!equal(a, b));
        if (e.name == "in") return Value::boolean(contains(b, a, e.line));
        if (e.name == "not in") return Value::boolean(!contains(b, a, e.line));
        const int c = compare_values(a, b, e.line);
        return Value::boolean(e.name == "<" ? c < 0 : e.name == ">" ? c > 0 : e.name == "<=" ? c <= 0 : c >= 0);
    }
    }
    return {};
}

Value Renderer::call(const Value& callee, Args& args) {
    if (++call_depth > kMaxCallDepth) fail(args.line, "calls nested more than " + std::to_string(kMaxCallDepth) + " deep");
    struct Leave { int& d; ~Leave() { --d; } } leave{call_depth};
    return (*callee.fn)(*this, args);
}

// [SECTION] Rendering: filters, tests, methods, globals --------------------------------------------

bool is_python_space(char32_t c) { return unicode::is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

// str.strip / lstrip / rstrip: `chars` null strips whitespace.
std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
    std::u32string t = unicode::decode(s);
    std::u32string set = chars ? unicode::decode(*chars) : std::u32string();
    auto drop = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_python_space(c); };
    size_t a = 0, b = t.size();
    if (left) while (a < b && drop(t[a])) ++a;
    if (right) while (b > a && drop(t[b - 1])) --b;
    std::string out;
    for (size_t k = a; k < b; ++k) append_utf8(out, t[k]);
    return out;
}

std::string ascii_case(std::string s, bool upper) {
    for (char& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string lower(const std::string& s) {
    std::string out;
    for (char32_t c : unicode::decode(s)) unicode::append_lower(out, c);
    return out;
}

// str.title(): a letter after a non-letter is upper case, the others lower (ASCII letters; others kept).
std::string title(const std::string& s) {
    std::string out = s;
    bool after_letter = false;
    for (char& c : out) {
        const bool letter = std::isalpha(static_cast<unsigned char>(c));
        if (letter) c = static_cast<char>(after_letter ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
        after_letter = letter || static_cast<unsigned char>(c) >= 0x80;
    }
    return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, long long count, int line) {
    std::string out;
    if (from.empty()) {  // Python inserts `to` between every character
        ValueList chars = items_of(Value::string(s), line);
        long long done = 0;
        for (const Value& c : chars) {
            if (count < 0 || done < count) out += to, ++done;
            out += c.s;
        }
        if (count < 0 || done < count) out += to;
        return out;
    }
    size_t p = 0;
    for (long long done = 0; count < 0 || done < count; ++done) {
        size_t q = s.find(from, p);
        if (q == std::string::npos) break;
        out += s.substr(p, q - p) + to;
        p = q + from.size();
    }
    return out + s.substr(p);
}

ValueList split(const std::string& s, const Value& sep, long long maxsplit, int line) {
    ValueList out;
    if (sep.is(Value::Kind::None) || !sep.defined()) {  // runs of whitespace, no empty parts
        std::u32string t = unicode::decode(s);
        size_t k = 0;
        while (true) {
            while (k < t.size() && is_python_space(t[k])) ++k;
            if (k >= t.size()) break;
            size_t e = k;
            if (maxsplit >= 0 && static_cast<long long>(out.size()) == maxsplit) e = t.size();
            else while (e < t.size() && !is_python_space(t[e])) ++e;
            std::string part;
            for (size_t q = k; q < e; ++q) append_utf8(part, t[q]);
            if (e == t.size()) part = strip(part, nullptr, false, true);
            out.push_back(Value::string(part));
            k = e;
        }
        return out;
    }
    if (!sep.is(Value::Kind::String)) fail(line, std::string("split: the separator must be a string, got ") + type_name(sep));
    if (sep.s.empty()) fail(line, "split: empty separator");
    size_t p = 0;
    while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
        size_t q = s.find(sep.s, p);
        if (q == std::string::npos) break;
        out.push_back(Value::string(s.substr(p, q - p)));
        p = q + sep.s.size();
    }
    out.push_back(Value::string(s.substr(p)));
    return out;
}

std::string need_string(const Value& v, const Args& a) {
    if (!v.is(Value::Kind::String)) fail(a.line, a.what + ": expected a string, got " + type_name(v));
    return v.s;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

// The value of `attribute` ("a.b" walks) of v, as map(attribute=…) and selectattr read it.
Value attribute_path(Renderer& r, const Value& v, const std::string& path, int line) {
    Value cur = v;
    size_t p = 0;
    while (true) {
        size_t q = path.find('.', p);
        std::string part = path.substr(p, q == std::string::npos ? std::string::npos : q - p);
        cur = cur.is(Value::Kind::List) && !part.empty() && is_digit(part[0]) ? r.item(cur, Value::integer(std::atoll(part.c_str())), line)
                                                                             : cur.defined() ? r.attribute(cur, part, line) : cur;
        if (q == std::string::npos) return cur;
        p = q + 1;
    }
}

Value Renderer::filter(const std::string& name, const Value& v, Args& a, Scope& scope) {
    using K = Value::Kind;
    a.what = name;
    const int line = a.line;
    // [str methods, reached through attribute(): ".strip" …]
    if (name == ".strip" || name == ".lstrip" || name == ".rstrip") {
        Value chars = a.get(0, "chars");
        const std::string* set = chars.is(K::String) ? &chars.s : nullptr;
        return Value::string(strip(v.s, set, name != ".rstrip", name != ".lstrip"));
    }
    if (name == ".split") {
        Value maxsplit = a.get(1, "maxsplit", Value::integer(-1));
        return Value::of_list(split(need_string(v, a), a.get(0, "sep", Value::none()), to_index(maxsplit, line, "maxsplit"), line));
    }
    if (name == ".startswith" || name == ".endswith") {
        Value x = a.get(0, "prefix");
        ValueList options = x.is(K::List) ? *x.list : ValueList{x};
        for (const Value& o : options) {
            const std::string p = need_string(o, a);
            if (name == ".startswith" ? v.s.compare(0, p.size(), p) == 0 && v.s.size() >= p.size()
                                      : v.s.size() >= p.size() && v.s.compare(v.s.size() - p.size(), p.size(), p) == 0)
                return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    if (name == ".find") {
        size_t p = v.s.find(need_string(a.get(0, "sub"), a));
        return Value::integer(p == std::string::npos ? -1 : static_cast<long long>(unicode::decode(v.s.substr(0, p)).size()));
    }
    if (name == ".count") {
        const std::string sub = need_string(a.get(0, "sub"), a);
        if (sub.empty()) return Value::integer(static_cast<long long>(unicode::decode(v.s).size()) + 1);
        long long n = 0;
        for (size_t p = v.s.find(sub); p != std::string::npos; p = v.s.find(sub, p + sub.size())) ++n;
        return Value::integer(n);
    }
    if (name == ".get") {
        if (const Value* x = v.dict->find(str(a.get(0, "key")))) return *x;
        return a.get(1, "default", Value::none());
    }
    if (name == ".keys" || name == ".values" || name == ".items") {
        if (!v.is(K::Dict)) fail(line, name.substr(1) + ": expected a dict, got " + type_name(v));
        ValueList out;
        for (const auto& [k, x] : v.dict->entries)
            out.push_back(name == ".keys" ? Value::string(k) : name == ".values" ? x : Value::of_list({Value::string(k), x}));
        return Value::of_list(std::move(out));
    }
    if (name == ".upper" || name == "upper") return Value::string(ascii_case(str(v), true));
    if (name == ".lower" || name == "lower") return Value::string(lower(str(v)));
    if (name == ".title" || name == "title") return Value::string(title(str(v)));
    if (name == ".capitalize" || name == "capitalize") {
        std::string s = lower(str(v));
        if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
        return Value::string(s);
    }
    if (name == ".replace" || name == "replace") {
        Value count = a.get(2, "count", Value::integer(-1));
        return Value::string(replace_all(str(v), need_string(a.get(0, "old"), a), need_string(a.get(1, "new"), a),
                                         count.is(K::None) ? -1 : to_index(count, line, "count"), line));
    }
    // [filters]
    if (name == "trim") {
        Value chars = a.get(0, "chars");
        const std::string* set = chars.is(K::String) ? &chars.s : nullptr;
        return Value::string(strip(str(v), set, true, true));
    }
    if (name == "length" || name == "count") {
        if (v.is(K::String)) return Value::integer(static_cast<long long>(unicode::decode(v.s).size()));
        if (v.is(K::List)) return Value::integer(static_cast<long long>(v.list->size()));
        if (v.is(K::Dict)) return Value::integer(static_cast<long long>(v.dict->entries.size()));
        if (v.is(K::Undefined)) return Value::integer(0);
        fail(line, std::string("length: a ") + type_name(v) + " has no length");
    }
    if (name == "default" || name == "d") {
        const bool boolean = truthy(a.get(1, "boolean", Value::boolean(false)));
        return (boolean ? truthy(v) : v.defined()) ? v : a.get(0, "default_value", Value::string(""));
    }
    if (name == "tojson") {
        Value indent = a.get(0, "indent", Value::none());
        std::string out;
        to_json(out, v, indent.is(K::None) ? 0 : static_cast<int>(std::clamp(to_index(indent, line, "indent"), 0LL, 64LL)), 0, line);
        return Value::string(std::move(out));
    }
    if (name == "string") return Value::string(str(v));
    if (name == "safe") return v;
    if (name == "escape" || name == "e") return Value::string(html_escape(str(v)));
    if (name == "int") {
        if (v.is(K::Float)) return Value::integer(static_cast<long long>(v.f));
        if (v.is(K::Int) || v.is(K::Bool)) return Value::integer(v.is(K::Bool) ? v.b : v.i);
        long long x = 0;
        const std::string s = strip(str(v), nullptr, true, true);
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
        return ec == std::errc() && end == s.data() + s.size() ? Value::integer(x) : a.get(0, "default", Value::integer(0));
    }
    if (name == "float") {
        if (v.number()) return Value::real(v.as_double());
        const std::string s = strip(str(v), nullptr, true, true);
        char* end = nullptr;
        const double x = std::strtod(s.c_str(), &end);
        return !s.empty() && end == s.c_str() + s.size() ? Value::real(x) : a.get(0, "default", Value::real(0));
    }
    if (name == "abs") {
        if (!v.number()) fail(line, std::string("abs: expected a number, got ") + type_name(v));
        return v.is(K::Float) ? Value::real(std::fabs(v.f)) : Value::integer(std::llabs(v.is(K::Bool) ? v.b : v.i));
    }
    if (name == "round") {
        if (!v.number()) fail(line, std::string("round: expected a number, got ") + type_name(v));
        const long long digits = to_index(a.get(0, "precision", Value::integer(0)), line, "precision");
        const std::string method = str(a.get(1, "method", Value::string("common")));
        const double scale = std::pow(10.0, static_cast<double>(digits));
        const double x = v.as_double() * scale;
        const double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::round(x);
        return Value::real(r / scale);
    }
    if (name == "first" || name == "last") {
        ValueList all = items_of(v, line);
        if (all.empty()) return Value::undefined(name);
        return name == "first" ? all.front() : all.back();
    }
    if (name == "list") return Value::of_list(items_of(v, line));
    if (name == "reverse") {
        ValueList all = items_of(v, line);
        std::reverse(all.begin(), all.end());
        if (!v.is(K::String)) return Value::of_list(std::move(all));
        std::string s;
        for (const Value& c : all) s += c.s;
        return Value::string(std::move(s));
    }
    if (name == "join") {
        const std::string sep = str(a.get(0, "d", Value::string("")));
        Value attr = a.get(1, "attribute", Value::none());
        std::string out;
        bool first = true;
        for (const Value& x : items_of(v, line)) {
            out += (first ? "" : sep) + str(attr.is(K::None) ? x : attribute_path(*this, x, str(attr), line));
            first = false;
        }
        return Value::string(std::move(out));
    }
    if (name == "items") {
        if (v.is(K::Undefined)) return Value::of_list({});
        Args none{{}, {}, line, ".items"};
        return filter(".items", v, none, scope);
    }
    if (name == "dictsort") {
        if (!v.is(K::Dict)) fail(line, std::string("dictsort: expected a dict, got ") + type_name(v));
        const bool case_sensitive = truthy(a.get(0, "case_sensitive", Value::boolean(false)));
        const bool by_value = str(a.get(1, "by", Value::string("key"))) == "value";
        const bool reverse = truthy(a.get(2, "reverse", Value::boolean(false)));
        ValueList pairs;
        for (const auto& [k, x] : v.dict->entries) pairs.push_back(Value::of_list({Value::string(k), x}));
        auto key = [&](const Value& p) {
            Value k = (*p.list)[by_value ? 1 : 0];
            return k.is(K::String) && !case_sensitive ? Value::string(lower(k.s)) : k;
        };
        std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) { return compare_values(key(x), key(y), line) < 0; });
        if (reverse) std::reverse(pairs.begin(), pairs.end());
        return Value::of_list(std::move(pairs));
    }
    if (name == "sort" || name == "unique" || name == "min" || name == "max") {
        ValueList all = items_of(v, line);
        const bool case_sensitive = truthy(a.keyword("case_sensitive") ? *a.keyword("case_sensitive") : Value::boolean(false));
        Value attr = a.keyword("attribute") ? *a.keyword("attribute") : Value::none();
        auto key = [&](const Value& x) {
            Value k = attr.is(K::None) ? x : attribute_path(*this, x, str(attr), line);
            return k.is(K::String) && !case_sensitive ? Value::string(lower(k.s)) : k;
        };
        if (name == "unique") {
            ValueList out;
            for (const Value& x : all)
                if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(key(x), key(y)); })) out.push_back(x);
            return Value::of_list(std::move(out));
        }
        if (name == "min" || name == "max") {
            if (all.empty()) return Value::undefined(name);
            auto less = [&](const Value& x, const Value& y) { return compare_values(key(x), key(y), line) < 0; };
            return name == "min" ? *std::min_element(all.begin(), all.end(), less) : *std::max_element(all.begin(), all.end(), less);
        }
        const bool reverse = truthy(a.get(0, "reverse", Value::boolean(false)));
        std::stable_sort(all.begin(), all.end(), [&](const Value& x, const Value& y) { return compare_values(key(x), key(y), line) < 0; });
        if (reverse) std::reverse(all.begin(), all.end());
        return Value::of_list(std::move(all));
    }
    if (name == "sum") {
        Value total = a.get(1, "start", Value::integer(0));
        Value attr = a.get(0, "attribute", Value::none());
        for (const Value& x : items_of(v, line)) total = arithmetic("+", total, attr.is(K::None) ? x : attribute_path(*this, x, str(attr), line), line);
        return total;
    }
    if (name == "map") {
        ValueList out;
        const Value* attr = a.keyword("attribute");
        for (const Value& x : items_of(v, line)) {
            if (attr) {
                Value got = attribute_path(*this, x, str(*attr), line);
                out.push_back(!got.defined() && a.keyword("default") ? *a.keyword("default") : got);
            } else {
                if (a.pos.empty()) fail(line, "map: needs a filter name or attribute=");
                Args rest = a;
                rest.pos.erase(rest.pos.begin());
                out.push_back(filter(str(a.pos[0]), x, rest, scope));
            }
        }
        return Value::of_list(std::move(out));
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
        const bool by_attr = name == "selectattr" || name == "rejectattr";
        const bool keep = name == "select" || name == "selectattr";
        size_t k = 0;
        std::string attr;
        if (by_attr) {
            if (a.pos.empty()) fail(line, name + ": needs an attribute name");
            attr = str(a.pos[k++]);
        }
        ValueList out;
        for (const Value& x : items_of(v, line)) {
            Value subject = by_attr ? attribute_path(*this, x, attr, line) : x;
            bool pass;
            if (k < a.pos.size()) {
                Args rest{{a.pos.begin() + static_cast<long>(k) + 1, a.pos.end()}, a.kw, line, str(a.pos[k])};
                pass = test(str(a.pos[k]), subject, rest);
            } else {
                pass = truthy(subject);
            }
            if (pass == keep) out.push_back(x);
        }
        return Value::of_list(std::move(out));
    }
    if (name == "indent") {
        const Value width = a.get(0, "width", Value::integer(4));
        const std::string pad = width.is(K::String) ? width.s : std::string(static_cast<size_t>(std::clamp(to_index(width, line, "width"), 0LL, 256LL)), ' ');
        const bool first = truthy(a.get(1, "first", Value::boolean(false)));
        const bool blank = truthy(a.get(2, "blank", Value::boolean(false)));
        const std::string s = str(v);
        std::string out;
        size_t p = 0;
        bool first_line = true;
        while (p <= s.size()) {
            size_t q = s.find('\n', p);
            std::string ln = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
            if ((!first_line || first) && (blank || !ln.empty())) out += pad;
            out += ln;
            if (q == std::string::npos) break;
            out += '\n';
            p = q + 1;
            first_line = false;
        }
        return Value::string(std::move(out));
    }
    if (name == "wordcount") return Value::integer(static_cast<long long>(split(str(v), Value::none(), -1, line).size()));
    fail(line, "unknown filter '" + name + "'");
}

bool Renderer::test(const std::string& name, const Value& v, Args& a) {
    using K = Value::Kind;
    const int line = a.line;
    if (name == "defined") return v.defined();
    if (name == "undefined") return !v.defined();
    if (name == "none") return v.is(K::None);
    if (name == "boolean") return v.is(K::Bool);
    if (name == "true") return v.is(K::Bool) && v.b;
    if (name == "false") return v.is(K::Bool) && !v.b;
    if (name == "string") return v.is(K::String);
    if (name == "number") return v.is(K::Int) || v.is(K::Float);
    if (name == "integer") return v.is(K::Int);
    if (name == "float") return v.is(K::Float);
    if (name == "mapping") return v.is(K::Dict);
    if (name == "sequence") return v.is(K::List) || v.is(K::String) || v.is(K::Dict);
    if (name == "iterable") return v.is(K::List) || v.is(K::String) || v.is(K::Dict);
    if (name == "callable") return v.is(K::Function);
    if (name == "lower") return v.is(K::String) && lower(v.s) == v.s;
    if (name == "upper") return v.is(K::String) && ascii_case(v.s, true) == v.s;
    if (name == "even" || name == "odd") {
        const long long n = to_index(v, line, name.c_str());
        return (n % 2 == 0) == (name == "even");
    }
    if (name == "divisibleby") {
        const long long d = to_index(a.get(0, "num"), line, "divisibleby");
        if (d == 0) fail(line, "divisibleby 0");
        return to_index(v, line, "divisibleby") % d == 0;
    }
    const Value other = a.get(0, "other");
    if (name == "eq" || name == "equalto" || name == "==") return equal(v, other);
    if (name == "ne" || name == "!=") return !equal(v, other);
    if (name == "sameas") return v.kind == other.kind && (v.is(K::List) ? v.list == other.list : v.is(K::Dict) ? v.dict == other.dict : equal(v, other));
    if (name == "in") return contains(other, v, line);
    if (name == "lt" || name == "<") return compare_values(v, other, line) < 0;
    if (name == "le" || name == "<=") return compare_values(v, other, line) <= 0;
    if (name == "gt" || name == ">") return compare_values(v, other, line) > 0;
    if (name == "ge" || name == ">=") return compare_values(v, other, line) >= 0;
    fail(line, "unknown test '" + name + "'");
}

// C's strftime, directive by directive, with glibc's "%-d" (no leading zero), which Python's
// strftime on Linux has and musl's (the page's) has not.
std::string strftime_text(const std::string& format, const std::tm& when, int line) {
    if (format.size() > 256) fail(line, "strftime_now: a format longer than 256 bytes");
    std::string out;
    for (std::size_t k = 0; k < format.size(); ++k) {
        if (format[k] != '%' || k + 1 == format.size()) {
            out += format[k];
            continue;
        }
        const bool unpadded = format[k + 1] == '-' && k + 2 < format.size();
        const char directive[3] = {'%', format[k + (unpadded ? 2 : 1)], '\0'};
        k += unpadded ? 2 : 1;
        char buf[128];
        std::string piece(buf, std::strftime(buf, sizeof buf, directive, &when));
        if (unpadded)
            while (piece.size() > 1 && piece[0] == '0') piece.erase(0, 1);
        out += piece;
    }
    return out;
}

void add_globals(Scope& scope, const TemplateOptions& options) {
    scope.vars["range"] = Value::function([](Renderer&, Args& a) {
        long long start = 0, stop = 0, step = 1;
        if (a.pos.empty() || a.pos.size() > 3) fail(a.line, "range: takes 1 to 3 integers");
        if (a.pos.size() == 1) stop = to_index(a.pos[0], a.line, "range");
        else start = to_index(a.pos[0], a.line, "range"), stop = to_index(a.pos[1], a.line, "range");
        if (a.pos.size() == 3) step = to_index(a.pos[2], a.line, "range");
        if (step == 0) fail(a.line, "range: step cannot be zero");
        ValueList out;
        for (long long k = start; step > 0 ? k < stop : k > stop; k += step) {
            if (static_cast<long long>(out.size()) >= kMaxItems) fail(a.line, "range: more than " + std::to_string(kMaxItems) + " numbers");
            out.push_back(Value::integer(k));
        }
        return Value::of_list(std::move(out));
    });
    auto make_dict = [](bool ns) {
        return [ns](Renderer&, Args& a) {
            ValueDict d;
            d.is_namespace = ns;
            for (const Value& p : a.pos) {
                if (!p.is(Value::Kind::Dict)) fail(a.line, std::string(ns ? "namespace" : "dict") + ": expected keyword arguments or a dict");
                for (const auto& [k, v] : p.dict->entries) d.set(k, v);
            }
            for (const auto& [k, v] : a.kw) d.set(k, v);
            return of_dict(std::move(d));
        };
    };
    scope.vars["namespace"] = Value::function(make_dict(true));
    scope.vars["dict"] = Value::function(make_dict(false));
    scope.vars["raise_exception"] = Value::function([](Renderer&, Args& a) -> Value {
        throw TemplateError(a.pos.empty() ? "raise_exception" : str(a.pos[0]), true);
    });
    const std::tm now = options.now;
    scope.vars["strftime_now"] = Value::function([now](Renderer&, Args& a) {
        return Value::string(strftime_text(need_string(a.get(0, "format"), a), now, a.line));
    });
}

// [SECTION] Rendering: statements ----------------------------------------------------------------

// Binds `names` to `v` (one name: v; several: v's items, unpacked).
void assign(Scope& scope, const std::vector<std::string>& names, const Value& v, int line) {
    if (names.size() == 1) {
        scope.vars[names[0]] = v;
        return;
    }
    ValueList parts = items_of(v, line);
    if (parts.size() != names.size())
        fail(line, "cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(names.size()) + " names");
    for (size_t k = 0; k < names.size(); ++k) scope.vars[names[k]] = parts[k];
}

std::string Renderer::capture(const std::vector<NodePtr>& body, Scope& scope) {
    std::string out;
    exec(body, scope, out);
    return out;
}

Flow Renderer::exec(const std::vector<NodePtr>& body, Scope& scope, std::string& out) {
    for (const NodePtr& n : body)
        if (Flow f = exec(*n, scope, out); f != Flow::Normal) return f;
    return Flow::Normal;
}

// A macro as a function: its parameters bound in a scope of its own over the scope it was defined in.
Value Renderer::macro(const Node& n, Scope& defined_in) {
    const Node* node = &n;
    Scope* outer = &defined_in;
    return Value::function([node, outer](Renderer& r, Args& a) {
        Scope local{{}, outer};
        if (a.pos.size() > node->targets.size()) fail(a.line, "'" + node->text + "' takes " + std::to_string(node->targets.size()) + " arguments");
        for (size_t k = 0; k < node->targets.size(); ++k) {
            const std::string& p = node->targets[k];
            if (k < a.pos.size()) local.vars[p] = a.pos[k];
            else if (const Value* v = a.keyword(p)) local.vars[p] = *v;
            else local.vars[p] = node->defaults[k] ? r.eval(*node->defaults[k], local) : Value::undefined(p);
        }
        for (const auto& [k, v] : a.kw)
            if (k == "caller") local.vars["caller"] = v;
        std::string out;
        r.exec(node->body, local, out);
        return Value::string(std::move(out));
    });
}

Flow Renderer::exec(const Node& n, Scope& scope, std::string& out) {
    using K = Node::Kind;
    step(n.line);
    switch (n.kind) {
    case K::Body: return exec(n.body, scope, out);
    case K::Text: emit(out, n.text, n.line); return Flow::Normal;
    case K::Print: emit(out, str(eval(*n.expr, scope)), n.line); return Flow::Normal;
    case K::If: return exec(truthy(eval(*n.expr, scope)) ? n.body : n.orelse, scope, out);
    case K::Break: return Flow::Break;
    case K::Continue: return Flow::Continue;
    case K::Set: {
        Value v = eval(*n.expr, scope);
        if (n.text.empty()) {
            assign(scope, n.targets, v, n.line);
            return Flow::Normal;
        }
        Value* ns = scope.find(n.targets[0]);
        if (!ns || !ns->is(Value::Kind::Dict) || !ns->dict->is_namespace) fail(n.line, "'" + n.targets[0] + "' is not a namespace: cannot set ." + n.text);
        ns->dict->set(n.text, std::move(v));
        return Flow::Normal;
    }
    case K::SetBlock: {
        Value v = Value::string(capture(n.body, scope));
        for (const ExprPtr& f : n.filters) {
            Args a = eval_args(*this, *f, 1, scope);
            v = filter(f->name, v, a, scope);
        }
        scope.vars[n.targets[0]] = v;
        return Flow::Normal;
    }
    // A macro sees the template's top scope: a loop's scope ends with the loop, and a macro stored
    // in a namespace outlives it. caller() lives only during its call: the block's own scope.
    case K::Macro: scope.vars[n.text] = macro(n, *root); return Flow::Normal;
    case K::CallBlock: {
        // caller(): the block's body as a macro of its own parameters, passed to the call.
        Value callee = eval(*n.expr->args[0], scope);
        Args a = eval_args(*this, *n.expr, 1, scope);
        if (!callee.is(Value::Kind::Function)) fail(n.line, "{% call %}: '" + n.expr->args[0]->name + "' is not a macro");
        Value body = macro(n, scope);  // n.targets are the caller's parameters, n.body its body
        a.kw.emplace_back("caller", body);
        emit(out, str(call(callee, a)), n.line);
        return Flow::Normal;
    }
    case K::FilterBlock: {
        Value v = Value::string(capture(n.body, scope));
        for (const ExprPtr& f : n.filters) {
            Args a = eval_args(*this, *f, 1, scope);
            v = filter(f->name, v, a, scope);
        }
        emit(out, str(v), n.line);
        return Flow::Normal;
    }
    case K::For: {
        ValueList all = items_of(eval(*n.expr, scope), n.line);
        if (n.cond) {  // the `if` filters before counting: loop.length is of what is left
            ValueList kept;
            for (const Value& x : all) {
                Scope probe{{}, &scope};
                assign(probe, n.targets, x, n.line);
                if (truthy(eval(*n.cond, probe))) kept.push_back(x);
            }
            all = std::move(kept);
        }
        if (all.empty()) return exec(n.orelse, scope, out);
        const auto count = static_cast<long long>(all.size());
        auto items = std::make_shared<ValueList>(all);
        for (long long k = 0; k < count; ++k) {
            step(n.line);
            Scope local{{}, &scope};
            ValueDict loop;
            loop.set("index", Value::integer(k + 1));
            loop.set("index0", Value::integer(k));
            loop.set("revindex", Value::integer(count - k));
            loop.set("revindex0", Value::integer(count - k - 1));
            loop.set("first", Value::boolean(k == 0));
            loop.set("last", Value::boolean(k == count - 1));
            loop.set("length", Value::integer(count));
            loop.set("previtem", k > 0 ? all[static_cast<size_t>(k - 1)] : Value::undefined("previtem"));
            loop.set("nextitem", k + 1 < count ? all[static_cast<size_t>(k + 1)] : Value::undefined("nextitem"));
            loop.set("cycle", Value::function([k](Renderer&, Args& a) {
                if (a.pos.empty()) fail(a.line, "loop.cycle: needs at least one value");
                return a.pos[static_cast<size_t>(k) % a.pos.size()];
            }));
            local.vars["loop"] = of_dict(std::move(loop));
            assign(local, n.targets, all[static_cast<size_t>(k)], n.line);
            if (exec(n.body, local, out) == Flow::Break) break;
        }
        return Flow::Normal;
    }
    }
    return Flow::Normal;
}

}  // namespace

// [SECTION] The template -------------------------------------------------------------------------

// Jinja2 drops one newline at the template's end (keep_trailing_newline is off).
std::string_view without_last_newline(std::string_view s) {
    if (s.size() >= 2 && s.substr(s.size() - 2) == "\r\n") return s.substr(0, s.size() - 2);
    return !s.empty() && s.back() == '\n' ? s.substr(0, s.size() - 1) : s;
}

ChatTemplate::ChatTemplate(std::string_view source) : root_(Parser(Lexer(without_last_newline(source)).run()).parse()) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& variables, const TemplateOptions& options) const {
    Scope globals;
    add_globals(globals, options);
    Scope top{{}, &globals};
    if (variables.is_object())
        for (const auto& [k, v] : variables.items()) top.vars[k] = from_json(v);
    Renderer r{options};
    r.root = &top;
    std::string out;
    r.exec(*root_, top, out);
    return out;
}

std::tm chat_template_now() {
    const std::time_t t = std::time(nullptr);
    std::tm local{};
#if defined(_WIN32)
    localtime_s(&local, &t);
#else
    localtime_r(&t, &local);
#endif
    return local;
}

}  // namespace attn
