"""The packaged model rewritten to multiply in int8 (#9): the same weights, ~1.5–2x as fast.

The model ships its matrix weights as int8 with one float scale per output column, read back as
``MatMul(x, Cast(W) * scale)``. onnxruntime folds that product at load, so every multiplication
runs in float32 (three quarters of the encoding time). Here each such ``MatMul`` becomes
``DynamicQuantizeLinear(x)`` → ``MatMulInteger(x_q, W, x_zero)`` → ``Cast`` → ``* (x_scale *
scale)``, which onnxruntime fuses into its int8 kernels (``DynamicQuantizeMatMul``, VNNI where the
CPU has it). The weights are the packaged ones, untouched; only the activations are quantized, per
text, as the model runs. The feed-forward layers' output ``MatMul``s, which read a GELU's long-tailed
output, stay in float (see ``_reads_gelu``). The vectors differ slightly from the float path
(cosine with it on the 623-tool catalog: mean 0.9975, at least 0.993), so the vectors cached in
the store are keyed by a model id of their own; what counts is search quality on the evaluation
sets, measured again with the gate refitted on these vectors (``bench/fit_gate.py``,
``bench/search_quality.py``).

The embedding tables ship the same way, ``Gather(Cast(W) * scale, ids)``, and onnxruntime folds
``Cast(W) * scale`` into a float copy of each table at load (the word table alone: 47 MB, four
times its int8 size). Each such lookup becomes ``Gather(W, ids)`` → ``Cast`` → ``* scale`` (the
scale's rows gathered too when there is one per row): the same products of the same numbers, so
the same vectors, bit for bit, from the int8 table.

Nothing else of the graph changes, and a ``MatMul`` or ``Gather`` not of those exact forms is
left as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["REWRITE_VERSION", "multiply_in_int8"]

REWRITE_VERSION = 1
"""Names the rewrite in the cached model's file name (:mod:`toolcrib.search.model_cache`): raise it
with any change of what ``multiply_in_int8`` writes, with ``vectors.REWRITTEN_SHA256``."""

_INT8 = 3  # onnx.TensorProto.INT8
_FLOAT = 1  # onnx.TensorProto.FLOAT


def multiply_in_int8(model: bytes) -> tuple[bytes, int]:
    """The model with its int8-weight ``MatMul``s rewritten; and how many were rewritten."""
    import onnx
    from onnx import helper

    proto = onnx.load_from_string(model)
    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    nodes: list[Any] = []
    rewritten = 0
    for node in graph.node:
        lookup = _int8_table(node, producer, initializers)
        if lookup is not None:
            nodes += _gather_int8(node, *lookup)
            continue
        found = _int8_weight(node, producer, initializers)
        if found is None:
            nodes.append(node)
            continue
        weight, scale = found
        x, out = node.input[0], node.output[0]
        k = f"{node.name or out}/int8"
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [f"{k}/x", f"{k}/x_scale", f"{k}/x_zero"]),
            helper.make_node("MatMulInteger", [f"{k}/x", weight, f"{k}/x_zero"], [f"{k}/product"]),
            helper.make_node("Cast", [f"{k}/product"], [f"{k}/float"], to=_FLOAT),
            helper.make_node("Mul", [f"{k}/x_scale", scale], [f"{k}/scale"]),
            helper.make_node("Mul", [f"{k}/float", f"{k}/scale"], [out]),
        ]
        rewritten += 1
    del graph.node[:]
    graph.node.extend(_live(nodes, {o.name for o in graph.output}))
    return proto.SerializeToString(), rewritten


def _int8_weight(node: Any, producer: dict[str, Any], initializers: dict[str, Any]) -> tuple[str, str] | None:
    """``(W, scale)`` when ``node`` is ``MatMul(x, Cast(W) * scale)``: W an int8 matrix, scale a
    float row of one value per output column; otherwise None."""
    if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx"):
        return None
    if _reads_gelu(node.input[0], producer):
        return None
    for weight, scale, _, columns, dims in _dequantized(node.input[1], producer, initializers):
        if dims in ([1, columns], [columns], [1], []):
            return weight, scale
    return None


def _int8_table(
    node: Any, producer: dict[str, Any], initializers: dict[str, Any]
) -> tuple[str, str, bool] | None:
    """``(W, scale, per_row)`` when ``node`` is ``Gather(Cast(W) * scale, ids)`` along axis 0: W an
    int8 table, scale one float per row (``per_row``) or one per column or a single one."""
    if node.op_type != "Gather" or node.domain not in ("", "ai.onnx"):
        return None
    if any(a.name == "axis" and a.i != 0 for a in node.attribute):
        return None
    for table, scale, rows, columns, dims in _dequantized(node.input[0], producer, initializers):
        if dims == [rows, 1]:
            return table, scale, True
        if dims in ([1, columns], [columns], [1], []):
            return table, scale, False
    return None


def _dequantized(
    name: str, producer: dict[str, Any], initializers: dict[str, Any]
) -> Iterator[tuple[str, str, int, int, list[int]]]:
    """Each reading of ``name`` as ``Cast(W) * scale``, W an int8 matrix and scale a float
    initializer: ``(W, scale, W's rows, W's columns, scale's dims)``."""
    mul = producer.get(name)
    if mul is None or mul.op_type != "Mul":
        return
    for cast_out, scale in (mul.input, reversed(mul.input)):
        cast = producer.get(cast_out)
        if cast is None or cast.op_type != "Cast" or scale not in initializers:
            continue
        weight, factor = initializers.get(cast.input[0]), initializers[scale]
        if weight is None or weight.data_type != _INT8 or len(weight.dims) != 2 or factor.data_type != _FLOAT:
            continue
        rows, columns = weight.dims
        yield cast.input[0], scale, rows, columns, list(factor.dims)


def _gather_int8(node: Any, table: str, scale: str, per_row: bool) -> list[Any]:
    from onnx import helper

    ids, out = node.input[1], node.output[0]
    k = f"{node.name or out}/int8"
    nodes = [
        helper.make_node("Gather", [table, ids], [f"{k}/rows"], axis=0),
        helper.make_node("Cast", [f"{k}/rows"], [f"{k}/float"], to=_FLOAT),
    ]
    if per_row:
        nodes.append(helper.make_node("Gather", [scale, ids], [f"{k}/scale"], axis=0))
    nodes.append(helper.make_node("Mul", [f"{k}/float", f"{k}/scale" if per_row else scale], [out]))
    return nodes


def _reads_gelu(name: str, producer: dict[str, Any], depth: int = 3) -> bool:
    """Whether ``name`` is a GELU's output (``Erf`` within ``depth`` steps up). Those activations
    have a long tail that one int8 scale per text represents poorly: quantized, the feed-forward
    output layer alone moved the vectors the most (cosine with the float path, 623 tools: mean
    0.9948 with it rewritten, 0.9975 with it left in float), so it is left in float."""
    node = producer.get(name)
    if node is None:
        return False
    if node.op_type == "Erf":
        return True
    return depth > 0 and any(_reads_gelu(i, producer, depth - 1) for i in node.input)


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` without those whose results nothing reads any more (the unused float weights)."""
    while True:
        read = outputs | {name for node in nodes for name in node.input}
        kept = [node for node in nodes if any(out in read for out in node.output)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept
