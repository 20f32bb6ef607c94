//! ONNX import: `ModelProto` bytes → [`Graph`].
//!
//! Supports default-domain opsets 11–21 (newer ones load with a warning, since node semantics
//! of the ops we support are unchanged there), external data files inside the model's
//! folder, and tolerates unused opset domains that converters declare.

#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
mod proto;

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use half::f16;
use prost::Message;

pub use proto::{ModelProto, TensorProto};

/// The generated ONNX schema types, for tools and tests that build models by hand.
pub mod proto_types {
    pub use super::proto::*;
}

use crate::error::{Error, Result};
use crate::graph::{Dim, Graph, ValueId};
use crate::ops::control::Subgraph;
use crate::ops::{Attr, Attrs};
use crate::tensor::{DType, Tensor, TensorData};

/// Oldest default-domain opset the importer accepts.
pub const MIN_OPSET: i64 = 11;
/// Newest opset whose semantics are checked; newer ones import with a warning.
pub const MAX_TESTED_OPSET: i64 = 21;
/// Newest opset that imports at all (onnx 1.23's latest; the changes after 21 that touch
/// our ops are new element types, which the type checks reject where unsupported).
pub const MAX_OPSET: i64 = 28;

/// Reads and imports a model file; external data is resolved relative to its folder.
pub fn load_model(path: &Path) -> Result<Graph> {
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    import_model(&bytes, Some(&dir))
}

/// Imports a serialized ModelProto. `dir` is where external data may be read from; with
/// `None`, models that use external data are rejected.
pub fn import_model(bytes: &[u8], dir: Option<&Path>) -> Result<Graph> {
    let model = ModelProto::decode(bytes).map_err(|e| Error::Import(format!("not a valid ONNX model: {e}")))?;
    import_proto(&model, dir)
}

/// Imports a decoded ModelProto.
pub fn import_proto(model: &ModelProto, dir: Option<&Path>) -> Result<Graph> {
    let mut opset = None;
    for o in &model.opset_import {
        let domain = o.domain.as_deref().unwrap_or("");
        if domain.is_empty() || domain == "ai.onnx" {
            opset = o.version;
        }
    }
    // IR version 3+ requires an opset import; very old models default to opset 1.
    let opset = opset.unwrap_or(1);
    if opset < MIN_OPSET {
        return Err(Error::Import(format!(
            "model uses opset {opset}; edgert supports opsets {MIN_OPSET}–{MAX_TESTED_OPSET}. \
             Convert it with onnx.version_converter.convert_version(model, 13)"
        )));
    }
    if opset > MAX_OPSET {
        return Err(Error::Import(format!(
            "model uses opset {opset}, newer than edgert knows ({MIN_OPSET}–{MAX_TESTED_OPSET}, \
             up to {MAX_OPSET} with a warning)"
        )));
    }
    if opset > MAX_TESTED_OPSET {
        log::warn!("model uses opset {opset}; edgert is tested up to opset {MAX_TESTED_OPSET}");
    }
    let g = model.graph.as_ref().ok_or_else(|| Error::Import("model has no graph".into()))?;
    let (graph, _, captures) = import_graph(g, model, dir, opset, None)?;
    if let Some(c) = captures.first() {
        return Err(Error::Import(format!("the graph reads `{c}`, which nothing defines")));
    }
    graph.validate().map_err(|e| Error::Import(e.to_string()))?;
    Ok(graph)
}

