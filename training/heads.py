"""What a self-attention head does, measured with the standard scores on one probe: the same
definitions as core/model/heads.hpp (docs/MODELS.md "Head scores"); test_builtin.cpp holds the
two together on the shipped model.

Rows i are the drawn tokens past position 0 (not the special tokens the model puts around them):
  prev       mean of A[i][i-1]: the previous-token head
  induction  over the second copy, mean of A[i][i-n+1] (Olsson et al. 2022)
  sink       mean of A[i][0]: the first-token ("sink") head (position 0: the model's BOS if any)
  delimiter  mean of the weight on delimiter tokens
  duplicate  over the second copy, mean of A[i][i-n]
The probe: n = min(32, (positions - specials) / 2) tokens drawn with splitmix64 from seed 2022
(every fourth a delimiter, the others ordinary tokens), then the same n again; the model adds
its special tokens around them (GPT-2: none, so probe() gives the whole probe).
"""
KINDS = ("prev", "induction", "sink", "delimiter", "duplicate")
THRESHOLDS = {"prev": 0.5, "induction": 0.4, "sink": 0.3, "delimiter": 0.5, "duplicate": 0.4}
DELIMITERS = set(".,;:!?\n。，；：！？、")
MASK64 = (1 << 64) - 1


def splitmix64(state):
    """-> a generator of splitmix64's outputs from `state`."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def is_special(raw):  # raw: the token's bytes
    return len(raw) >= 3 and ((raw[:1] == b"<" and raw[-1:] == b">") or (raw[:1] == b"[" and raw[-1:] == b"]"))


def is_delimiter(raw):  # its text without spaces is not empty and only delimiters
    text = raw.decode("utf-8", errors="replace").replace(" ", "")
    return bool(text) and all(c in DELIMITERS for c in text)


def probe(token_bytes, n_positions):
    """token_bytes: each id's bytes -> (ids, delimiter flags), or None."""
    ordinary = [i for i, raw in enumerate(token_bytes) if not is_special(raw) and not is_delimiter(raw)]
    delimiters = [i for i, raw in enumerate(token_bytes) if not is_special(raw) and is_delimiter(raw)]
    n = min(32, n_positions // 2)
    if not ordinary or n < 2:
        return None
    rng, ids, flags = splitmix64(2022), [], []
    for j in range(n):
        delimiter = j % 4 == 3 and bool(delimiters)
        pool = delimiters if delimiter else ordinary
        ids.append(pool[next(rng) % len(pool)])
        flags.append(delimiter)
    return ids + ids, flags + flags


def scores(attention, flags, first=0, n=None):
    """attention [L][H][T][T] (nested lists or arrays) on the probe -> {kind: [L][H]}. The drawn
    tokens are positions first ... first + 2n - 1 (n: len(flags) // 2 by default); the special
    tokens around them (a BOS at 0) are not rows of the scores."""
    n = len(flags) // 2 if n is None else n
    end = first + 2 * n
    rows = range(max(first, 1), end)
    out = {k: [] for k in KINDS}
    for layer in attention:
        row = {k: [] for k in KINDS}
        for A in layer:
            row["prev"].append(sum(float(A[i][i - 1]) for i in rows) / len(rows))
            row["induction"].append(sum(float(A[i][i - n + 1]) for i in range(first + n, end)) / n)
            row["sink"].append(sum(float(A[i][0]) for i in rows) / len(rows))
            row["delimiter"].append(sum(float(A[i][j]) for i in rows for j in range(len(flags)) if flags[j]) / len(rows))
            row["duplicate"].append(sum(float(A[i][i - n]) for i in range(first + n, end)) / n)
        for k in KINDS:
            out[k].append(row[k])
    return out


def label(s, layer, head):
    """The kind whose score is highest among those that clear their threshold, or None."""
    best = None
    for k in KINDS:
        v = s[k][layer][head]
        if v >= THRESHOLDS[k] and (best is None or v > best[1]):
            best = (k, v)
    return best
