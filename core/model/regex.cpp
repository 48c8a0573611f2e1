// regex.cpp: see regex.hpp. The pattern is parsed into a tree of nodes, then matched by
// backtracking in continuation-passing style: matching a node is told what must match after it
// (a Cont), so a quantifier can try its counts from greedy to few and alternatives their order.
//
// [SECTION] Classes of characters
// [SECTION] Nodes
// [SECTION] Parsing
// [SECTION] Matching
#include "regex.hpp"

#include "text.hpp"  // decode_utf8
#include "unicode.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <stdexcept>
#include <string>

namespace attn {
namespace {

using unicode::Category;

// [SECTION] Classes of characters -------------------------------------------------------------

constexpr std::uint32_t bit(Category c) { return 1u << static_cast<unsigned>(c); }
constexpr std::uint32_t kLetter = bit(Category::Lu) | bit(Category::Ll) | bit(Category::Lt) | bit(Category::Lm) | bit(Category::Lo);
constexpr std::uint32_t kMark = bit(Category::Mn) | bit(Category::Mc) | bit(Category::Me);
constexpr std::uint32_t kNumber = bit(Category::Nd) | bit(Category::Nl) | bit(Category::No);
constexpr std::uint32_t kPunct = bit(Category::Pc) | bit(Category::Pd) | bit(Category::Ps) | bit(Category::Pe) | bit(Category::Pi) |
                                 bit(Category::Pf) | bit(Category::Po);
constexpr std::uint32_t kSymbol = bit(Category::Sm) | bit(Category::Sc) | bit(Category::Sk) | bit(Category::So);
constexpr std::uint32_t kSeparator = bit(Category::Zs) | bit(Category::Zl) | bit(Category::Zp);
constexpr std::uint32_t kOther = bit(Category::Cc) | bit(Category::Cf) | bit(Category::Cs) | bit(Category::Co) | bit(Category::Cn);
// Oniguruma's \w: Letter | Mark | Decimal_Number | Connector_Punctuation.
constexpr std::uint32_t kWord = kLetter | kMark | bit(Category::Nd) | bit(Category::Pc);

// The categories a \p{NAME} names, or 0.
std::uint32_t category_bits(const std::string& name) {
    struct Named {
        const char* name;
        std::uint32_t bits;
    };
    static constexpr const char* kShort[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
                                             "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
    for (size_t i = 0; i < std::size(kShort); ++i)
        if (name == kShort[i]) return 1u << i;
    static constexpr Named kGroups[] = {
        {"L", kLetter}, {"Letter", kLetter}, {"M", kMark}, {"Mark", kMark}, {"Combining_Mark", kMark}, {"N", kNumber},
        {"Number", kNumber}, {"P", kPunct}, {"Punctuation", kPunct}, {"S", kSymbol}, {"Symbol", kSymbol}, {"Z", kSeparator},
        {"Separator", kSeparator}, {"C", kOther}, {"Other", kOther},
        {"LC", bit(Category::Lu) | bit(Category::Ll) | bit(Category::Lt)}, {"L&", bit(Category::Lu) | bit(Category::Ll) | bit(Category::Lt)},
        {"Uppercase_Letter", bit(Category::Lu)}, {"Lowercase_Letter", bit(Category::Ll)}, {"Titlecase_Letter", bit(Category::Lt)},
        {"Modifier_Letter", bit(Category::Lm)}, {"Other_Letter", bit(Category::Lo)}, {"Nonspacing_Mark", bit(Category::Mn)},
        {"Spacing_Mark", bit(Category::Mc)}, {"Enclosing_Mark", bit(Category::Me)}, {"Decimal_Number", bit(Category::Nd)},
        {"Letter_Number", bit(Category::Nl)}, {"Other_Number", bit(Category::No)}, {"Connector_Punctuation", bit(Category::Pc)},
        {"Dash_Punctuation", bit(Category::Pd)}, {"Open_Punctuation", bit(Category::Ps)}, {"Close_Punctuation", bit(Category::Pe)},
        {"Initial_Punctuation", bit(Category::Pi)}, {"Final_Punctuation", bit(Category::Pf)}, {"Other_Punctuation", bit(Category::Po)},
        {"Math_Symbol", bit(Category::Sm)}, {"Currency_Symbol", bit(Category::Sc)}, {"Modifier_Symbol", bit(Category::Sk)},
        {"Other_Symbol", bit(Category::So)}, {"Space_Separator", bit(Category::Zs)}, {"Line_Separator", bit(Category::Zl)},
        {"Paragraph_Separator", bit(Category::Zp)}, {"Control", bit(Category::Cc)}, {"Format", bit(Category::Cf)},
        {"Surrogate", bit(Category::Cs)}, {"Private_Use", bit(Category::Co)}, {"Unassigned", bit(Category::Cn)}};
    for (const Named& g : kGroups)
        if (name == g.name) return g.bits;
    return 0;
}

// Simple case folding: the one-character lower case, and the few letters whose fold is not
// their lower case (CaseFolding.txt's C entries among them).
char32_t fold(char32_t c) {
    switch (c) {
        case 0x17F: return 's';      // ſ
        case 0x3C2: return 0x3C3;    // ς
        case 0x3D0: return 0x3B2;    // ϐ
        case 0x3D1: return 0x3B8;    // ϑ
        case 0x3D5: return 0x3C6;    // ϕ
        case 0x3D6: return 0x3C0;    // ϖ
        case 0x3F0: return 0x3BA;    // ϰ
        case 0x3F1: return 0x3C1;    // ϱ
        case 0x3F5: return 0x3B5;    // ϵ
        case 0x1E9B: return 0x1E61;  // ẛ
        case 0x1FBE: return 0x3B9;   // ι
        case 0x345: return 0x3B9;    // ͅ
        default: break;
    }
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    std::string lower;
    unicode::append_lower(lower, c);
    const std::u32string l = unicode::decode(lower);
    return l.size() == 1 ? l[0] : c;
}

struct ClassItem {
    enum Kind { Range, Categories, Space, Word, Digit, Hex } kind = Range;
    char32_t lo = 0, hi = 0;
    std::uint32_t categories = 0;
    bool negated = false;

    bool has(char32_t c) const {
        bool in = false;
        switch (kind) {
            case Range: in = c >= lo && c <= hi; break;
            case Categories: in = (categories & bit(unicode::category(c))) != 0; break;
            case Space: in = unicode::is_white_space(c); break;
            case Word: in = (kWord & bit(unicode::category(c))) != 0; break;
            case Digit: in = unicode::category(c) == Category::Nd; break;
            case Hex: in = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); break;
        }
        return in != negated;
    }
};

struct CharSet {
    std::vector<ClassItem> items;
    bool negated = false;
    bool fold = false;  // case-insensitive: items hold their members' folds too; the input is folded
    std::bitset<128> ascii;  // has() for ASCII, computed once

