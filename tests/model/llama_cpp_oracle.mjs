// llama.cpp itself as the GGUF tests' oracle (tests/model/test_gguf.py): npm's node-llama-cpp
// with its prebuilt CPU binary (nothing built or downloaded). For one GGUF file, prints JSON:
//   {"logits": [[V numbers] for each position of ids], "tokens": [[ids] for each text]}
// The logits come from an F32 KV cache with flash attention off (../shared/TOOLCHAIN.md: then
// llama.cpp's logits on F32 weights equal a float64 forward to about 3e-7); tokenize adds no BOS.
// Also, as "hf_gguf": {architecture, types: {ggml type number: tensors}, parameters}, what npm's
// @huggingface/gguf reads in the same file (a second reader of the container).
// usage: node llama_cpp_oracle.mjs MODULES FILE.gguf '{"ids": [...], "texts": [...], "vocab": V}'
//   MODULES: the node_modules folder that holds node-llama-cpp
import {createRequire} from "node:module";
import path from "node:path";

const [modules, file, request] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), "..", "package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const {ids = [], texts = [], vocab = 0} = JSON.parse(request);

// @huggingface/gguf's reading of the same file: a second reader of its metadata and tensor infos
const {gguf} = await import(require.resolve("@huggingface/gguf"));
const parsed = await gguf(path.resolve(file), {allowLocalFile: true, computeParametersCount: true});
const types = {};
for (const t of parsed.tensorInfos) types[t.dtype] = (types[t.dtype] ?? 0) + 1;

const llama = await getLlama({build: "never", usePrebuiltBinaries: true, skipDownload: true, gpu: false,
                              logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: file});
const out = {logits: [], tokens: texts.map((t) => Array.from(model.tokenize(t, true))),
             hf_gguf: {architecture: parsed.metadata["general.architecture"], types, parameters: parsed.parameterCount}};
if (ids.length) {
    const context = await model.createContext({contextSize: Math.max(32, ids.length), batchSize: Math.max(32, ids.length),
                                               flashAttention: false, threads: 1,
                                               experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const sequence = context.getSequence();
    const result = await sequence.controlledEvaluate(ids.map((id) => [id, {generateNext: {logits: true}}]));
    out.logits = result.map((r) => {  // a Map token -> logit, sorted by logit: back to the vocabulary's order
        const row = new Array(vocab).fill(null);
        for (const [token, logit] of r.next.logits) row[token] = logit;
        return row;
    });
    await context.dispose();
}
await model.dispose();
await llama.dispose();
process.stdout.write(JSON.stringify(out) + "\n");
