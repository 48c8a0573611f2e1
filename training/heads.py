"""What a self-attention head does, measured with the standard scores on one probe: the same
definitions as core/model/heads.hpp (docs/MODELS.md "Head scores"); test_builtin.cpp holds the
two together on the shipped model.

  prev       mean over i >= 1 of A[i][i-1]: the previous-token head
  induction  over the probe's second half, mean of A[i][i-n+1] (Olsson et al. 2022)
  sink       mean over i >= 1 of A[i][0]: the first-token ("sink") head
  delimiter  mean over i >= 1 of the weight on delimiter tokens
The probe: n = min(32, positions / 2) tokens drawn with splitmix64 from seed 2022 (every fourth
a delimiter, the others ordinary tokens), then the same n again.
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


def scores(attention, flags):
    """attention [L][H][T][T] (nested lists or arrays) on the probe -> {kind: [L][H]}."""
    T = len(flags)
    n = T // 2
    out = {k: [] for k in KINDS}
    for layer in attention:
        row = {k: [] for k in KINDS}
        for A in layer:
            row["prev"].append(sum(float(A[i][i - 1]) for i in range(1, T)) / (T - 1))
            row["induction"].append(sum(float(A[i][i - n + 1]) for i in range(n, T)) / n)
            row["sink"].append(sum(float(A[i][0]) for i in range(1, T)) / (T - 1))
            row["delimiter"].append(sum(float(A[i][j]) for i in range(1, T) for j in range(T) if flags[j]) / (T - 1))
            row["duplicate"].append(sum(float(A[i][i - n]) for i in range(n, T)) / n)
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