/// Imports one graph: the model's main graph (`outer` is `None`) or a subgraph (If branch,
/// Loop body) that may read the values named in `outer`. Returns the graph, its number of
/// formal inputs, and the outer values it reads (captures), which become extra inputs of
/// the graph after the formal ones (see `ops::control`).
fn import_graph(
    g: &proto::GraphProto,
    model: &ModelProto,
    dir: Option<&Path>,
    opset: i64,
    outer: Option<&HashSet<String>>,
) -> Result<(Graph, usize, Vec<String>)> {
    let mut graph = Graph { opset, ..Graph::default() };
    let mut by_name: HashMap<String, ValueId> = HashMap::new();
    let mut captures: Vec<String> = Vec::new();
    for init in &g.initializer {
        let name = init.name.clone().unwrap_or_default();
        let t = tensor_from_proto(init, dir).map_err(|e| Error::Import(format!("initializer `{name}`: {e}")))?;
        if by_name.contains_key(&name) {
            return Err(Error::Import(format!("initializer `{name}` is defined twice")));
        }
        let id = graph.add_constant(&name, t);
        by_name.insert(name, id);
    }
    if !g.sparse_initializer.is_empty() {
        return Err(Error::Import("sparse initializers are not supported".into()));
    }
    for vi in &g.input {
        let name = vi.name.clone().unwrap_or_default();
        // An input that is also an initializer is a constant with an overridable default;
        // edgert treats it as a constant (TensorRT does the same).
        if by_name.contains_key(&name) {
            continue;
        }
        let (dtype, shape) = value_type(vi).map_err(|e| Error::Import(format!("input `{name}`: {e}")))?;
        let id = graph.add_value(&name, dtype, shape);
        graph.inputs.push(id);
        by_name.insert(name, id);
    }
    let formal_inputs = graph.inputs.len();
    let mut declared: HashMap<String, (Option<DType>, Option<Vec<Dim>>)> = HashMap::new();
    for vi in g.value_info.iter().chain(&g.output) {
        if let Ok(t) = value_type(vi) {
            declared.insert(vi.name.clone().unwrap_or_default(), t);
        }
    }

    for (index, node) in g.node.iter().enumerate() {
        let op_type = node.op_type.clone().unwrap_or_default();
        let name = match node.name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("{op_type}_{index}"),
        };
        let domain = node.domain.as_deref().unwrap_or("");
        if !(domain.is_empty() || domain == "ai.onnx") {
            let dom_opset = model
                .opset_import
                .iter()
                .find(|o| o.domain.as_deref() == Some(domain))
                .and_then(|o| o.version)
                .unwrap_or(0);
            return Err(Error::UnsupportedOp {
                node: name,
                op_type,
                domain: domain.to_string(),
                index,
                opset: dom_opset,
            });
        }
        let mut inputs = Vec::with_capacity(node.input.len());
        for inp in &node.input {
            if inp.is_empty() {
                inputs.push(None);
                continue;
            }
            let id = resolve(&mut graph, &mut by_name, &mut captures, outer, inp).ok_or_else(|| {
                Error::Import(format!(
                    "node #{index} `{name}` ({op_type}) reads `{inp}`, which is not a graph input, \
                     an initializer or an earlier node's output"
                ))
            })?;
            inputs.push(Some(id));
        }
        let mut attrs = Attrs::new();
        let mut node_captures: Vec<String> = Vec::new();
        for a in &node.attribute {
            let aname = a.name.clone().unwrap_or_default();
            if let Some(sub) =
                a.g.as_ref().filter(|_| a.r#type == Some(proto::attribute_proto::AttributeType::Graph as i32))
            {
                // Everything visible here is visible in the subgraph.
                let mut visible: HashSet<String> = outer.cloned().unwrap_or_default();
                visible.extend(by_name.keys().cloned());
                let (sg, formal_inputs, caps) =
                    import_graph(sub, model, dir, opset, Some(&visible)).map_err(|e| Error::Node {
                        node: name.clone(),
                        op_type: op_type.clone(),
                        message: format!("subgraph `{aname}`: {e}"),
                    })?;
                sg.validate().map_err(|e| Error::Node {
                    node: name.clone(),
                    op_type: op_type.clone(),
                    message: format!("subgraph `{aname}`: {e}"),
                })?;
                for c in caps {
                    if !node_captures.contains(&c) {
                        node_captures.push(c);
                    }
                }
                attrs.insert(&aname, Attr::Graph(Subgraph { graph: Arc::new(sg), formal_inputs }));
                continue;
            }
            let v = attr_from_proto(a, dir).map_err(|e| Error::Node {
                node: name.clone(),
                op_type: op_type.clone(),
                message: format!("attribute `{aname}`: {e}"),
            })?;
            attrs.insert(&aname, v);
        }
        // The outer values the node's subgraphs read become its extra inputs.
        for c in &node_captures {
            let id = resolve(&mut graph, &mut by_name, &mut captures, outer, c).ok_or_else(|| {
                Error::Import(format!(
                    "node #{index} `{name}` ({op_type}): a subgraph reads `{c}`, which nothing defines"
                ))
            })?;
            inputs.push(Some(id));
        }
        if !node_captures.is_empty() {
            attrs.insert(
                crate::ops::control::CAPTURES_ATTR,
                Attr::Strings(node_captures.iter().map(|c| c.as_bytes().to_vec()).collect()),
            );
        }
        let mut outputs = Vec::with_capacity(node.output.len());
        for out in &node.output {
            if out.is_empty() {
                outputs.push(None);
                continue;
            }
            if by_name.contains_key(out) {
                return Err(Error::Import(format!(
                    "node #{index} `{name}` ({op_type}) writes `{out}`, which is already defined"
                )));
            }
            let (dtype, shape) = declared.get(out).cloned().unwrap_or((None, None));
            let id = graph.add_value(out, dtype, shape);
            by_name.insert(out.clone(), id);
            outputs.push(Some(id));
        }
        // Split without sizes divides into as many pieces as the node has outputs, which the
        // op can't see; opset 18 made that count the `num_outputs` attribute: supply it.
        if op_type == "Split" && attrs.get("num_outputs").is_none() {
            attrs.insert("num_outputs", Attr::Int(outputs.len() as i64));
        }
        graph.add_node(&name, &op_type, attrs, inputs, outputs).map_err(|e| match e {
            Error::UnsupportedOp { node, op_type, domain, opset, .. } => {
                Error::UnsupportedOp { node, op_type, domain, index, opset }
            }
            other => other,
        })?;
    }
    for vi in &g.output {
        let name = vi.name.clone().unwrap_or_default();
        let id = resolve(&mut graph, &mut by_name, &mut captures, outer, &name)
            .ok_or_else(|| Error::Import(format!("graph output `{name}` is never produced")))?;
        graph.outputs.push(id);
    }
    Ok((graph, formal_inputs, captures))
}