    bool slow_has(char32_t c) const {
        bool in = false;
        for (const ClassItem& i : items)
            if (i.has(c)) {
                in = true;
                break;
            }
        if (!in && fold) {
            const char32_t f = attn::fold(c);
            if (f != c)
                for (const ClassItem& i : items)
                    if (i.has(f)) {
                        in = true;
                        break;
                    }
        }
        return in != negated;
    }
    void finish() {
        for (char32_t c = 0; c < 128; ++c) ascii[c] = slow_has(c);
    }
    bool has(char32_t c) const { return c < 128 ? ascii[c] : slow_has(c); }
};

}  // namespace

// [SECTION] Nodes ------------------------------------------------------------------------------

struct Regex::Node {
    enum class Kind { Set, Seq, Alt, Repeat, Look, Atomic, Assert } kind;
    CharSet set;                      // Set
    std::vector<const Node*> items;   // Seq, Alt
    const Node* child = nullptr;      // Repeat, Look, Atomic
    int min = 0, max = -1;            // Repeat; max −1: no bound
    bool lazy = false, possessive = false;
    bool negate = false;              // Look: (?!…)
    char anchor = 0;                  // Assert: ^ $ A z Z b B
    explicit Node(Kind k) : kind(k) {}
};

namespace {

using Node = Regex::Node;

// [SECTION] Parsing ----------------------------------------------------------------------------

class Parser {
public:
    Parser(std::u32string pattern, std::vector<std::unique_ptr<Node>>& nodes) : p_(std::move(pattern)), nodes_(nodes) {}

    const Node* parse() {
        bool fold = false, dotall = false;
        const Node* n = alternation(fold, dotall);
        if (i_ < p_.size()) fail("an unmatched )");
        return n;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw std::invalid_argument("regex: " + what + " at character " + std::to_string(i_));
    }
    bool more() const { return i_ < p_.size(); }
    char32_t peek() const { return p_[i_]; }
    char32_t next() {
        if (!more()) fail("the pattern ends too soon");
        return p_[i_++];
    }
    Node* make(Node::Kind k) {
        nodes_.push_back(std::make_unique<Node>(k));
        return nodes_.back().get();
    }

