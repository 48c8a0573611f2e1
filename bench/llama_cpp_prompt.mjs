// llama.cpp's prompt time (npm node-llama-cpp's prebuilt CPU binary), the peer of
// attn_bench_model --gguf: the same file, the same ids, the same threads; F32 KV cache, flash
// attention off (as the GGUF tests compare), the whole prompt as one batch.
// usage: node bench/llama_cpp_prompt.mjs MODULES FILE.gguf T THREADS REPS  -> "RESULT llama_cpp_ms_min=… median=…"
import {createRequire} from "node:module";
import path from "node:path";

const [modules, file, T, threads, reps] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), "..", "package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({build: "never", usePrebuiltBinaries: true, skipDownload: true, gpu: false, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: file});
const n = Number(T), ids = Array.from({length: n}, (_, t) => (t * 7919 + 13) % 49152);
const times = [];
for (let r = 0; r < Number(reps); ++r) {
    const context = await model.createContext({contextSize: n + 8, batchSize: n, threads: Number(threads), flashAttention: false,
                                               experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const sequence = context.getSequence();
    const start = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(ids);
    times.push(performance.now() - start);
    await context.dispose();
}
times.sort((a, b) => a - b);
console.log(`RESULT llama_cpp threads=${threads} T=${n} prompt_ms_min=${times[0].toFixed(1)} prompt_ms_median=${times[times.length >> 1].toFixed(1)}`);
await model.dispose();
await llama.dispose();
