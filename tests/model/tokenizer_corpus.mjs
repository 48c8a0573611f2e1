// tokenizer_corpus.mjs: the texts tokenizer.json files are checked on (tests/test_tokenizers.cpp,
// against Hugging Face's tokenizers by tokenizer_json_reference.mjs): hand-written ones for each
// case that has a rule, then mixtures of them drawn by a seeded generator, so the list is the
// same on every run. Only characters of Unicode 14 (attnviz's tables) are used.
//   corpus() → [string, …] (≥ 500)

const handWritten = [
  // empty, white space alone, runs, mixed, trailing
  '', ' ', '  ', '\t', '\n', '\r\n', '\n\n\n', ' \n ', '\t\t  \n\n  \t', 'trailing   ', '   leading', 'a  b   c    d',
  'tabs\tand\ttabs\t', 'line one\nline two\n\nline four\r\n', 'mixed \t\n \u00a0 spaces\u2003here\u3000too',
  'end with newline\n', 'spaces before newline   \nnext', '\n  indented\n    more\n', 'a\u200bzero\u200bwidth', '\u00a0nbsp\u00a0',
  // Latin, contractions in any case
  'Hello, world!', 'The quick brown fox jumps over the lazy dog.', "I'm sure it's fine, isn't it? We'll see; they'd know.",
  "DON'T SHOUT. IT'S LOUD. WE'LL GO. THEY'D SAY. I'M HERE. YOU'RE THERE. WE'VE BEEN.", "He'S ok'LL 'Re 'vE 'M 'd 'D",
  "rock 'n' roll", "'s 't 're", "O'Neil's", "cat's dogs' 'quoted'", "'ſ 'ſt", 'naïve café résumé façade',
  // accents in NFC and NFD
  'caf\u00e9', 'cafe\u0301', 'na\u00efve', 'nai\u0308ve', '\u00c5ngstr\u00f6m', 'A\u030angstro\u0308m', 'e\u0301\u0302\u0323',
  '\u1e9b\u0323', 'Ω ohm \u2126', 'ﬁ ligature ﬂ', '①②③ ⅷ', 'x² H₂O ½ ¼', 'Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３', 'ｶﾀｶﾅ ﾊﾝｶｸ',
  // other scripts
  'Привет, мир! Как дела?', 'Съешь же ещё этих мягких французских булок.', 'Γειά σου Κόσμε· ΣΟΦΙΑ σοφία ς',
  'مرحبا بالعالم، كيف حالك؟', 'العَرَبِيَّة مع التشكيل', 'שלום עולם! מה שלומך?', 'नमस्ते दुनिया, आप कैसे हैं?', 'क्षत्रिय ज्ञान',
  'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง', '你好，世界！今天天气很好。', '我爱北京天安门', '繁體中文與简体中文', '𠜎𠜱𠝹𠱓 rare CJK',
  '안녕하세요, 세계! 한국어', '한글 자모 가 ᄒᆞᆫ', 'こんにちは世界。カタカナとひらがな', 'ｺﾝﾆﾁﾊ', '日本語の文章です。東京タワー',
  'Ελληνικά και Latin mixed with Кириллица', 'ქართული ენა', 'Հայերեն', 'አማርኛ', 'தமிழ் மொழி', 'বাংলা ভাষা', 'ગુજરાતી',
  'ꙮ Ꙭ ꙭ', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙', '𐀀𐀁 Linear B', '𝄞 music', 'ᚠᚢᚦᚨᚱᚲ runes',
  // emoji, ZWJ sequences, flags, skin tones, keycaps
  '😀', '😀😃😄', 'I ❤️ NY', '👨‍👩‍👧‍👦 family', '👩🏽‍💻 coder', '🏳️‍🌈 🏴‍☠️', '🇫🇷🇩🇪🇯🇵🇺🇸', '👍🏻👍🏿', '1️⃣ 2️⃣ #️⃣',
  '🤖 robots 🦾 and 🧠', 'emoji🙂inside🙃words', '✨✨✨', '☕ ☃ ★ ♠ ♥', '🇺🇳', '🧑‍🤝‍🧑',
  // digits and numbers
  '0', '1234567890', '3.14159265358979', '1,000,000', '12345678901234567890123', 'v1.2.3-rc4', '2024-01-15T10:30:00Z',
  '+1 (555) 123-4567', '١٢٣٤٥ Arabic digits', '४२ Devanagari digits', '１２３ fullwidth', 'x = 42; y = -17.5e-3',
  'Phone: 0800 123 456', '99 bottles, 100%', '$1,234.56 €99 £7 ¥500',
  // code
  'def foo(x):\n    return x * 2\n', 'for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}', 'const f = (a, b) => a ?? b;',
  '<div class="main">Hello</div>', 'SELECT * FROM users WHERE id = 42;', '#include <vector>\nint main() { return 0; }',
  'if x != None and y >= 3:\n        pass', '{"key": [1, 2, {"nested": true}]}', 'path/to/file.txt C:\\Windows\\System32',
  'https://example.com/path?q=1&r=two#frag', 'user@example.com', '    four spaces\n        eight spaces', '```python\nprint("hi")\n```',
  'a+b=c; a-b=d; a*b=e; a/b=f;', '// comment\n/* block */', '$ ls -la | grep foo > out.txt 2>&1', '#!/bin/bash', '~~~~~~~~~~',
  '=====', '-----', '.....', '!!!???', '(((nested)))', '[[double]]', '<<<>>>', '@@@', '___init___',
  // special-token text inline
  '<|begin_of_text|>Hello', 'Say <|eot_id|> then stop', '<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>', '<|endoftext|>', 'a<|endoftext|>b',
  '<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n', '<bos>text<eos>', '<s>[INST] hi [/INST]</s>', '<s> spaced </s>',
  '<unk>', '<pad><mask>', '<|im_start|><|im_start|>', '< |im_start| >', '<|im_sta', 'x<s>y</s>z', '  <s>  ', '<unused0> <unused99>',
  '<think>\nreasoning\n</think>', '<tool_call>{"a":1}</tool_call>', '<|fim_prefix|>def<|fim_suffix|>', '<start_of_image>',
  '<|reserved_special_token_5|>', '[multimodal]', '<b>bold</b> <i>i</i>', '<table><tr><td>1</td></tr></table>',
  // byte-fallback-forcing characters (outside small vocabularies)
  '\u{10FFFD}', '\u{E000} private use', '\u0378', 'ǅ Lt titlecase', '\u{1F9FF}', 'Ꭰ Cherokee', '⸻ long dash', '﷽',
  '\u{1D54F}\u{1D550}', '\u2028line sep\u2029para sep', '\u0001\u0002 controls \u007f', '\ufeffBOM at start', 'soft\u00adhyphen',
  // long
  'word '.repeat(60), 'a'.repeat(300), '🙂'.repeat(40), '1'.repeat(100), ' '.repeat(50) + 'x', 'ab'.repeat(100),
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.',
];