    // alternation := sequence ('|' sequence)*; the flags set inside by (?i) last to its end
    const Node* alternation(bool fold, bool dotall) {
        Node* alt = make(Node::Kind::Alt);
        alt->items.push_back(sequence(fold, dotall));
        while (more() && peek() == '|') {
            ++i_;
            alt->items.push_back(sequence(fold, dotall));
        }
        return alt->items.size() == 1 ? alt->items[0] : alt;
    }

    const Node* sequence(bool& fold, bool& dotall) {
        Node* seq = make(Node::Kind::Seq);
        while (more() && peek() != '|' && peek() != ')') {
            if (const Node* a = atom(fold, dotall)) seq->items.push_back(quantified(a));
        }
        return seq;
    }

    // An atom followed by any quantifiers. Ruby's syntax: only *+ ++ ?+ are possessive; a + after
    // {n,m} is one more quantifier.
    const Node* quantified(const Node* a) {
        while (more()) {
            int min = 0, max = -1;
            const char32_t c = peek();
            bool braces = false;
            if (c == '*') min = 0, max = -1;
            else if (c == '+') min = 1, max = -1;
            else if (c == '?') min = 0, max = 1;
            else if (c == '{' && counted(min, max)) braces = true;
            else break;
            if (!braces) ++i_;
            if (a->kind == Node::Kind::Assert || a->kind == Node::Kind::Look) fail("a quantifier after an assertion");
            Node* r = make(Node::Kind::Repeat);
            r->child = a, r->min = min, r->max = max;
            if (more() && peek() == '?') ++i_, r->lazy = true;
            else if (!braces && more() && peek() == '+') ++i_, r->possessive = true;
            a = r;
            if (r->possessive && a->child->kind != Node::Kind::Set) {  // (?>x*): the same, never given back
                r->possessive = false;
                Node* atomic = make(Node::Kind::Atomic);
                atomic->child = r;
                a = atomic;
            }
        }
        return a;
    }

    // {n} {n,} {n,m} {,m}: true and past it, or false (then '{' is a literal).
    bool counted(int& min, int& max) {
        size_t j = i_ + 1;
        auto number = [&](int& out) {
            const size_t start = j;
            long v = 0;
            while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
                v = v * 10 + static_cast<long>(p_[j] - '0');
                if (v > 100000) fail("a repeat count above 100000");
                ++j;
            }
            out = static_cast<int>(v);
            return j > start;
        };
        int lo = 0, hi = -1;
        const bool has_lo = number(lo);
        if (j < p_.size() && p_[j] == '}') {
            if (!has_lo) return false;
            hi = lo;
        } else if (j < p_.size() && p_[j] == ',') {
            ++j;
            if (!number(hi)) hi = -1;
            if (!has_lo && hi < 0) return false;
            if (j >= p_.size() || p_[j] != '}') return false;
        } else {
            return false;
        }
        if (hi >= 0 && hi < lo) fail("a repeat count {n,m} with m < n");
        min = lo, max = hi;
        i_ = j + 1;
        return true;
    }

    Node* set_node(CharSet set) {
        Node* n = make(Node::Kind::Set);
        n->set = std::move(set);
        n->set.finish();
        return n;
    }
    Node* literal(char32_t c, bool fold) {
        CharSet s;
        s.items.push_back({ClassItem::Range, c, c});
        if (fold) {
            s.fold = true;
            const char32_t f = attn::fold(c);
            if (f != c) s.items.push_back({ClassItem::Range, f, f});
        }
        return set_node(std::move(s));
    }
    Node* assertion(char a) {
        Node* n = make(Node::Kind::Assert);
        n->anchor = a;
        return n;
    }

    // One atom, or nullptr for a flag group such as (?i) that matches nothing.
    const Node* atom(bool& fold, bool& dotall) {
        const char32_t c = next();
        switch (c) {
            case '.': {
                CharSet s;
                s.negated = true;
                if (!dotall) s.items.push_back({ClassItem::Range, '\n', '\n'});
                return set_node(std::move(s));
            }
            case '^': return assertion('^');
            case '$': return assertion('$');
            case '[': return set_node(bracket(fold));
            case '(': return group(fold, dotall);
            case ')': fail("an unmatched )");
            case '*': case '+': case '?': fail("a quantifier with nothing before it");
            case '\\': return escape(fold);
            default: return literal(c, fold);
        }
    }

