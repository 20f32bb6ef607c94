"""One line from `edgert bench --device cuda --json` (read on stdin), for tests/gpu/run.sh."""
import json
import sys

j = json.load(sys.stdin)


def median(key):
    return j[key]["median"]


print(
    f"{j['throughput_items_per_s']:.0f} items/s; median ms: end-to-end {median('latency_ms'):.3f}, "
    f"h2d {median('h2d_ms'):.3f}, gpu {median('gpu_compute_ms'):.3f}, d2h {median('d2h_ms'):.3f}"
    + (f" (+ host copy into staging {median('input_copy_to_staging_ms'):.3f})" if "input_copy_to_staging_ms" in j else "")
    + "; "
    f"first run {j['first_run_ms']:.0f} ms; cpu nodes {len(j['cpu_fallbacks'])}; "
    f"CUDA graph {j.get('cuda_graph', '?')}"
    + (f"; {j['tensor_core_convs']} conv(s) on tensor cores, {j['widened_f16_weights']} f16 weight(s) widened"
       if j.get("tensor_core_convs") or j.get("widened_f16_weights") else "")
)