const pools = {
  words: ['the', 'The', 'THE', 'cat', 'running', 'tokenizer', 'Hello', 'world', 'attention', 'transformer', 'über', 'naïve',
    'café', 'cafe\u0301', 'Москва', 'привет', 'Ελλάδα', 'مرحبا', 'שלום', 'नमस्ते', 'สวัสดี', '中文', '日本語', 'ひらがな', 'カタカナ',
    '한국어', 'x', 'I', 'a', 'Zürich', 'ΣΟΦΙΑ', "it's", "DON'T", "we'LL", "'S", 'ß', 'İstanbul', 'ǈ'],
  spaces: [' ', ' ', ' ', '  ', '\t', '\n', '\n\n', ' \n', '\r\n', '   ', '\u00a0', '\u3000', ''],
  numbers: ['0', '7', '42', '123', '1234', '12345', '3.14', '1,000', '2024', '007', '١٢٣', '٤٥'],
  punctuation: ['.', ',', '!', '?', ';', ':', '...', '—', '–', '-', '(', ')', '"', "'", '«', '»', '“', '”', '。', '、', '！', '#', '@', '/', '\\'],
  emoji: ['😀', '👍🏽', '👨‍👩‍👧', '🇯🇵', '❤️', '✨', '🤔', '1️⃣', '🏳️‍🌈'],
  specials: ['<|begin_of_text|>', '<|eot_id|>', '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<start_of_turn>', '<end_of_turn>',
    '<bos>', '<s>', '</s>', '<unk>', '<think>'],
  code: ['()', '{}', '[]', '=>', '==', '!=', '->', '::', '//', '/*', '*/', '#include', 'def', 'return', '    ', '\t\t'],
};

// mulberry32: a small seeded generator, so the corpus is the same on every run.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function mixtures(count, seed) {
  const random = generator(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const weights = [['words', 6], ['spaces', 5], ['numbers', 2], ['punctuation', 2], ['emoji', 1], ['specials', 1], ['code', 1]];
  const total = weights.reduce((s, [, w]) => s + w, 0);
  const out = [];
  for (let i = 0; i < count; ++i) {
    const length = 1 + Math.floor(random() * 12);
    let text = '';
    for (let k = 0; k < length; ++k) {
      let r = random() * total;
      const [pool] = weights.find(([, w]) => (r -= w) < 0);
      text += pick(pools[pool]);
    }
    if (random() < 0.1) text = text.normalize(random() < 0.5 ? 'NFD' : 'NFC');
    out.push(text);
  }
  return out;
}

export function corpus() {
  return [...handWritten, ...mixtures(420, 29)];
}
