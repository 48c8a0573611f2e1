// The Jinja engine's reference: renders every real chat template in chat_templates/ with every
// conversation of chat_templates/conversations.json through Hugging Face's own @huggingface/jinja
// (npm, pinned in tests/browser/package.json), and writes the results as JSON, which the C++ doctest
// tests/test_jinja.cpp reads and compares its own renders with (the build writes it:
// tests/CMakeLists.txt, chat_template_refs).
//
//   node tests/model/jinja_reference.mjs OUT.json
//
// Needs `npm ci` in tests/browser (scripts/setup.sh does it). The variables of one render, the same
// rules the C++ test follows:
//   messages, add_generation_prompt        from the case;
//   tools: null, documents: null           as transformers' apply_chat_template passes them;
//   bos_token, eos_token, unk_token, pad_token from specials.json (a null one is not passed at all,
//                                           undefined in the template, as transformers leaves it);
//   strftime_now(format)                   the fixed instant 2026-11-28 09:05:07 (a Saturday);
//   then the case's "extra" (tools, enable_thinking, date_string, ...), which wins over the above.
// Whitespace: Python's apply_chat_template compiles with trim_blocks=True, lstrip_blocks=True;
// @huggingface/jinja's `new Template(src)` always emulates both by rewriting the source with regular
// expressions before lexing (src/lexer.ts, preprocess): it drops one trailing newline of the template,
// strips spaces/tabs between a line's start and `{%`/`{#`, drops the newline right after `%}`/`#}`,
// and removes the transformers-only {% generation %}/{% endgeneration %} tags.
// A render that throws (raise_exception or any other error) is kept as {"error": message}.
// The output: templates in file-name order, each with the cases in conversations.json's order.
import { readFileSync, writeFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, "chat_templates");
const require = createRequire(join(here, "../browser/package.json"));
const { Template, Environment } = require("@huggingface/jinja"); // its CommonJS build, dist/index.cjs

// Template.render declares the library's own strftime_now (the real clock, local time) before the
// caller's variables, and refuses to declare a name twice: let the caller's strftime_now replace it.
const declare = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
  if (name === "strftime_now" && this.variables.has(name)) this.variables.delete(name);
  return declare.call(this, name, value);
};

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
  "September", "October", "November", "December"];
const NOW = { y: 2026, m: 11, d: 28, H: 9, M: 5, S: 7, wday: 6 };
const pad2 = (n) => String(n).padStart(2, "0");

function strftime_now(format) {
  const f = {
    d: pad2(NOW.d), "-d": String(NOW.d), m: pad2(NOW.m), y: pad2(NOW.y % 100), Y: String(NOW.y),
    H: pad2(NOW.H), M: pad2(NOW.M), S: pad2(NOW.S), b: MONTHS[NOW.m - 1].slice(0, 3),
    B: MONTHS[NOW.m - 1], a: DAYS[NOW.wday].slice(0, 3), A: DAYS[NOW.wday], "%": "%",
  };
  return String(format).replace(/%(-?.)/g, (all, k) => {
    if (!(k in f)) throw new Error(`strftime_now: unsupported directive ${all}`);
    return f[k];
  });
}

function renderAll() {
  const cases = JSON.parse(readFileSync(join(dir, "conversations.json"), "utf8"));
  const specials = JSON.parse(readFileSync(join(dir, "specials.json"), "utf8"));
  const files = readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort();
  const out = [];
  for (const file of files) {
    if (!specials[file]) throw new Error(`specials.json has no entry for ${file}`);
    const source = readFileSync(join(dir, file), "utf8");
    let template = null, parseError = null;
    try { template = new Template(source); } catch (e) { parseError = String(e.message ?? e); }
    for (const c of cases) {
      const tokens = Object.fromEntries(Object.entries(specials[file]).filter(([, v]) => v !== null));
      const vars = { messages: c.messages, add_generation_prompt: c.add_generation_prompt,
        tools: null, documents: null, ...tokens, strftime_now, ...c.extra };
      const entry = { template: file, case: c.name };
      if (parseError !== null) entry.error = parseError;
      else {
        try { entry.output = template.render(vars); } catch (e) { entry.error = String(e.message ?? e); }
      }
      out.push(entry);
    }
  }
  return out;
}

const path = process.argv[2];
if (!path) {
  console.error("usage: node tests/model/jinja_reference.mjs OUT.json");
  process.exit(2);
}
const results = renderAll();
writeFileSync(path, JSON.stringify(results, null, 2) + "\n");
console.log(`jinja reference: ${results.length} renders, ${results.filter((r) => "error" in r).length} errors, wrote ${path}`);
