// png.mjs: decodes the 8-bit, non-interlaced PNGs that Chromium's screenshots are, into RGBA.
import zlib from 'node:zlib';

export function decodePng(buffer) {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  signature.forEach((b, i) => { if (buffer[i] !== b) throw new Error('not a PNG'); });
  let offset = 8, width = 0, height = 0, colorType = 0, bitDepth = 0, interlace = 0;
  const idat = [];
  while (offset < buffer.length) {
    const length = buffer.readUInt32BE(offset);
    const type = buffer.toString('latin1', offset + 4, offset + 8);
    const data = buffer.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4);
      bitDepth = data[8]; colorType = data[9]; interlace = data[12];
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    offset += 12 + length;
  }
  if (bitDepth !== 8 || interlace !== 0 || ![2, 6].includes(colorType))
    throw new Error(`unsupported PNG: depth ${bitDepth}, colour type ${colorType}, interlace ${interlace}`);
  const channels = colorType === 6 ? 4 : 3;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(width * height * channels);
  // Undo the per-row filters (none, sub, up, average, Paeth).
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : null;
    for (let x = 0; x < stride; ++x) {
      const a = x >= channels ? row[x - channels] : 0;
      const b = prev ? prev[x] : 0;
      const c = prev && x >= channels ? prev[x - channels] : 0;
      let v = src[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      row[x] = v & 0xff;
    }
  }
  const rgba = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; ++i) {
    rgba[i * 4] = pixels[i * channels];
    rgba[i * 4 + 1] = pixels[i * channels + 1];
    rgba[i * 4 + 2] = pixels[i * channels + 2];
    rgba[i * 4 + 3] = channels === 4 ? pixels[i * channels + 3] : 255;
  }
  return { width, height, data: rgba };
}

// [r, g, b] at integer pixel coordinates (clamped to the image).
export function pixel(image, x, y) {
  x = Math.max(0, Math.min(image.width - 1, Math.round(x)));
  y = Math.max(0, Math.min(image.height - 1, Math.round(y)));
  const i = (y * image.width + x) * 4;
  return [image.data[i], image.data[i + 1], image.data[i + 2]];
}

// Pixels of a rectangle [x, y, w, h] as an array of [r, g, b].
export function patch(image, [x, y, w, h]) {
  const out = [];
  for (let j = Math.round(y); j < Math.round(y + h); ++j)
    for (let i = Math.round(x); i < Math.round(x + w); ++i) out.push(pixel(image, i, j));
  return out;
}

// Number of pixels that differ (by more than `tolerance` in any channel) inside a rectangle.
export function differing(a, b, rect, tolerance = 24) {
  const pa = patch(a, rect), pb = patch(b, rect);
  let n = 0;
  for (let i = 0; i < pa.length; ++i)
    if (pa[i].some((v, c) => Math.abs(v - pb[i][c]) > tolerance)) ++n;
  return n;
}

// Distinct colours (quantised to 16 levels per channel) inside a rectangle.
export function distinctColors(image, rect) {
  return new Set(patch(image, rect).map(([r, g, b]) => ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4))).size;
}
