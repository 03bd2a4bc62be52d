// @ts-check
// Decodes a blurhash (blurha.sh) into a few pixels on a canvas: the
// placeholder a picture's tile shows until the picture itself arrives.
// The format: one base-83 digit for how many components there are, one
// for their scale, four for the average colour, two for each other
// cosine component; the pixels are their sum, back in sRGB.

const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~';

/** @param {string} s */
function base83(s) {
  let value = 0;
  for (const c of s) {
    const digit = DIGITS.indexOf(c);
    if (digit < 0) throw new Error('not a blurhash');
    value = value * 83 + digit;
  }
  return value;
}

/** @param {number} v 0..255 */
function toLinear(v) {
  const x = v / 255;
  return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
}

/** @param {number} v linear, 0..1 */
function toSrgb(v) {
  const x = Math.min(1, Math.max(0, v));
  return Math.round((x <= 0.0031308 ? x * 12.92 : 1.055 * x ** (1 / 2.4) - 0.055) * 255);
}

/**
 * The picture's placeholder as RGBA pixels, or null for a malformed hash.
 * @param {string} hash
 * @param {number} width
 * @param {number} height
 * @returns {Uint8ClampedArray<ArrayBuffer> | null}
 */
export function decode(hash, width, height) {
  try {
    const size = base83(hash[0]);
    const nx = (size % 9) + 1;
    const ny = Math.floor(size / 9) + 1;
    if (hash.length !== 4 + 2 * nx * ny) return null;
    const maximum = (base83(hash[1]) + 1) / 166;
    /** @type {number[][]} */
    const colours = [];
    const dc = base83(hash.slice(2, 6));
    colours.push([toLinear(dc >> 16), toLinear((dc >> 8) & 255), toLinear(dc & 255)]);
    for (let i = 1; i < nx * ny; i++) {
      const ac = base83(hash.slice(4 + i * 2, 6 + i * 2));
      const signedSquare = (/** @type {number} */ q) => {
        const v = (q - 9) / 9;
        return Math.sign(v) * v * v * maximum;
      };
      colours.push([signedSquare(Math.floor(ac / 361)), signedSquare(Math.floor(ac / 19) % 19), signedSquare(ac % 19)]);
    }
    const pixels = new Uint8ClampedArray(new ArrayBuffer(width * height * 4));
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let j = 0; j < ny; j++) {
          for (let i = 0; i < nx; i++) {
            const basis = Math.cos((Math.PI * x * i) / width) * Math.cos((Math.PI * y * j) / height);
            const c = colours[i + j * nx];
            r += c[0] * basis;
            g += c[1] * basis;
            b += c[2] * basis;
          }
        }
        const at = 4 * (x + y * width);
        pixels[at] = toSrgb(r);
        pixels[at + 1] = toSrgb(g);
        pixels[at + 2] = toSrgb(b);
        pixels[at + 3] = 255;
      }
    }
    return pixels;
  } catch {
    return null;
  }
}

/**
 * A small canvas painted with the hash, to sit under its picture; null
 * for a malformed hash.
 * @param {string} hash
 * @returns {HTMLCanvasElement | null}
 */
export function placeholder(hash) {
  const side = 32;
  const pixels = decode(hash, side, side);
  if (!pixels) return null;
  const canvas = document.createElement('canvas');
  canvas.width = side;
  canvas.height = side;
  canvas.className = 'blurhash';
  canvas.setAttribute('aria-hidden', 'true');
  canvas.getContext('2d')?.putImageData(new ImageData(pixels, side, side), 0, 0);
  return canvas;
}
