"""The packaged model multiplies in int8 (#9): every int8-weight MatMul is rewritten, nothing else,
and the vectors stay close to those of the float multiplications."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from toolcrib.search.int8 import multiply_in_int8
from toolcrib.search.vectors import (
    _TOKENIZER,
    MODEL_SHA256,
    REWRITTEN_SHA256,
    MiniLM,
    _checked_bytes,
    _model_path,
)

TEXTS = [
    "A man is eating food.",
    "list files in a folder",
    "Create a new branch in a GitHub repository from an existing commit or the default branch",
    "weather forecast for Bergen tomorrow",
    "send a message to the #general channel",
    "ping",
    "Search issues and pull requests across all repositories with the GitHub search syntax " * 6,
]


def _ops(model: bytes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in onnx.load_from_string(model).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def test_r5_8_every_int8_weight_matmul_of_the_packaged_model_is_rewritten() -> None:
    packaged = _checked_bytes(_model_path(), MODEL_SHA256)
    rewritten, count = multiply_in_int8(packaged)
    before, after = _ops(packaged), _ops(rewritten)
    assert count == 30  # 6 layers x (query, key, value, attention output, feed-forward input)
    assert after["MatMulInteger"] == after["DynamicQuantizeLinear"] == count
    assert after["MatMul"] == before["MatMul"] - count  # the attention products stay float
    assert after["Cast"] == before["Cast"]  # each weight's int8->float cast is gone, each product's added
    proto = onnx.load_from_string(rewritten)
    int8 = {t.name for t in proto.graph.initializer if t.data_type == TensorProto.INT8}
    lookups = [n for n in proto.graph.node if n.op_type == "Gather" and n.input[0] in int8]
    assert len(lookups) == 2  # the word and position tables are read as int8, not as float copies
    assert after["Gather"] == before["Gather"] + 2  # and their per-row scales gathered beside them
    # What the cache of the rewritten model checks its file against (search/model_cache.py): a
    # change of the rewrite must change this pin (and REWRITE_VERSION), or nothing is cached.
    assert hashlib.sha256(rewritten).hexdigest() == REWRITTEN_SHA256


def test_r5_8_int8_multiplications_stay_close_to_float_multiplications() -> None:
    model = MiniLM(_model_path(), _TOKENIZER)
    float_path = MiniLM(_model_path(), _TOKENIZER)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    float_path._session = onnxruntime.InferenceSession(
        _checked_bytes(_model_path(), MODEL_SHA256), options, providers=["CPUExecutionProvider"]
    )
    cosines = (model.encode(TEXTS) * float_path.encode(TEXTS)).sum(axis=1)
    assert float(cosines.min()) >= 0.97
    assert float(cosines.mean()) >= 0.99


def _graph(weight: Any, scale: Any) -> bytes:
    nodes = [
        helper.make_node("Cast", ["w"], ["w_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_float", "scale"], ["w_scaled"]),
        helper.make_node("MatMul", ["x", "w_scaled"], ["y"], name="dense"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(scale, "scale")],
    )
    return bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def test_r5_8_a_rewritten_matmul_computes_what_the_float_one_did() -> None:
    rng = np.random.default_rng(7)
    weight = rng.integers(-127, 128, size=(4, 3), dtype=np.int8)
    scale = np.array([[0.01, 0.02, 0.005]], dtype=np.float32)
    x = rng.standard_normal((1, 4)).astype(np.float32)
    original = _graph(weight, scale)
    rewritten, count = multiply_in_int8(original)
    assert count == 1
    assert _ops(rewritten).get("MatMul", 0) == 0
    run = [
        onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
        for m in (original, rewritten)
    ]
    assert np.allclose(run[0], run[1], rtol=0.05, atol=0.02)


@pytest.mark.parametrize(
    ("weight", "scale"),
    [
        (np.ones((4, 3), dtype=np.float32), np.ones((1, 3), dtype=np.float32)),  # float weights
        (np.ones((4, 3), dtype=np.int8), np.ones((4, 1), dtype=np.float32)),  # a scale per input row
    ],
    ids=["float-weights", "row-scale"],
)
def test_r5_8_a_matmul_of_another_form_is_left_as_it_is(weight: Any, scale: Any) -> None:
    original = _graph(weight, scale)
    rewritten, count = multiply_in_int8(original)
    assert count == 0
    assert _ops(rewritten) == _ops(original)


def _lookup_graph(table: Any, scale: Any) -> bytes:
    nodes = [
        helper.make_node("Cast", ["table"], ["table_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["table_float", "scale"], ["table_scaled"]),
        helper.make_node("Gather", ["table_scaled", "ids"], ["rows"], name="embed", axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 5])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [1, 5, 3])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(scale, "scale")],
    )
    return bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


@pytest.mark.parametrize(
    "scale",
    [
        np.array([[0.5], [0.01], [0.02], [0.3], [0.07], [0.11]], dtype=np.float32),  # one per row
        np.array([[0.01, 0.02, 0.005]], dtype=np.float32),  # one per column
    ],
    ids=["row-scale", "column-scale"],
)
def test_r5_8_a_lookup_in_an_int8_table_gives_exactly_the_float_tables_rows(scale: Any) -> None:
    rng = np.random.default_rng(11)
    table = rng.integers(-127, 128, size=(6, 3), dtype=np.int8)
    ids = np.array([[0, 5, 2, 2, 4]], dtype=np.int64)
    original = _lookup_graph(table, scale)
    rewritten, _ = multiply_in_int8(original)
    gathers = [n for n in onnx.load_from_string(rewritten).graph.node if n.op_type == "Gather"]
    assert gathers[0].input[0] == "table"  # the int8 table itself, not a float copy of it
    run = [
        onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(["rows"], {"ids": ids})[0]
        for m in (original, rewritten)
    ]
    np.testing.assert_array_equal(run[0], run[1])
