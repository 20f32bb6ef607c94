//! ONNX import errors: unknown ops name node, op type, index and opset; old opsets are
//! refused with a hint; external data loads from inside the model's folder only.

use edgert_core::onnx::{ModelProto, import_model, load_model};
use prost::Message;

// The generated schema types, re-exported for building test models by hand.
use edgert_core::onnx::proto_types::{
    GraphProto, NodeProto, OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto, tensor_proto, tensor_shape_proto, type_proto,
};

fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn model(nodes: Vec<NodeProto>, initializers: Vec<TensorProto>, opset: i64) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![
            OperatorSetIdProto { domain: Some(String::new()), version: Some(opset) },
            // Converters declare unused domains: they must be tolerated.
            OperatorSetIdProto { domain: Some("ai.onnx.ml".into()), version: Some(3) },
        ],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: nodes,
            initializer: initializers,
            input: vec![value("x", &[2])],
            output: vec![value("y", &[2])],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec!["y".into()],
        ..Default::default()
    }
}

#[test]
fn unknown_op_names_node_type_index_and_opset() {
    let m = model(vec![node("FancyOp", "my_node", &["x"])], vec![], 17);
    let err = import_model(&m.encode_to_vec(), None).unwrap_err().to_string();
    for want in ["FancyOp", "my_node", "#0", "opset 17"] {
        assert!(err.contains(want), "`{want}` missing from: {err}");
    }
}

#[test]
fn old_opsets_are_refused_with_a_hint() {
    let m = model(vec![node("ReduceSum", "n", &["x"])], vec![], 9);
    let err = import_model(&m.encode_to_vec(), None).unwrap_err().to_string();
    assert!(err.contains("opset 9") && err.contains("convert_version"), "{err}");
}

#[test]
fn garbage_is_an_error() {
    assert!(import_model(b"definitely not protobuf \xff\xff\xff", None).is_err());
    assert!(import_model(&[], None).is_err(), "an empty file has no graph");
}

fn external(location: &str, bytes: usize) -> TensorProto {
    TensorProto {
        name: Some("axes".into()),
        dims: vec![1],
        data_type: Some(7),
        data_location: Some(tensor_proto::DataLocation::External as i32),
        external_data: vec![
            StringStringEntryProto { key: Some("location".into()), value: Some(location.into()) },
            StringStringEntryProto { key: Some("length".into()), value: Some(bytes.to_string()) },
        ],
        ..Default::default()
    }
}

#[test]
fn external_data_stays_inside_the_model_folder() {
    let dir = std::env::temp_dir().join(format!("edgert-ext-{}", std::process::id()));
    let sub = dir.join("model");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("weights.bin"), 0i64.to_le_bytes()).unwrap();
    std::fs::write(dir.join("secret.bin"), 0i64.to_le_bytes()).unwrap();
    let mk = |loc: &str| {
        let mut n = node("ReduceSum", "sum", &["x", "axes"]);
        n.attribute.push(edgert_core::onnx::proto_types::AttributeProto {
            name: Some("keepdims".into()),
            r#type: Some(2),
            i: Some(1),
            ..Default::default()
        });
        model(vec![n], vec![external(loc, 8)], 17)
    };
    let ok = sub.join("ok.onnx");
    std::fs::write(&ok, mk("weights.bin").encode_to_vec()).unwrap();
    let g = load_model(&ok).expect("external data inside the folder loads");
    assert_eq!(g.constants.len(), 1);

    for bad in ["../secret.bin", "/etc/passwd", "sub/../../secret.bin"] {
        let p = sub.join("bad.onnx");
        std::fs::write(&p, mk(bad).encode_to_vec()).unwrap();
        let err = load_model(&p).unwrap_err().to_string();
        assert!(err.contains("leaves the model's folder"), "{bad}: {err}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.join("secret.bin"), sub.join("link.bin")).unwrap();
        let p = sub.join("link.onnx");
        std::fs::write(&p, mk("link.bin").encode_to_vec()).unwrap();
        let err = load_model(&p).unwrap_err().to_string();
        assert!(err.contains("outside the model's folder"), "{err}");
    }
    // Reading past the end of the data file is an error too.
    let mut short = mk("weights.bin");
    if let Some(g) = short.graph.as_mut() {
        g.initializer[0]
            .external_data
            .push(StringStringEntryProto { key: Some("offset".into()), value: Some("4".into()) });
    }
    let p = sub.join("short.onnx");
    std::fs::write(&p, short.encode_to_vec()).unwrap();
    assert!(load_model(&p).unwrap_err().to_string().contains("past the end"));
    std::fs::remove_dir_all(&dir).ok();
}