    const Node* group(bool& fold, bool& dotall) {
        if (more() && peek() == '?') {
            ++i_;
            const char32_t k = next();
            if (k == ':' || k == '=' || k == '!' || k == '>') {
                const Node* inner = alternation(fold, dotall);
                close();
                if (k == ':') return inner;
                Node* n = make(k == '>' ? Node::Kind::Atomic : Node::Kind::Look);
                n->child = inner;
                n->negate = k == '!';
                return n;
            }
            if (k == '<' && more() && (peek() == '=' || peek() == '!')) fail("lookbehind is not supported");
            if (k == '<' || k == 'P' || k == '\'') fail("named groups are not supported");
            // flags: (?imx-imx) or (?imx-imx:…)
            --i_;
            bool on = true, f = fold, d = dotall;
            while (more() && peek() != ':' && peek() != ')') {
                const char32_t flag = next();
                if (flag == '-') on = false;
                else if (flag == 'i') f = on;
                else if (flag == 'm') d = on;  // Ruby's m: '.' matches a newline
                else if (flag == 'x') fail("extended mode (?x) is not supported");
                else fail("an unknown group (?" + std::string(1, static_cast<char>(flag < 128 ? flag : '?')));
            }
            if (next() == ')') {  // (?i): for the rest of the enclosing group
                fold = f, dotall = d;
                return nullptr;
            }
            const Node* inner = alternation(f, d);
            close();
            return inner;
        }
        const Node* inner = alternation(fold, dotall);
        close();
        return inner;
    }
    void close() {
        if (!more() || next() != ')') fail("a ( without its )");
    }

    // \p{…} / \P{…} / \p{^…} after the 'p' or 'P'.
    ClassItem property(bool negated) {
        if (next() != '{') fail("\\p without {NAME}");
        std::string name;
        if (more() && peek() == '^') ++i_, negated = !negated;
        while (more() && peek() != '}') {
            const char32_t ch = next();
            if (ch >= 128) fail("a property name that is not ASCII");
            name += static_cast<char>(ch);
        }
        close_brace();
        const std::uint32_t bits = category_bits(name);
        if (!bits) fail("the property \\p{" + name + "} is not supported (general categories only)");
        ClassItem item{ClassItem::Categories};
        item.categories = bits;
        item.negated = negated;
        return item;
    }
    void close_brace() {
        if (!more() || next() != '}') fail("a { without its }");
    }

    char32_t hex(int digits) {
        char32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const char32_t h = next();
            int d = h >= '0' && h <= '9' ? static_cast<int>(h - '0') : h >= 'a' && h <= 'f' ? static_cast<int>(h - 'a' + 10)
                  : h >= 'A' && h <= 'F' ? static_cast<int>(h - 'A' + 10) : -1;
            if (d < 0) fail("expected a hexadecimal digit");
            v = v * 16 + static_cast<char32_t>(d);
        }
        return v;
    }

    // An escape's class (\d \s \w \h \p …) or its one character; false: a character in `c`.
    bool escape_class(char32_t e, ClassItem& item, char32_t& c) {
        switch (e) {
            case 'd': case 'D': item = {ClassItem::Digit}; item.negated = e == 'D'; return true;
            case 's': case 'S': item = {ClassItem::Space}; item.negated = e == 'S'; return true;
            case 'w': case 'W': item = {ClassItem::Word}; item.negated = e == 'W'; return true;
            case 'h': case 'H': item = {ClassItem::Hex}; item.negated = e == 'H'; return true;
            case 'p': case 'P': item = property(e == 'P'); return true;
            case 't': c = '\t'; return false;
            case 'n': c = '\n'; return false;
            case 'r': c = '\r'; return false;
            case 'f': c = '\f'; return false;
            case 'v': c = '\v'; return false;
            case 'a': c = '\a'; return false;
            case 'e': c = 0x1B; return false;
            case '0': c = 0; return false;
            case 'x':
                if (more() && peek() == '{') {
                    ++i_;
                    char32_t v = 0;
                    int n = 0;
                    while (more() && peek() != '}') v = v * 16 + hex(1), ++n;
                    close_brace();
                    if (n == 0 || n > 8 || v > 0x10FFFF) fail("a bad \\x{…}");
                    c = v;
                } else {
                    c = hex(2);
                }
                return false;
            case 'u': c = hex(4); return false;
            default:
                if ((e >= '1' && e <= '9') || e == 'k' || e == 'g') fail("backreferences and subroutines are not supported");
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail("the escape \\" + std::string(1, static_cast<char>(e)) + " is not supported");
                c = e;  // \. \\ \( … : the character itself
                return false;
        }
    }

