"""Rewrites the shipped all-MiniLM-L6-v2 int8 model so ONNX Runtime keeps its weights in
eight bits instead of folding them to float at load (docs/hosting.md, "The embedder's
weights stay in eight bits").

The shipped model stores each weight as int8 values `q` and a float scale `s`, and
computes `Cast(q) * s` in the graph. Every input of that product is a constant, so ONNX
Runtime's constant folding turns it into a float tensor when it loads the model: the
linear layers' 10.6 M weights and the 11.7 M of the word-embedding table become 90 MB of
floats in every agent process. This script rewrites the graph so that no float copy
exists:

- each `MatMul(x, Cast(q) * s)` becomes `MatMulNBits(x, q + 128, s)` (ONNX Runtime's
  contrib op, 8 bits, blocks of 32, symmetric): the same integers and the same scale
  per output column, so the weights are bit for bit the shipped ones. `accuracy_level`
  4 lets the kernel multiply in int8 (each block of the input gets its own scale);
- each `Gather(Cast(q) * s, ids)` (the word and position tables) becomes
  `Cast(Gather(q, ids)) * Gather(s, ids)`: only the rows a text uses become floats;
- the weights are written to OUTPUT_MODEL.data, which ONNX Runtime maps from disk.

Usage: python scripts/embedder_int8.py SOURCE_MODEL OUTPUT_MODEL
Needs the `onnx` and `numpy` packages (scripts/setup.sh makes a virtual environment
for it).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCK = 32
ACCURACY_LEVEL = 4


def dequantized(producer, constants, name):
    """The (Mul, Cast, int8 name, scale name) that compute `name` as Cast(q) * s, or None."""
    mul = producer.get(name)
    if mul is None or mul.op_type != "Mul":
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast":
        return None
    q_name, s_name = cast.input[0], mul.input[1]
    if q_name not in constants or s_name not in constants:
        return None
    if constants[q_name].data_type != TensorProto.INT8:
        return None
    return mul, cast, q_name, s_name


def matmul_nbits(node, q, s, names):
    """A MatMulNBits node and its two constants for `x @ (q * s)`, q of shape K x N."""
    k, n = q.shape
    if k % BLOCK:
        raise SystemExit(f"{node.name}: K = {k} is not a multiple of {BLOCK}")
    blocks = k // BLOCK
    # Stored per output column, block by block; zero point 128 (the default for 8 bits).
    packed = (q.T.astype(np.int16) + 128).astype(np.uint8).reshape(n, blocks, BLOCK)
    scales = np.repeat(s.reshape(-1, 1).astype(np.float32), blocks, axis=1).reshape(-1)
    if scales.size != n * blocks:
        raise SystemExit(f"{node.name}: expected one scale per output column")
    b_name, s_name = names
    constants = [numpy_helper.from_array(packed, b_name), numpy_helper.from_array(scales, s_name)]
    rewritten = helper.make_node(
        "MatMulNBits",
        [node.input[0], b_name, s_name],
        list(node.output),
        name=f"{node.name}_nbits",
        domain="com.microsoft",
        K=k,
        N=n,
        bits=8,
        block_size=BLOCK,
        accuracy_level=ACCURACY_LEVEL,
    )
    return rewritten, constants


def gather_rows(node, q_name, s_name):
    """Nodes that gather int8 rows and their scales, then scale them to floats."""
    ids, out = node.input[1], node.output[0]
    return [
        helper.make_node("Gather", [q_name, ids], [f"{out}_q"], name=f"{node.name}_q"),
        helper.make_node("Gather", [s_name, ids], [f"{out}_s"], name=f"{node.name}_s"),
        helper.make_node("Cast", [f"{out}_q"], [f"{out}_f"], to=TensorProto.FLOAT, name=f"{node.name}_f"),
        helper.make_node("Mul", [f"{out}_f", f"{out}_s"], [out], name=f"{node.name}_m"),
    ]


def rewrite(model):
    graph = model.graph
    constants = {c.name: c for c in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    replaced, added, nodes = set(), [], []
    counts = {"MatMulNBits": 0, "Gather": 0}
    for node in graph.node:
        if node.op_type == "MatMul":
            found = dequantized(producer, constants, node.input[1])
            if found:
                mul, cast, q_name, s_name = found
                q = numpy_helper.to_array(constants[q_name])
                s = numpy_helper.to_array(constants[s_name])
                rewritten, new = matmul_nbits(node, q, s, (f"{q_name}_nbits", f"{s_name}_nbits"))
                nodes.append(rewritten)
                added.extend(new)
                replaced.update([mul.name, cast.name])
                counts["MatMulNBits"] += 1
                continue
        if node.op_type == "Gather":
            found = dequantized(producer, constants, node.input[0])
            if found:
                mul, cast, q_name, s_name = found
                nodes.extend(gather_rows(node, q_name, s_name))
                replaced.update([mul.name, cast.name])
                counts["Gather"] += 1
                continue
        nodes.append(node)
    nodes = [n for n in nodes if n.name not in replaced]
    used = {name for n in nodes for name in n.input}
    kept = [c for c in graph.initializer if c.name in used] + added
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return counts


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    source, output = sys.argv[1:]
    model = onnx.load(source)
    counts = rewrite(model)
    # all-MiniLM-L6-v2: 36 linear layers, the word and the position table.
    if counts != {"MatMulNBits": 36, "Gather": 2}:
        raise SystemExit(f"{source}: not the expected model (rewrote {counts})")
    onnx.checker.check_model(model)
    # The weights go to a file of their own beside the graph, which ONNX Runtime maps
    # into memory instead of copying: rows of the word table no text used are never
    # read from disk.
    data = f"{os.path.basename(output)}.data"
    onnx.save_model(
        model,
        output,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data,
        size_threshold=1024,
    )
    print(f"{output}: {counts['MatMulNBits']} linear layers and {counts['Gather']} tables kept in 8 bits")


if __name__ == "__main__":
    main()
