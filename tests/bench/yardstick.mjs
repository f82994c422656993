// A fixed piece of CPU work timed in this process, so a run's figures can
// be read against how fast the machine was at the time: the same build
// measures up to ~60% slower in this machine's slow spells, and the load
// average does not show them (nothing else runs). JSON encoding and
// decoding and SHA-256 over 20,000 small records, 20 times: ~250 ms on
// this project's 2-core machine at its usual speed. Lower is faster.
import { createHash } from "node:crypto";

const records = Array.from({ length: 20000 }, (_, i) => ({ id: `m${i}`, text: `the quick brown fox ${i}`, n: i * 1.5 }));

function once() {
  const t0 = performance.now();
  let n = 0;
  for (let k = 0; k < 20; k++) {
    const s = JSON.stringify(records);
    n += JSON.parse(s).length;
    createHash("sha256").update(s).digest();
  }
  if (n !== 20 * records.length) throw new Error("yardstick: wrong count");
  return performance.now() - t0;
}

/** Milliseconds for the work (the second of two runs: the first warms the JIT). */
export function yardstick() {
  once();
  return Math.round(once());
}
