"""The embedding server end to end: `make embed-test` (not part of
`make test`: it needs the .tools/embed venv, ~400 MB). Starts
tests/embed/server.py on a free loopback port and checks the OpenAI
embeddings API and the model's output. Stdlib unittest; run with the venv's
python. The last line is `embed: N passed, N failed`."""

from __future__ import annotations

import base64
import math
import struct
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Server  # noqa: E402

DIMS = 384
S: Server | None = None


def setUpModule():
    global S
    S = Server()


def tearDownModule():
    if S is not None:
        S.close()


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def norm(a):
    return math.sqrt(dot(a, a))


class Embeddings(unittest.TestCase):
    def test_three_sentences(self):
        texts = [
            "The cat sat quietly on the warm windowsill.",
            "A kitten was resting calmly on the sunny window ledge.",
            "Quarterly tax filings are due at the end of the month.",
        ]
        r = S.embed(texts)
        self.assertEqual(r["object"], "list")
        self.assertEqual(r["model"], "all-MiniLM-L6-v2")
        self.assertEqual([d["index"] for d in r["data"]], [0, 1, 2])
        self.assertTrue(all(d["object"] == "embedding" for d in r["data"]))
        v = [d["embedding"] for d in r["data"]]
        for e in v:
            self.assertEqual(len(e), DIMS)
            self.assertAlmostEqual(norm(e), 1.0, places=5)
        para, unrelated_a, unrelated_b = dot(v[0], v[1]), dot(v[0], v[2]), dot(v[1], v[2])
        self.assertGreater(para, 0.5)
        self.assertGreater(para, unrelated_a + 0.3)
        self.assertGreater(para, unrelated_b + 0.3)
        self.assertGreater(r["usage"]["prompt_tokens"], 3 * 2)
        self.assertEqual(r["usage"]["prompt_tokens"], r["usage"]["total_tokens"])

    def test_paraphrases_rank_first(self):
        # Each query's paraphrase is its nearest neighbour among all others.
        pairs = [
            ("How do I reset my password?", "I forgot my login password and need to change it."),
            ("The meeting was moved to Thursday afternoon.", "We rescheduled the meeting for Thursday after lunch."),
            ("She adopted a puppy from the shelter.", "She brought home a young dog from the animal rescue."),
            ("The build fails with a linker error.", "Compilation breaks at the linking step."),
        ]
        flat = [t for p in pairs for t in p]
        v = [d["embedding"] for d in S.embed(flat)["data"]]
        for i in range(len(flat)):
            partner = i ^ 1
            best = max((j for j in range(len(flat)) if j != i), key=lambda j: dot(v[i], v[j]))
            self.assertEqual(best, partner, f"{flat[i]!r} is nearest to {flat[best]!r}")

    def test_single_string_and_batch_agree(self):
        # Padding in a batch must not change a text's vector.
        texts = ["short one", "a much longer sentence that forces the batch to be padded well beyond the short one"]
        batch = [d["embedding"] for d in S.embed(texts)["data"]]
        alone = S.embed(texts[0])["data"]
        self.assertEqual(len(alone), 1)
        self.assertLess(max(abs(a - b) for a, b in zip(alone[0]["embedding"], batch[0])), 1e-5)

    def test_known_vector(self):
        # all-MiniLM-L6-v2's vector of the model card's style of sentence;
        # cross-checked against an independent ONNX export (cosine 0.9996).
        v = S.embed("A man is eating food.")["data"][0]["embedding"]
        for got, want in zip(v[:5], [0.03324, 0.00441, -0.00628, 0.04838, -0.13870]):
            self.assertAlmostEqual(got, want, delta=2e-4)

    def test_base64(self):
        f = S.embed(["hello world"])["data"][0]["embedding"]
        b = S.embed(["hello world"], encoding_format="base64")["data"][0]["embedding"]
        self.assertIsInstance(b, str)
        decoded = struct.unpack(f"<{DIMS}f", base64.b64decode(b))
        self.assertLess(max(abs(x - y) for x, y in zip(f, decoded)), 1e-6)

    def test_any_model_name_and_dimensions(self):
        r = S.embed("x", model="nomic-embed-text", dimensions=DIMS)
        self.assertEqual(r["model"], "all-MiniLM-L6-v2")
        self.assertEqual(len(r["data"][0]["embedding"]), DIMS)

    def test_long_input_truncated(self):
        r = S.embed(" ".join(["word"] * 2000))
        self.assertEqual(len(r["data"][0]["embedding"]), DIMS)
        self.assertEqual(r["usage"]["prompt_tokens"], 256)


    def test_numpy_backend_agrees(self):
        # The numpy reference encoder, served on its own, gives the same
        # vectors as the ONNX graph.
        texts = ["I moved to Berlin last spring.", "What did the assistant recommend for the flight?", "ok"]
        a = [d["embedding"] for d in S.embed(texts)["data"]]
        with Server({"EMBED_BACKEND": "numpy"}) as ref:
            self.assertIn("numpy", ref.banner)
            b = [d["embedding"] for d in ref.embed(texts)["data"]]
        self.assertLess(max(abs(x - y) for u, w in zip(a, b) for x, y in zip(u, w)), 1e-5)


class Errors(unittest.TestCase):
    def bad(self, body=None, raw=None, status=400, param=None):
        code, r = S.request("POST", "/v1/embeddings", body, raw=raw)
        self.assertEqual(code, status, r)
        self.assertIn("message", r["error"])
        self.assertEqual(r["error"]["type"], "invalid_request_error")
        if param:
            self.assertEqual(r["error"]["param"], param)
        return r

    def test_bad_inputs(self):
        self.bad({"input": "x"}, param="model")
        self.bad({"model": "m"}, param="input")
        self.bad({"model": "m", "input": ""}, param="input")
        self.bad({"model": "m", "input": []}, param="input")
        self.bad({"model": "m", "input": ["ok", ""]}, param="input")
        self.bad({"model": "m", "input": ["ok", 3.5]}, param="input")
        self.bad({"model": "m", "input": [1, 2, 3]}, param="input")
        self.bad({"model": "m", "input": {"text": "x"}}, param="input")
        self.bad({"model": "m", "input": ["x"] * 2049}, param="input")
        self.bad({"model": "m", "input": "x", "encoding_format": "int8"}, param="encoding_format")
        self.bad({"model": "m", "input": "x", "dimensions": 256}, param="dimensions")
        self.bad(raw=b"{not json")
        self.bad(raw=b"[1,2]")

    def test_routes(self):
        code, r = S.request("GET", "/v1/models")
        self.assertEqual(code, 200)
        self.assertEqual(r["object"], "list")
        self.assertEqual(r["data"][0]["id"], "all-MiniLM-L6-v2")
        code, r = S.request("GET", "/v1/models/all-MiniLM-L6-v2")
        self.assertEqual((code, r["id"]), (200, "all-MiniLM-L6-v2"))
        self.assertEqual(S.request("GET", "/v1/models/gpt-4")[0], 404)
        self.assertEqual(S.request("GET", "/v1/embeddings")[0], 405)
        self.assertEqual(S.request("GET", "/nope")[0], 404)
        code, r = S.request("GET", "/health")
        self.assertEqual((code, r["dimensions"]), (200, DIMS))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"embed: {passed} passed, {failed} failed" + (f", {len(result.skipped)} skipped" if result.skipped else ""))
    sys.exit(1 if failed or result.testsRun == 0 else 0)