    const Node* escape(bool fold) {
        const char32_t e = next();
        switch (e) {
            case 'A': return assertion('A');
            case 'z': return assertion('z');
            case 'Z': return assertion('Z');
            case 'b': return assertion('b');
            case 'B': return assertion('B');
            default: break;
        }
        ClassItem item;
        char32_t c = 0;
        if (!escape_class(e, item, c)) return literal(c, fold);
        CharSet s;
        s.fold = fold;
        s.items.push_back(item);
        return set_node(std::move(s));
    }

    // [...] after the '['.
    CharSet bracket(bool fold) {
        CharSet s;
        s.fold = fold;
        if (more() && peek() == '^') ++i_, s.negated = true;
        bool first = true;
        while (true) {
            if (!more()) fail("a [ without its ]");
            char32_t c = next();
            if (c == ']' && !first) break;
            first = false;
            if (c == '[') fail("nested classes and [:posix:] are not supported");
            if (c == '&' && more() && peek() == '&') fail("class intersection && is not supported");
            if (c == '\\') {
                ClassItem item;
                if (escape_class(next(), item, c)) {
                    s.items.push_back(item);
                    continue;
                }
            }
            char32_t hi = c;
            if (more() && peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
                ++i_;
                hi = next();
                if (hi == '[') fail("nested classes are not supported");
                if (hi == '\\') {
                    ClassItem item;
                    if (escape_class(next(), item, hi)) fail("a range that ends in a class");
                }
                if (hi < c) fail("a range whose end is before its start");
            }
            s.items.push_back({ClassItem::Range, c, hi});
            if (fold) add_folds(s, c, hi);
        }
        return s;
    }
    // The folds of a range's members, so a folded input finds them (a range of letters above
    // 0x3000 characters is left as it is: CJK and the like have no case).
    void add_folds(CharSet& s, char32_t lo, char32_t hi) {
        if (hi - lo > 0x3000) return;
        for (char32_t k = lo; k <= hi; ++k) {
            const char32_t f = attn::fold(k);
            if (f != k) s.items.push_back({ClassItem::Range, f, f});
        }
    }

    std::u32string p_;
    size_t i_ = 0;
    std::vector<std::unique_ptr<Node>>& nodes_;
};

// [SECTION] Matching ---------------------------------------------------------------------------

// What must match after the node being matched: the rest of a sequence, the next round of a
// repeat, or the end (a match found: its end written to `out`).
struct Cont {
    enum Kind { Seq, Rep, Done } kind;
    const Node* node = nullptr;
    size_t index = 0;      // Seq: the next item
    int count = 0;         // Rep: rounds done
    size_t start = 0;      // Rep: where the last round started
    const Cont* up = nullptr;
    size_t* out = nullptr;  // Done
};

class Matcher {
public:
    Matcher(std::u32string_view text, long budget) : t_(text), budget_(budget) {}
    bool out_of_steps() const { return steps_ > budget_; }
    void reset() { depth_ = 0, gave_up_ = false; }

    bool match(const Node* n, size_t pos, const Cont* k) {
        if (++steps_ > budget_ || depth_ >= Regex::kDepthLimit) {
            gave_up_ = true;
            return false;
        }
        ++depth_;
        const bool ok = dispatch(n, pos, k);
        --depth_;
        return ok;
    }

private:
    bool run(const Cont* k, size_t pos) {
        switch (k->kind) {
            case Cont::Done: *k->out = pos; return true;
            case Cont::Seq: {
                if (k->index == k->node->items.size()) return run(k->up, pos);
                const Cont rest{Cont::Seq, k->node, k->index + 1, 0, 0, k->up};
                return match(k->node->items[k->index], pos, &rest);
            }
            case Cont::Rep:
                if (pos == k->start && k->count >= k->node->min) return run(k->up, pos);  // an empty round ends the repeat
                return repeat(k->node, k->count, pos, k->up);
        }
        return false;
    }

