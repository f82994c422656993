// The benchmarks' HTTP client: node:http on kept-alive connections, one
// request at a time per origin. Node's fetch added about 0.3 ms to every
// request on this machine, and more through miniflare's entry worker; a
// load tool's client should add nothing of its own worth counting.
import http from "node:http";

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/**
 * One request; resolves to `{ status, text }` once the whole body is read.
 * @param {string} url
 * @param {{ method?: string, headers?: object, body?: string | Buffer }} [init]
 */
export function request(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers, agent }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
