// Times the masking of 1 GiB of client frames as `ws` does it: its JavaScript loop against `bufferutil`'s native mask.
// Usage: node dist/bench/ws-mask-bench.js. A WebSocket client masks every byte it sends (RFC 6455 section 5.3).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
type Mask = (source: Buffer, mask: Buffer, output: Buffer, offset: number, length: number) => void;

/** ws 8's fallback where no native mask loads (lib/buffer-util.js `_mask`). */
const jsMask: Mask = (source, mask, output, offset, length) => {
  for (let i = 0; i < length; i++) output[offset + i] = source[i]! ^ mask[i & 3]!;
};

const FRAME = 64 * 1024 + 1; // the API transport's stdin frame: 64 KiB and its channel byte
const FRAMES_PER_GIB = Math.round(2 ** 30 / FRAME);
const source = Buffer.alloc(FRAME, 7);
const output = Buffer.allocUnsafe(FRAME + 14);
const mask = Buffer.from([1, 2, 3, 4]);
const native = (require("bufferutil") as { mask: Mask }).mask;
for (const [name, apply] of [
  ["ws JavaScript loop", jsMask],
  ["bufferutil", native],
  ["ws JavaScript loop", jsMask],
  ["bufferutil", native],
] as const) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < FRAMES_PER_GIB; i++) apply(source, mask, output, 14, FRAME);
  console.log(`${name}: ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(0)} ms per GiB`);
}
