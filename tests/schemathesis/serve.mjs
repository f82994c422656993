// Serves the BUILT Worker (build/ + src/entry.mjs) on a free loopback port
// in workerd, for tools that need a real HTTP server (schemathesis, load).
//
//   node tests/schemathesis/serve.mjs [--var NAME=VALUE ...] [--max-seconds N]
//
// Prints one line `READY <url>` on stdout once it accepts requests, then
// serves until SIGTERM/SIGINT or until --max-seconds have passed (default
// 1800: it always stops by itself). Storage is a fresh temporary directory,
// deleted on exit. Vars override wrangler.toml [vars], as in the tests.
import { startWorker } from "../workerd/helpers.mjs";

const vars = {};
let maxSeconds = 1800;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--var") {
    const [k, ...v] = argv[++i].split("=");
    vars[k] = v.join("=");
  } else if (argv[i] === "--max-seconds") {
    maxSeconds = Number(argv[++i]);
  } else {
    console.error(`serve.mjs: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}

const w = await startWorker({ vars });
const url = await w.miniflare.ready;
const base = String(url).replace(/\/$/, "");
if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(base)) {
  console.error(`serve.mjs: refusing to serve on non-loopback ${base}`);
  await w.dispose();
  process.exit(1);
}
console.log(`READY ${base}`);

let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  await w.dispose().catch(() => {});
  process.exit(code);
}
const timer = setTimeout(() => {
  console.error(`serve.mjs: --max-seconds ${maxSeconds} reached, stopping`);
  stop(0);
}, maxSeconds * 1000);
process.on("SIGTERM", () => stop(0));
process.on("SIGINT", () => stop(0));
