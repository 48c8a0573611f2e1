#!/usr/bin/env bash
# The attnviz binary as a user runs it: compute from a file and from stdin, exit codes and
# one-line errors. usage: cli_test.sh ATTNVIZ DATA_DIR
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
err=$("$bin" compute 2>&1); code=$?
check "compute without a file exits 2" test "$code" -eq 2
echo "cli: $passed passed, $failed failed"
test "$failed" -eq 0
