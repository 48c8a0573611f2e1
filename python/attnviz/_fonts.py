"""A TrueType font cut down to the characters one output draws.

A figure of fixed tokens (attnviz.show) draws only its own characters, so its output carries
only their glyphs of fonts/cjk-common.ttf (6 763 hanzi, 0.68 MB of base64 whole; a few KB for a
sentence). The font keeps its structure (glyph ids, metrics table sizes, layout tables): what is
cut is the outlines of the glyphs no kept character reaches, their metrics (zeroed) and every
other character's entry in the character map, so a character outside the set is missing, not
blank. Pure Python on the standard library: the package has no font dependency.

The passes (OpenType spec, https://learn.microsoft.com/typography/opentype/spec/):
  1. the table directory;
  2. the glyphs the characters reach: the cmap (format 4 or 12), then composite glyphs' parts;
  3. glyf and loca again with only those outlines (loca in its long form), hmtx zeroed elsewhere;
  4. a cmap of one format 12 subtable (platform 3, encoding 10) with only those characters;
  5. the file: tables in tag order, 4-byte aligned, their checksums and head's adjustment.
"""
import struct

_ARG_WORDS, _SCALE, _MORE, _XY_SCALE, _TWO_BY_TWO = 0x1, 0x8, 0x20, 0x40, 0x80


def _checksum(data):
    data += b"\0" * (-len(data) % 4)
    return sum(struct.unpack(f">{len(data) // 4}I", data)) & 0xFFFFFFFF


def _tables(font):
    """[pass 1] {tag: bytes}."""
    count = struct.unpack_from(">H", font, 4)[0]
    tables = {}
    for i in range(count):
        tag, _, offset, length = struct.unpack_from(">4sIII", font, 12 + 16 * i)
        tables[tag.decode("latin-1")] = font[offset:offset + length]
    return tables


def _cmap(table):
    """{code point: glyph id} of the best Unicode subtable (format 12, else format 4)."""
    subtables = {}
    for i in range(struct.unpack_from(">H", table, 2)[0]):
        platform, encoding, offset = struct.unpack_from(">HHI", table, 4 + 8 * i)
        subtables[(platform, encoding, struct.unpack_from(">H", table, offset)[0])] = offset
    mapping = {}
    for key in ((3, 10, 12), (0, 4, 12), (3, 1, 4), (0, 3, 4)):
        offset = subtables.get(key)
        if offset is None:
            continue
        if key[2] == 12:
            for g in range(struct.unpack_from(">I", table, offset + 12)[0]):
                start, end, glyph = struct.unpack_from(">III", table, offset + 16 + 12 * g)
                mapping.update({c: glyph + c - start for c in range(start, end + 1)})
            return mapping
        segments = struct.unpack_from(">H", table, offset + 6)[0] // 2
        ends = offset + 14
        starts, deltas, ranges = (ends + 2 + 2 * segments * k for k in (1, 2, 3))
        for s in range(segments):
            end, start = struct.unpack_from(">H", table, ends + 2 * s)[0], struct.unpack_from(">H", table, starts + 2 * s)[0]
            delta, range_offset = struct.unpack_from(">hH", table, deltas + 2 * s)[0], struct.unpack_from(">H", table, ranges + 2 * s)[0]
            for c in range(start, min(end, 0xFFFE) + 1):
                if range_offset:
                    glyph = struct.unpack_from(">H", table, ranges + 2 * s + range_offset + 2 * (c - start))[0]
                    glyph = (glyph + delta) & 0xFFFF if glyph else 0
                else:
                    glyph = (c + delta) & 0xFFFF
                if glyph:
                    mapping[c] = glyph
        return mapping
    raise ValueError("the font has no Unicode character map (cmap format 4 or 12)")


def _components(outline):
    """The glyph ids a composite glyph's outline is made of ([] for a simple one)."""
    if len(outline) < 10 or struct.unpack_from(">h", outline, 0)[0] >= 0:
        return []
    parts, at = [], 10
    while True:
        flags, glyph = struct.unpack_from(">HH", outline, at)
        parts.append(glyph)
        at += 4 + (4 if flags & _ARG_WORDS else 2)
        at += 2 if flags & _SCALE else 4 if flags & _XY_SCALE else 8 if flags & _TWO_BY_TWO else 0
        if not flags & _MORE:
            return parts