/// A value by name: local, or captured from the outer scope (added as an input).
fn resolve(
    graph: &mut Graph,
    by_name: &mut HashMap<String, ValueId>,
    captures: &mut Vec<String>,
    outer: Option<&HashSet<String>>,
    name: &str,
) -> Option<ValueId> {
    if let Some(&id) = by_name.get(name) {
        return Some(id);
    }
    if !outer.is_some_and(|o| o.contains(name)) {
        return None;
    }
    let id = graph.add_value(name, None, None);
    graph.inputs.push(id);
    by_name.insert(name.to_string(), id);
    captures.push(name.to_string());
    Some(id)
}

fn value_type(vi: &proto::ValueInfoProto) -> Result<(Option<DType>, Option<Vec<Dim>>)> {
    use proto::type_proto::Value;
    let Some(tp) = vi.r#type.as_ref() else { return Ok((None, None)) };
    let Some(Value::TensorType(tt)) = tp.value.as_ref() else {
        return Err(Error::Import("only tensor types are supported (no sequences, maps, optionals)".into()));
    };
    let dtype = match tt.elem_type {
        None | Some(0) => None,
        Some(code) => Some(DType::from_onnx(code).ok_or_else(|| unsupported_type(code))?),
    };
    let shape = tt.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| match &d.value {
                Some(proto::tensor_shape_proto::dimension::Value::DimValue(v)) if *v >= 0 => Dim::Fixed(*v as usize),
                Some(proto::tensor_shape_proto::dimension::Value::DimParam(p)) => Dim::Sym(p.clone()),
                _ => Dim::Sym(String::new()),
            })
            .collect()
    });
    Ok((dtype, shape))
}

fn unsupported_type(code: i32) -> Error {
    let name = proto::tensor_proto::DataType::try_from(code)
        .map(|d| d.as_str_name().to_string())
        .unwrap_or_else(|_| format!("type code {code}"));
    Error::Import(format!(
        "element type {name} is not supported (edgert has float32, float16, int8, uint8, int32, int64, bool)"
    ))
}

