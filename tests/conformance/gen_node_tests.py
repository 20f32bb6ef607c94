#!/usr/bin/env python3
"""Writes ONNX's own node tests as files, the layout of onnx's `backend-test-tools
generate-data`: <out>/<case>/model.onnx and test_data_set_<i>/{input,output}_<j>.pb.

The onnx wheel (pinned in tests/requirements.txt) carries the test *generators*, not their
data; this runs them. Only tensor-typed inputs/outputs are written: cases with sequences,
maps or optionals are skipped (edgert has tensors only) and listed in <out>/SKIPPED.txt.

Usage: gen_node_tests.py [OUT_DIR]   (default: tests/conformance/data)
"""
import os
import shutil
import sys
import warnings

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases

EXPECTED_ONNX = "1.23.2"


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "data")
    if onnx.__version__ != EXPECTED_ONNX:
        print(f"warning: onnx {onnx.__version__}, cases were curated with {EXPECTED_ONNX}", file=sys.stderr)
    warnings.filterwarnings("ignore")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = collect_testcases(None)
    written, skipped = 0, []
    for case in cases:
        if case.kind != "node" or case.model is None or not case.data_sets:
            continue
        graph = case.model.graph
        values = list(graph.input) + list(graph.output)
        if any(not v.type.HasField("tensor_type") for v in values):
            skipped.append(f"{case.name}  # non-tensor input or output")
            continue
        d = os.path.join(out, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for kind, arrays, decls in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, arr in enumerate(arrays):
                    t = arr if isinstance(arr, TensorProto) else numpy_helper.from_array(arr, decls[j].name)
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
        written += 1
    with open(os.path.join(out, "SKIPPED.txt"), "w") as f:
        f.write("\n".join(skipped) + "\n")
    print(f"wrote {written} node test cases to {out} ({len(skipped)} skipped: non-tensor types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
