//! The C ABI from the caller's side: BlazeFace end to end against onnxruntime's golden
//! outputs, the batcher from many threads against unbatched runs, and misuse (null pointers,
//! unknown names, small buffers, corrupt files) reported as status codes with messages.

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::PathBuf;
use std::ptr::{null, null_mut};

use edgert::*;
use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::{Tensor, npy};
use prost::Message;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(edgert_last_error()) }.to_string_lossy().into_owned()
}

fn ok(s: EdgertStatus) {
    assert_eq!(s, EdgertStatus::Ok, "{}", last_error());
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn f32_bytes(t: &Tensor) -> &[u8] {
    t.view().data.as_bytes()
}

const F32: c_int = EdgertDtype::F32 as c_int;

#[test]
fn blazeface_through_the_c_abi_matches_the_golden() {
    let model = cstr(root().join("models/blazeface_short.onnx").to_str().unwrap());
    let gold = root().join("tests/goldens/blazeface_short");
    let input = npy::read(&gold.join("input_0.npy")).unwrap();
    let mut engine = null_mut();
    unsafe {
        ok(edgert_engine_build(model.as_ptr(), null(), 0, &mut engine));
        // Round trip through the engine file in memory, as firmware with no file system would.
        let path = std::env::temp_dir().join(format!("capi-abi-{}.edgert", std::process::id()));
        let cpath = cstr(path.to_str().unwrap());
        ok(edgert_engine_save(engine, cpath.as_ptr()));
        edgert_engine_free(engine);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let mut engine = null_mut();
        ok(edgert_engine_load_from_memory(bytes.as_ptr(), bytes.len(), &mut engine));

        let mut n = 0usize;
        ok(edgert_engine_num_outputs(engine, &mut n));
        assert_eq!(n, 2);
        let mut name: *const c_char = null();
        ok(edgert_engine_input_name(engine, 0, &mut name));
        let in_name = CStr::from_ptr(name).to_owned();
        let dims = [1usize, 3, 128, 128];
        let shape = EdgertShape { name: in_name.as_ptr(), dims: dims.as_ptr(), ndims: 4 };
        let mut ctx = null_mut();
        ok(edgert_context_create(engine, &shape, 1, &mut ctx));
        // The context holds the engine: freeing the handle early is allowed.
        edgert_engine_free(engine);
        let b = f32_bytes(&input);
        ok(edgert_context_set_input(ctx, in_name.as_ptr(), F32, b.as_ptr().cast(), b.len()));
        ok(edgert_context_run(ctx));
        for (i, out) in ["regressors", "classificators"].iter().enumerate() {
            let want = npy::read(&gold.join(format!("output_{i}.npy"))).unwrap();
            let cname = cstr(out);
            let (mut dtype, mut od, mut nd) = (EdgertDtype::I8, [0usize; 8], 0usize);
            ok(edgert_context_output_info(ctx, cname.as_ptr(), &mut dtype, od.as_mut_ptr(), 8, &mut nd));
            assert_eq!((dtype, &od[..nd]), (EdgertDtype::F32, want.shape()));
            let mut got = vec![0f32; want.len()];
            let mut written = 0;
            let cap = got.len() * 4;
            ok(edgert_context_get_output(ctx, cname.as_ptr(), got.as_mut_ptr().cast(), cap, &mut written));
            assert_eq!(written, cap);
            let got = Tensor::from_f32(want.shape(), got).unwrap();
            assert!(
                mismatch(&got, &want, Tolerance::F32).is_none(),
                "{out}: {:?}",
                mismatch(&got, &want, Tolerance::F32)
            );
        }
        edgert_context_free(ctx);
    }
}

#[test]
fn misuse_is_a_status_with_a_message() {
    let model = cstr(root().join("models/blazeface_short.onnx").to_str().unwrap());
    unsafe {
        let mut engine = null_mut();
        // Null pointers, each named.
        assert_eq!(edgert_engine_build(null(), null(), 0, &mut engine), EdgertStatus::NullPointer);
        assert!(last_error().contains("onnx_path"), "{}", last_error());
        assert!(engine.is_null());
        assert_eq!(edgert_engine_build(model.as_ptr(), null(), 0, null_mut()), EdgertStatus::NullPointer);
        assert!(last_error().contains("out_engine"));
        assert_eq!(edgert_engine_build(model.as_ptr(), null(), 2, &mut engine), EdgertStatus::NullPointer);
        assert!(last_error().contains("shapes"));
        assert_eq!(edgert_context_run(null_mut()), EdgertStatus::NullPointer);
        assert_eq!(edgert_engine_save(null(), model.as_ptr()), EdgertStatus::NullPointer);
        let mut n = 0;
        assert_eq!(edgert_engine_num_inputs(null(), &mut n), EdgertStatus::NullPointer);
        assert_eq!(edgert_batcher_infer(null(), null(), 0, null_mut(), 0), EdgertStatus::NullPointer);
        edgert_engine_free(null_mut());
        edgert_context_free(null_mut());
        edgert_batcher_free(null_mut());

        // Files and bytes that are not what they claim.
        let missing = cstr("/nonexistent/x.edgert");
        assert_eq!(edgert_engine_load(missing.as_ptr(), &mut engine), EdgertStatus::Io);
        assert!(last_error().contains("/nonexistent/x.edgert"));
        let junk = [7u8; 100];
        assert_eq!(edgert_engine_load_from_memory(junk.as_ptr(), junk.len(), &mut engine), EdgertStatus::Engine);
        assert_eq!(
            edgert_engine_build_from_memory(junk.as_ptr(), junk.len(), null(), 0, &mut engine),
            EdgertStatus::Import
        );
        let bad_utf8 = [0xffu8, 0xfe, 0];
        assert_eq!(edgert_engine_load(bad_utf8.as_ptr().cast(), &mut engine), EdgertStatus::InvalidArgument);

        // A real engine, wrongly used.
        ok(edgert_engine_build(model.as_ptr(), null(), 0, &mut engine));
        let mut name = null();
        assert_eq!(edgert_engine_output_name(engine, 9, &mut name), EdgertStatus::NotFound);
        assert!(name.is_null() && last_error().contains("#9"));
        let mut ctx = null_mut();
        let input = cstr("input");
        let wrong = [1usize, 3, 7];
        let shape = EdgertShape { name: input.as_ptr(), dims: wrong.as_ptr(), ndims: 3 };
        assert_ne!(edgert_context_create(engine, &shape, 1, &mut ctx), EdgertStatus::Ok);
        assert!(ctx.is_null() && last_error().contains("input"), "{}", last_error());
        ok(edgert_context_create(engine, null(), 0, &mut ctx));
        let data = vec![0f32; 3 * 128 * 128];
        assert_eq!(edgert_context_set_input(ctx, input.as_ptr(), F32, data.as_ptr().cast(), 12), EdgertStatus::Input);
        assert!(last_error().contains("12 bytes"), "{}", last_error());
        assert_eq!(
            edgert_context_set_input(ctx, input.as_ptr(), 42, data.as_ptr().cast(), 4),
            EdgertStatus::InvalidArgument
        );
        let i64t = EdgertDtype::I64 as c_int;
        assert_eq!(
            edgert_context_set_input(ctx, input.as_ptr(), i64t, data.as_ptr().cast(), data.len() * 4),
            EdgertStatus::Input
        );
        let nope = cstr("nope");
        assert_eq!(edgert_context_set_input(ctx, nope.as_ptr(), F32, data.as_ptr().cast(), 4), EdgertStatus::NotFound);
        assert_eq!(edgert_context_set_input(ctx, input.as_ptr(), F32, null(), 4), EdgertStatus::NullPointer);
        ok(edgert_context_set_input(ctx, input.as_ptr(), F32, data.as_ptr().cast(), data.len() * 4));
        ok(edgert_context_run(ctx));
        // A small buffer reports the size needed and copies nothing.
        let scores = cstr("classificators");
        let mut small = [0f32; 4];
        let mut need = 0;
        assert_eq!(
            edgert_context_get_output(ctx, scores.as_ptr(), small.as_mut_ptr().cast(), 16, &mut need),
            EdgertStatus::BufferTooSmall
        );
        assert_eq!((need, small), (896 * 4, [0.0; 4]));
        let (mut dt, mut nd) = (EdgertDtype::F32, 0);
        let mut dims = [0usize; 1];
        assert_eq!(
            edgert_context_output_info(ctx, scores.as_ptr(), &mut dt, dims.as_mut_ptr(), 1, &mut nd),
            EdgertStatus::BufferTooSmall
        );
        assert_eq!(nd, 3);
        edgert_context_free(ctx);
        edgert_engine_free(engine);
    }
    // Status names and sizes for any int C may pass.
    assert_eq!(unsafe { CStr::from_ptr(edgert_status_name(7)) }.to_str().unwrap(), "EDGERT_STATUS_BUFFER_TOO_SMALL");
    assert_eq!(unsafe { CStr::from_ptr(edgert_status_name(-3)) }.to_str().unwrap(), "unknown");
    assert_eq!((edgert_dtype_size(F32), edgert_dtype_size(77)), (4, 0));
}

#[test]
fn the_last_error_is_per_thread() {
    let missing = cstr("/nonexistent/a.edgert");
    let mut e = null_mut();
    assert_eq!(unsafe { edgert_engine_load(missing.as_ptr(), &mut e) }, EdgertStatus::Io);
    let other = std::thread::spawn(last_error).join().unwrap();
    assert_eq!(other, "");
    assert!(last_error().contains("a.edgert"));
}

/// `y = relu(x · W)` with a symbolic batch, `x` `[N,4]` → `y` `[N,2]`, as ONNX bytes.
fn dense_onnx() -> Vec<u8> {
    use edgert_core::onnx::proto_types::*;
    let dim = |d: tensor_shape_proto::dimension::Value| tensor_shape_proto::Dimension {
        value: Some(d),
        ..Default::default()
    };
    let value = |name: &str, width: i64| ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto {
                    dim: vec![
                        dim(tensor_shape_proto::dimension::Value::DimParam("N".into())),
                        dim(tensor_shape_proto::dimension::Value::DimValue(width)),
                    ],
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let w = TensorProto {
        name: Some("W".into()),
        dims: vec![4, 2],
        data_type: Some(1),
        float_data: vec![0.5, -1.0, 0.25, 2.0, -0.75, 0.5, 1.5, -0.25],
        ..Default::default()
    };
    let node = |op: &str, inputs: &[&str], out: &str| NodeProto {
        op_type: Some(op.into()),
        name: Some(out.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![out.into()],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(GraphProto {
            name: Some("dense".into()),
            node: vec![node("MatMul", &["x", "W"], "mm"), node("Relu", &["mm"], "y")],
            initializer: vec![w],
            input: vec![value("x", 4)],
            output: vec![value("y", 2)],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Sends the address of a handle that is safe to share across threads (the batcher).
#[derive(Clone, Copy)]
struct Shared(*const EdgertBatcher);
unsafe impl Send for Shared {}

#[test]
fn the_batcher_serves_many_threads_with_unbatched_answers() {
    let bytes = dense_onnx();
    let (x, y) = (cstr("x"), cstr("y"));
    let sample = |k: usize| -> Vec<f32> { (0..4).map(|i| ((k * 4 + i) as f32 * 0.61).cos()).collect() };
    unsafe {
        let mut engine = null_mut();
        ok(edgert_engine_build_from_memory(bytes.as_ptr(), bytes.len(), null(), 0, &mut engine));
        // The unbatched answers, from a batch-1 context.
        // The batch dimension is symbolic: a context needs it given.
        let one = [1usize, 4];
        let shape = EdgertShape { name: x.as_ptr(), dims: one.as_ptr(), ndims: 2 };
        let mut ctx = null_mut();
        ok(edgert_context_create(engine, &shape, 1, &mut ctx));
        let want: Vec<[f32; 2]> = (0..6)
            .map(|k| {
                let s = sample(k);
                ok(edgert_context_set_input(ctx, x.as_ptr(), F32, s.as_ptr().cast(), 16));
                ok(edgert_context_run(ctx));
                let (mut out, mut n) = ([0f32; 2], 0);
                ok(edgert_context_get_output(ctx, y.as_ptr(), out.as_mut_ptr().cast(), 8, &mut n));
                out
            })
            .collect();
        edgert_context_free(ctx);

        let mut b = null_mut();
        assert_eq!(edgert_batcher_create(engine, null(), 0, 0, 1000, &mut b), EdgertStatus::InvalidArgument);
        ok(edgert_batcher_create(engine, null(), 0, 3, 20_000, &mut b));
        edgert_engine_free(engine);
        let shared = Shared(b);
        let threads: Vec<_> = (0..6)
            .map(|k| {
                let s = sample(k);
                std::thread::spawn(move || {
                    let shared = shared;
                    let (x, y) = (cstr("x"), cstr("y"));
                    let input = EdgertInput { name: x.as_ptr(), dtype: F32, data: s.as_ptr().cast(), bytes: 16 };
                    let mut got = [0f32; 2];
                    let mut out =
                        EdgertOutput { name: y.as_ptr(), data: got.as_mut_ptr().cast(), capacity: 8, bytes: 0 };
                    let st = edgert_batcher_infer(shared.0, &input, 1, &mut out, 1);
                    (k, st, last_error(), out.bytes, got)
                })
            })
            .collect();
        for t in threads {
            let (k, st, msg, n, got) = t.join().unwrap();
            assert_eq!(st, EdgertStatus::Ok, "request {k}: {msg}");
            assert_eq!((n, got), (8, want[k]), "request {k}");
        }
        // A request that does not fit is refused before it is queued.
        let s = sample(0);
        let input = EdgertInput { name: x.as_ptr(), dtype: F32, data: s.as_ptr().cast(), bytes: 12 };
        let mut got = [0f32; 2];
        let mut out = EdgertOutput { name: y.as_ptr(), data: got.as_mut_ptr().cast(), capacity: 8, bytes: 0 };
        assert_eq!(edgert_batcher_infer(b, &input, 1, &mut out, 1), EdgertStatus::Input);
        let input = EdgertInput { bytes: 16, ..input };
        out.capacity = 4;
        assert_eq!(edgert_batcher_infer(b, &input, 1, &mut out, 1), EdgertStatus::BufferTooSmall);
        assert_eq!(out.bytes, 8);
        edgert_batcher_free(b);
    }
}