fn attr_from_proto(a: &proto::AttributeProto, dir: Option<&Path>) -> Result<Attr> {
    use proto::attribute_proto::AttributeType as T;
    let ty = a.r#type.and_then(|t| T::try_from(t).ok()).unwrap_or(T::Undefined);
    Ok(match ty {
        T::Float => Attr::Float(a.f.unwrap_or(0.0)),
        T::Int => Attr::Int(a.i.unwrap_or(0)),
        T::String => Attr::String(a.s.clone().unwrap_or_default()),
        T::Tensor => {
            let t = a.t.as_ref().ok_or_else(|| Error::Import("tensor attribute without a tensor".into()))?;
            Attr::Tensor(tensor_from_proto(t, dir)?)
        }
        T::Floats => Attr::Floats(a.floats.clone()),
        T::Ints => Attr::Ints(a.ints.clone()),
        T::Strings => Attr::Strings(a.strings.clone()),
        T::Graph | T::Graphs => {
            return Err(Error::Import("subgraph attributes (If/Loop/Scan bodies) are not supported yet".into()));
        }
        T::SparseTensor | T::SparseTensors => {
            return Err(Error::Import("sparse tensor attributes are not supported".into()));
        }
        T::Tensors | T::TypeProto | T::TypeProtos => {
            return Err(Error::Import(format!("attribute type {} is not supported", ty.as_str_name())));
        }
        T::Undefined => {
            // IR < 0.0.2 had no type field; infer from which field is set.
            if let Some(f) = a.f {
                Attr::Float(f)
            } else if let Some(i) = a.i {
                Attr::Int(i)
            } else if let Some(s) = &a.s {
                Attr::String(s.clone())
            } else if !a.ints.is_empty() {
                Attr::Ints(a.ints.clone())
            } else if !a.floats.is_empty() {
                Attr::Floats(a.floats.clone())
            } else {
                return Err(Error::Import("attribute has no type".into()));
            }
        }
    })
}

/// Converts a TensorProto (raw, typed fields or external data) into a [`Tensor`].
pub fn tensor_from_proto(t: &TensorProto, dir: Option<&Path>) -> Result<Tensor> {
    let code = t.data_type.unwrap_or(0);
    let dtype = DType::from_onnx(code).ok_or_else(|| unsupported_type(code))?;
    let mut shape = Vec::with_capacity(t.dims.len());
    let mut n: usize = 1;
    for &d in &t.dims {
        if d < 0 {
            return Err(Error::Import(format!("negative dimension {d}")));
        }
        let d = d as usize;
        n = n.checked_mul(d).ok_or_else(|| Error::Import("tensor too large".into()))?;
        shape.push(d);
    }
    if t.segment.is_some() {
        return Err(Error::Import("segmented tensors are not supported".into()));
    }
    let external = t.data_location == Some(proto::tensor_proto::DataLocation::External as i32);
    let raw: Option<Vec<u8>> = if external {
        Some(read_external(
            t,
            dir,
            n.checked_mul(dtype.size()).ok_or_else(|| Error::Import("tensor too large".into()))?,
        )?)
    } else {
        t.raw_data.clone()
    };
    let data = if let Some(raw) = raw {
        let want = n * dtype.size();
        if raw.len() != want {
            return Err(Error::Import(format!(
                "raw data has {} bytes, shape {:?} of {} needs {}",
                raw.len(),
                shape,
                dtype,
                want
            )));
        }
        from_le_bytes(dtype, &raw)?
    } else {
        let data = match dtype {
            DType::F32 => TensorData::F32(t.float_data.clone()),
            DType::I64 => TensorData::I64(t.int64_data.clone()),
            DType::I32 => TensorData::I32(t.int32_data.clone()),
            DType::I8 => TensorData::I8(t.int32_data.iter().map(|&v| v as i8).collect()),
            DType::U8 => TensorData::U8(t.int32_data.iter().map(|&v| v as u8).collect()),
            DType::Bool => TensorData::Bool(t.int32_data.iter().map(|&v| v != 0).collect()),
            // float16 is stored as its bit pattern in int32_data.
            DType::F16 => TensorData::F16(t.int32_data.iter().map(|&v| f16::from_bits(v as u16)).collect()),
        };
        if data.len() != n {
            return Err(Error::Import(format!(
                "tensor of shape {:?} has {} elements in its data fields, needs {}",
                shape,
                data.len(),
                n
            )));
        }
        data
    };
    Tensor::new(shape, data)
}