    bool repeat(const Node* n, int count, size_t pos, const Cont* k) {
        const bool more = n->max < 0 || count < n->max;
        const Cont again{Cont::Rep, n, 0, count + 1, pos, k};
        if (n->lazy) {
            if (count >= n->min && run(k, pos)) return true;
            return more && !gave_up_ && match(n->child, pos, &again);
        }
        if (more && match(n->child, pos, &again)) return true;
        return count >= n->min && !gave_up_ && run(k, pos);
    }

    bool word_at(size_t pos) const {
        return pos < t_.size() && (kWord & bit(unicode::category(t_[pos])));
    }

    bool dispatch(const Node* n, size_t pos, const Cont* k) {
        switch (n->kind) {
            case Node::Kind::Set: return pos < t_.size() && n->set.has(t_[pos]) && run(k, pos + 1);
            case Node::Kind::Seq: {
                const Cont first{Cont::Seq, n, 0, 0, 0, k};
                return run(&first, pos);
            }
            case Node::Kind::Alt:
                for (const Node* a : n->items) {
                    if (match(a, pos, k)) return true;
                    if (gave_up_) return false;
                }
                return false;
            case Node::Kind::Repeat: {
                if (n->child->kind != Node::Kind::Set) return repeat(n, 0, pos, k);
                // one character a round: count the run, then try its lengths without recursion
                const CharSet& s = n->child->set;
                size_t most = pos;
                const size_t limit = n->max < 0 ? t_.size() : std::min(t_.size(), pos + static_cast<size_t>(n->max));
                while (most < limit && s.has(t_[most])) ++most;
                const size_t least = pos + static_cast<size_t>(n->min);
                if (most < least) return false;
                if (n->possessive) return run(k, most);
                if (n->lazy) {
                    for (size_t e = least; e <= most; ++e)
                        if (run(k, e)) return true;
                        else if (gave_up_) return false;
                    return false;
                }
                for (size_t e = most + 1; e-- > least;)
                    if (run(k, e)) return true;
                    else if (gave_up_) return false;
                return false;
            }
            case Node::Kind::Look: {
                size_t end = 0;
                const Cont done{Cont::Done, nullptr, 0, 0, 0, nullptr, &end};
                const bool found = match(n->child, pos, &done);
                if (gave_up_) return false;
                return found != n->negate && run(k, pos);
            }
            case Node::Kind::Atomic: {
                size_t end = 0;
                const Cont done{Cont::Done, nullptr, 0, 0, 0, nullptr, &end};
                return match(n->child, pos, &done) && run(k, end);
            }
            case Node::Kind::Assert: {
                const size_t len = t_.size();
                bool ok = false;
                switch (n->anchor) {
                    case '^': ok = pos == 0 || t_[pos - 1] == '\n'; break;
                    case '$': ok = pos == len || t_[pos] == '\n'; break;
                    case 'A': ok = pos == 0; break;
                    case 'z': ok = pos == len; break;
                    case 'Z': ok = pos == len || (pos + 1 == len && t_[pos] == '\n'); break;
                    case 'b': ok = (pos > 0 && word_at(pos - 1)) != word_at(pos); break;
                    case 'B': ok = (pos > 0 && word_at(pos - 1)) == word_at(pos); break;
                    default: break;
                }
                return ok && run(k, pos);
            }
        }
        return false;
    }

    std::u32string_view t_;
    long budget_, steps_ = 0;
    int depth_ = 0;
    bool gave_up_ = false;
};

}  // namespace

Regex::Regex(std::string_view pattern) {
    std::u32string p;
    for (size_t pos = 0; pos < pattern.size();) p += decode_utf8(pattern, pos);
    Parser parser(std::move(p), nodes_);
    const Node* root = parser.parse();
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].get() == root) root_ = i;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::optional<std::pair<size_t, size_t>> Regex::find(std::u32string_view text, size_t from) const {
    // the steps one search may take: kStepLimit, and a few more for each start it tries
    Matcher m(text, kStepLimit + 64 * static_cast<long>(text.size() - std::min(from, text.size())));
    const Node* root = nodes_[root_].get();
    for (size_t start = from; start <= text.size() && !m.out_of_steps(); ++start) {
        m.reset();
        size_t end = 0;
        const Cont done{Cont::Done, nullptr, 0, 0, 0, nullptr, &end};
        if (m.match(root, start, &done)) return std::pair(start, end);
    }
    return std::nullopt;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::u32string_view text) const {
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t from = 0; from <= text.size();) {
        const auto m = find(text, from);
        if (!m) break;
        out.push_back(*m);
        from = m->second > m->first ? m->second : m->second + 1;
    }
    return out;
}

}  // namespace attn
