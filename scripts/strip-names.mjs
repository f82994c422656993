// Drops the `name` custom section (function names for stack traces and
// profiles, ~340 KB) from a Wasm file in place, as wasm-opt does without
// --debuginfo. scripts/build.sh runs it on the production build only; a
// benchmark build keeps its names for `make bench-profile`.
//   node scripts/strip-names.mjs build/index_bg.wasm
import { readFileSync, writeFileSync } from "node:fs";

const file = process.argv[2];
const wasm = readFileSync(file);
const leb = (at) => {
  let value = 0, shift = 0, byte;
  do {
    byte = wasm[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
};
const kept = [wasm.subarray(0, 8)];
let at = 8;
let dropped = 0;
while (at < wasm.length) {
  const start = at;
  const id = wasm[at++];
  const [size, body] = leb(at);
  const end = body + size;
  let name = "";
  if (id === 0) {
    const [len, text] = leb(body);
    name = wasm.subarray(text, text + len).toString("utf8");
  }
  if (id === 0 && name === "name") dropped += end - start;
  else kept.push(wasm.subarray(start, end));
  at = end;
}
writeFileSync(file, Buffer.concat(kept));
console.error(`strip-names: ${file} ${wasm.length} -> ${wasm.length - dropped} bytes`);
