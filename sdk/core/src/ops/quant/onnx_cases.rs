//! ONNX's own node tests for the quant ops whose models are opset 10 (QLinearConv,
//! MatMulInteger, ConvInteger): the importer takes opsets 11+, so the conformance runner
//! lists them as excluded; here each op runs on the cases' generated inputs (written by
//! `tests/conformance/gen_node_tests.py`) and must reproduce the expected outputs exactly.

use std::path::{Path, PathBuf};

use crate::ops::{Attr, Attrs, Op, eval};
use crate::tensor::Tensor;

fn data_dir() -> PathBuf {
    std::env::var_os("EDGERT_CONFORMANCE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/data"))
}

/// Runs `op` on every data set of `case`; returns false (after saying so) when the data has
/// not been generated.
fn check_case(case: &str, op: &dyn Op) -> bool {
    let dir = data_dir().join(case);
    if !dir.is_dir() {
        println!("skipped: {case}: no conformance data at {} (run tests/conformance/gen_node_tests.py)", dir.display());
        return false;
    }
    let read = |p: PathBuf| crate::onnx::read_tensor_pb(&p).map(|(_, t)| t);
    let mut sets: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    sets.sort();
    assert!(!sets.is_empty(), "{case}: no data sets");
    for set in sets {
        let inputs: Vec<Tensor> = (0..)
            .map(|i| set.join(format!("input_{i}.pb")))
            .take_while(|p| p.exists())
            .map(|p| read(p).unwrap())
            .collect();
        let want: Vec<Tensor> = (0..)
            .map(|i| set.join(format!("output_{i}.pb")))
            .take_while(|p| p.exists())
            .map(|p| read(p).unwrap())
            .collect();
        let refs: Vec<Option<&Tensor>> = inputs.iter().map(Some).collect();
        let got = eval(op, &refs).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(got, want, "{case} ({})", set.display());
    }
    true
}

#[test]
fn opset10_cases_match_onnx() {
    use super::{conv_integer::ConvInteger, matmul_integer::MatMulInteger, qlinear_conv::QLinearConv};
    let pads = Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1]));
    let ran = [
        check_case("test_qlinearconv", &QLinearConv::build(&Attrs::new(), 10).unwrap()),
        check_case("test_matmulinteger", &MatMulInteger),
        check_case("test_convinteger_without_padding", &ConvInteger::build(&Attrs::new(), 10).unwrap()),
        check_case("test_convinteger_with_padding", &ConvInteger::build(&pads, 10).unwrap()),
    ];
    println!("{} of {} opset-10 quant cases ran", ran.iter().filter(|&&r| r).count(), ran.len());
}
