#!/usr/bin/env bash
# The attnviz binary as a user runs it: compute and import from a file and from stdin, exit codes
# and one-line errors. usage: cli_test.sh ATTNVIZ DATA_DIR
set -u
bin=$1 data=$2
passed=0 failed=0
check() {  # check NAME CONDITION...
    local name=$1; shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
out=$("$bin" compute "$data/i_am_good.json"); code=$?
check "compute exits 0" test "$code" -eq 0
same_6_digits() {  # the trace's output row 0 agrees with seed 002's R printout to 6 significant digits
    node -e 'const z = JSON.parse(require("fs").readFileSync(0, "utf8")).output[0];
             const want = [1, 2.957691, 2.011295];
             // half a unit of the 6th digit, plus the rounding of the printout at the 7th
             const ok = want.every((w, i) => {
                 const unit = Math.pow(10, Math.floor(Math.log10(Math.abs(w))) + 1);
                 return Math.abs(z[i] - w) <= 0.5 * unit * (1e-6 + 1e-7);
             });
             process.exit(ok ? 0 : 1);'
}
check "compute prints z_I = [1, 2.957691, 2.011295]" same_6_digits <<<"$out"
out=$("$bin" compute - < "$data/i_am_good.json"); code=$?
check "compute - reads stdin" test "$code" -eq 0 -a -n "$out"

expect_error() {  # expect_error FILE EXPECTED_PREFIX
    local err code
    err=$("$bin" compute "$1" 2>&1 >/dev/null); code=$?
    check "$(basename "$1") exits 2" test "$code" -eq 2
    check "$(basename "$1") says '$2'" test "${err#"$2"}" != "$err"
    check "$(basename "$1") error is one line" test "$(printf '%s\n' "$err" | wc -l)" -eq 1
}
expect_error "$data/bad_syntax.json" "$data/bad_syntax.json:3:29: malformed JSON"
expect_error "$data/bad_heads.json" "$data/bad_heads.json: heads: expected a divisor of d_model (6), got 4"
expect_error "$data/bad_shape.json" "$data/bad_shape.json: embeddings: expected a 3×3 matrix"
expect_error "$data/missing.json" "$data/missing.json: cannot open the file"
expect_error "$data/import_encoder.json" "$data/import_encoder.json: (top level): this looks like a model's attention (SPEC.md §3), not a scene: attnviz import $data/import_encoder.json reads it"
err=$("$bin" compute 2>&1); code=$?
check "compute without a file exits 2" test "$code" -eq 2

# import: attention exported from a model (SPEC.md §3)
out=$("$bin" import "$data/import_encdec.json"); code=$?
check "import exits 0" test "$code" -eq 0
check "import summary names the stacks, layers × heads and tokens" test \
    "$out" = "$data/import_encdec.json: tiny-t5 (test data): 3 stacks of attention. encoder_attention: 2 layers × 2 heads, 3 tokens (▁Das ▁Haus </s>). decoder_attention: 2 layers × 2 heads, 3 tokens (<pad> ▁The ▁house). cross_attention: 2 layers × 2 heads, 3 queries (<pad> ▁The ▁house) × 3 keys (▁Das ▁Haus </s>)."
check "import summary is one line" test "$(printf '%s\n' "$out" | wc -l)" -eq 1
for f in import_decoder import_encoder import_batch import_bertviz import_bertviz_encdec; do
    "$bin" import "$data/$f.json" >/dev/null; code=$?
    check "import $f.json exits 0" test "$code" -eq 0
done
out=$("$bin" import - < "$data/import_decoder.json"); code=$?
check "import - reads stdin" test "$code" -eq 0 -a "${out#<stdin>: tiny-gpt (test data): 1 stack}" != "$out"
map_is() {  # map_is JSON_OUTPUT: layer 1 head 0 of import_decoder.json, row 1 = [0.7548, 0.2452, 0, 0, 0]
    node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
             const ok = j.stack === "attention" && j.layer === 1 && j.head === 0 && j.queries.length === 5 &&
                        JSON.stringify(j.weights[1]) === "[0.7548,0.2452,0,0,0]" && j.weights.length === 5;
             process.exit(ok ? 0 : 1);'
}
check "import --layer 1 --head 0 --json prints that map" map_is <<<"$("$bin" import "$data/import_decoder.json" --layer 1 --head 0 --json)"
out=$("$bin" import "$data/import_encdec.json" --stack cross_attention --layer 0 --head 1 --json); code=$?
check "import --stack cross_attention" test "$code" -eq 0 -a "${out#*\"stack\":\"cross_attention\"}" != "$out"

expect_import_error() {  # expect_import_error EXPECTED_LINE IMPORT_ARGS...
    local want=$1 err code; shift
    err=$("$bin" import "$@" 2>&1 >/dev/null); code=$?
    check "import $* exits 2" test "$code" -eq 2
    check "import $* says '$want'" test "$err" = "$want"
}
expect_import_error "$data/import_bad_shape.json: attention[0][1]: expected 3 rows (one per token), got 2" "$data/import_bad_shape.json"
expect_import_error "$data/import_bad_ragged.json: attention[1]: expected 2 heads like layer 0, got 1" "$data/import_bad_ragged.json"
expect_import_error "$data/import_bad_rowsum.json: attention[1][0][2]: expected a row that sums to 1 (softmax output; 0 if fully masked), got a sum of 0.8" "$data/import_bad_rowsum.json"
expect_import_error "$data/import_bad_nonfinite.json:2:32: malformed JSON: NaN is not a JSON number (the model gave a non-finite attention weight)" "$data/import_bad_nonfinite.json"
expect_import_error "$data/import_bad_syntax.json:3:1: malformed JSON: unexpected end of input; expected ',' or '}'" "$data/import_bad_syntax.json"
expect_import_error "$data/import_bad_layout.json: (top level): expected \"tokens\" and \"attention\", or encoder_/decoder_/cross_attention (SPEC.md §3), or a BertViz export; got fields text, tokens, attn" "$data/import_bad_layout.json"
expect_import_error "$data/missing.json: cannot open the file" "$data/missing.json"
expect_import_error "$data/import_decoder.json: --layer: expected 0 to 1 (attention has 2 layers × 2 heads), got 2" "$data/import_decoder.json" --layer 2 --head 0 --json
expect_import_error "attnviz import: expected a file (or - for stdin), and --json with --layer and --head or none of them: attnviz import FILE|- [--json] [--layer L] [--head H] [--stack NAME]"
expect_import_error "attnviz import: expected a file (or - for stdin), and --json with --layer and --head or none of them: attnviz import FILE|- [--json] [--layer L] [--head H] [--stack NAME]" "$data/import_decoder.json" --layer 1
expect_import_error "attnviz import: --layer: expected a whole number from 0 to 1000000, got \"x\"" "$data/import_decoder.json" --layer x
expect_import_error "attnviz import: unknown option --lyer (attnviz import --help lists them)" "$data/import_decoder.json" --lyer 1
help=$("$bin" run --help); code=$?
check "run --help lists every option, exit 0" test "$code" -eq 0 -a "${help#*--threads N}" != "$help"
echo "cli: $passed passed, $failed failed"
test "$failed" -eq 0