def thin_font(font, characters):
    """The TrueType font `font` (bytes) with only `characters`' glyphs and character map entries."""
    tables = _tables(font)
    if "glyf" not in tables:
        raise ValueError("not a TrueType font with glyf outlines")
    head, glyf = bytearray(tables["head"]), tables["glyf"]
    glyphs = struct.unpack_from(">H", tables["maxp"], 4)[0]
    long_loca = struct.unpack_from(">h", head, 50)[0] == 1
    loca = (struct.unpack_from(f">{glyphs + 1}I", tables["loca"]) if long_loca
            else [2 * x for x in struct.unpack_from(f">{glyphs + 1}H", tables["loca"])])

    # [pass 2] the characters' glyphs, then the parts composites are made of
    mapping = {c: g for c, g in _cmap(tables["cmap"]).items() if chr(c) in characters}
    kept, todo = {0}, [0] + sorted(set(mapping.values()))
    while todo:
        g = todo.pop()
        kept.add(g)
        todo += [p for p in _components(glyf[loca[g]:loca[g + 1]]) if p not in kept and p < glyphs]

    # [pass 3] the outlines kept, each 4-byte aligned; loca long; metrics zeroed elsewhere
    outlines, offsets = bytearray(), []
    for g in range(glyphs):
        offsets.append(len(outlines))
        if g in kept:
            outlines += glyf[loca[g]:loca[g + 1]]
            outlines += b"\0" * (-len(outlines) % 4)
    offsets.append(len(outlines))
    struct.pack_into(">h", head, 50, 1)
    metrics = struct.unpack_from(">H", tables["hhea"], 34)[0]
    hmtx = bytearray(tables["hmtx"])
    for g in range(glyphs):
        if g not in kept:
            if g < metrics:
                hmtx[4 * g:4 * g + 4] = b"\0\0\0\0"
            else:
                at = 4 * metrics + 2 * (g - metrics)
                hmtx[at:at + 2] = b"\0\0"

    # [pass 4] one format 12 subtable, a group per run of consecutive characters and glyphs
    groups = []
    for c, g in sorted(mapping.items()):
        if groups and groups[-1][1] == c - 1 and groups[-1][2] + c - groups[-1][0] == g:
            groups[-1][1] = c
        else:
            groups.append([c, c, g])
    cmap = struct.pack(">HHHHI", 0, 1, 3, 10, 12) + struct.pack(">HHIII", 12, 0, 16 + 12 * len(groups), 0, len(groups))
    cmap += b"".join(struct.pack(">III", *group) for group in groups)

    tables.update(head=bytes(head), glyf=bytes(outlines), loca=struct.pack(f">{glyphs + 1}I", *offsets), hmtx=bytes(hmtx), cmap=cmap)
    return _font_file(font[:4], tables)


def _font_file(version, tables):
    """[pass 5] the sfnt file: directory, tables in tag order, checksums, head's adjustment."""
    tags = sorted(tables)
    power = 1 << (len(tags).bit_length() - 1)
    out = bytearray(version + struct.pack(">HHHH", len(tags), 16 * power, power.bit_length() - 1, 16 * (len(tags) - power)))
    offset = 12 + 16 * len(tags)
    body = bytearray()
    head_at = None
    for tag in tags:
        data = tables[tag]
        if tag == "head":
            data = data[:8] + b"\0\0\0\0" + data[12:]
            head_at = offset + len(body)
        out += struct.pack(">4sIII", tag.encode("latin-1"), _checksum(data), offset + len(body), len(data))
        body += data + b"\0" * (-len(data) % 4)
    out += body
    if head_at is not None:
        struct.pack_into(">I", out, head_at + 8, (0xB1B0AFBA - _checksum(bytes(out))) & 0xFFFFFFFF)
    return bytes(out)