/// Decodes little-endian bytes of `dtype` (the ONNX raw_data and .npy layout).
pub fn from_le_bytes(dtype: DType, raw: &[u8]) -> Result<TensorData> {
    if !raw.len().is_multiple_of(dtype.size()) {
        return Err(Error::Invalid(format!("{} bytes is not a whole number of {}", raw.len(), dtype)));
    }
    Ok(match dtype {
        DType::F32 => {
            TensorData::F32(raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        DType::F16 => TensorData::F16(raw.chunks_exact(2).map(|c| f16::from_le_bytes([c[0], c[1]])).collect()),
        DType::I8 => TensorData::I8(raw.iter().map(|&b| b as i8).collect()),
        DType::U8 => TensorData::U8(raw.to_vec()),
        DType::I32 => {
            TensorData::I32(raw.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        DType::I64 => TensorData::I64(
            raw.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
        ),
        DType::Bool => TensorData::Bool(raw.iter().map(|&b| b != 0).collect()),
    })
}

fn read_external(t: &TensorProto, dir: Option<&Path>, want: usize) -> Result<Vec<u8>> {
    let dir =
        dir.ok_or_else(|| Error::Import("tensor uses external data but the model was not loaded from a file".into()))?;
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for kv in &t.external_data {
        let v = kv.value.clone().unwrap_or_default();
        match kv.key.as_deref().unwrap_or("") {
            "location" => location = Some(v),
            "offset" => offset = v.parse().map_err(|_| Error::Import(format!("bad external data offset `{v}`")))?,
            "length" => {
                length = Some(v.parse::<u64>().map_err(|_| Error::Import(format!("bad external data length `{v}`")))?)
            }
            _ => {}
        }
    }
    let location = location.ok_or_else(|| Error::Import("external data without a location".into()))?;
    let rel = Path::new(&location);
    // External data must stay inside the model's folder: no absolute paths, no `..`.
    if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(Error::Import(format!(
            "external data location `{location}` leaves the model's folder (absolute or `..` paths are refused)"
        )));
    }
    let path = dir.join(rel);
    // Also refuse symlinks that point outside the folder.
    let real_dir = dir.canonicalize().map_err(|e| Error::Io { path: dir.display().to_string(), source: e })?;
    let real = path.canonicalize().map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
    if !real.starts_with(&real_dir) {
        return Err(Error::Import(format!("external data `{location}` resolves outside the model's folder")));
    }
    let len = length.unwrap_or(want as u64);
    if len != want as u64 {
        return Err(Error::Import(format!("external data `{location}`: length {len}, tensor needs {want} bytes")));
    }
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(&real).map_err(|e| Error::Io { path: real.display().to_string(), source: e })?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(Error::Import(format!(
            "external data `{location}`: bytes {offset}..{} are past the end of the file ({size} bytes)",
            offset.saturating_add(len)
        )));
    }
    f.seek(SeekFrom::Start(offset)).map_err(|e| Error::Io { path: real.display().to_string(), source: e })?;
    let mut buf = vec![0u8; want];
    f.read_exact(&mut buf).map_err(|e| Error::Io { path: real.display().to_string(), source: e })?;
    Ok(buf)
}

/// Reads a serialized TensorProto (`.pb` as in ONNX's node tests).
pub fn read_tensor_pb(path: &Path) -> Result<(String, Tensor)> {
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
    let t = TensorProto::decode(bytes.as_slice())
        .map_err(|e| Error::Import(format!("{}: bad TensorProto: {e}", path.display())))?;
    let dir = path.parent();
    let tensor = tensor_from_proto(&t, dir)?;
    Ok((t.name.clone().unwrap_or_default(), tensor))
}
