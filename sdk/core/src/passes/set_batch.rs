//! Rebatching a model exported for one image (TFLite conversions such as BlazeFace declare
//! `[1, 3, 128, 128]` and reshape to `[1, -1, 16]`) so that one run takes `n` images: the
//! inputs' leading 1 becomes `n`, and so does the leading 1 of the shape constants that
//! Reshape and Resize (`sizes`) read; every other declared shape is dropped and inferred
//! again. Not a rewrite that keeps outputs unchanged for every graph (a model may mix
//! images along its first axis), so [`crate::Engine::with_batch`] runs the rebatched engine
//! against the original on `n` images and refuses the result unless each image's outputs
//! match.

use crate::error::Result;
use crate::graph::{Dim, Graph};
use crate::tensor::{DType, Tensor};

/// Rewrites `graph` for batch `n`; returns one line per change. Fails unless every input is
/// declared with a leading dimension of 1.
pub fn set_batch(graph: &mut Graph, n: usize) -> Result<Vec<String>> {
    if n == 0 {
        crate::invalid!("a batch of 0 images");
    }
    let mut changes = Vec::new();
    for &id in &graph.inputs {
        let v = &mut graph.values[id];
        match v.shape.as_mut().and_then(|s| s.first_mut()) {
            Some(d @ Dim::Fixed(1)) => *d = Dim::Fixed(n),
            Some(Dim::Sym(_)) => crate::invalid!("input `{}` already has a symbolic batch dimension", v.name),
            Some(Dim::Fixed(b)) => {
                crate::invalid!("input `{}` is declared for batch {b}: only batch-1 models are rebatched", v.name)
            }
            None => crate::invalid!("input `{}` has no declared shape to rebatch", v.name),
        }
        changes.push(format!("input `{}`: batch 1 -> {n}", v.name));
    }
    // The shape constants: a new constant per node (a constant may be shared).
    for i in 0..graph.nodes.len() {
        let slot = match graph.nodes[i].op_type.as_str() {
            "Reshape" => 1,
            "Resize" => 3,
            _ => continue,
        };
        let Some(Some(id)) = graph.nodes[i].inputs.get(slot).copied() else { continue };
        let Some(t) = graph.constants.get(&id) else { continue };
        if t.dtype() != DType::I64 || t.shape().len() != 1 {
            continue;
        }
        let mut dims = t.to_i64_vec()?;
        if dims.first() != Some(&1) {
            continue;
        }
        dims[0] = n as i64;
        let name = format!("{}_batch{n}", graph.values[id].name);
        let new = graph.add_constant(&name, Tensor::from_i64(&[dims.len()], dims.clone())?);
        let node = &mut graph.nodes[i];
        node.inputs[slot] = Some(new);
        changes.push(format!("{} `{}`: shape {dims:?}", node.op_type, node.name));
    }
    // Declared shapes of everything else are re-inferred from the new inputs.
    let fixed: Vec<usize> = graph.inputs.iter().copied().chain(graph.constants.keys().copied()).collect();
    for (id, v) in graph.values.iter_mut().enumerate() {
        if !fixed.contains(&id) {
            v.shape = None;
        }
    }
    // Constants no node reads any more (replaced shape constants) are dropped.
    let used: Vec<usize> = graph.nodes.iter().flat_map(|n| n.inputs.iter().flatten().copied()).collect();
    graph.constants.retain(|id, _| used.contains(id) || graph.outputs.contains(id));
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attrs;

    #[test]
    fn inputs_and_leading_shape_constants_take_the_batch() {
        let mut g = Graph { opset: 17, ..Default::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(1), Dim::Fixed(3), Dim::Fixed(4)]));
        g.inputs.push(x);
        let to = g.add_constant("to", Tensor::from_i64(&[2], vec![1, -1]).unwrap());
        let keep = g.add_constant("keep", Tensor::from_i64(&[2], vec![3, 4]).unwrap());
        let (a, b) = (g.add_value("a", None, Some(vec![Dim::Fixed(1), Dim::Fixed(12)])), g.add_value("b", None, None));
        g.add_node("flat", "Reshape", Attrs::new(), vec![Some(x), Some(to)], vec![Some(a)]).unwrap();
        g.add_node("back", "Reshape", Attrs::new(), vec![Some(a), Some(keep)], vec![Some(b)]).unwrap();
        g.outputs.push(b);
        let changes = set_batch(&mut g, 5).unwrap();
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(g.values[x].shape.as_ref().unwrap()[0], Dim::Fixed(5));
        let new = g.nodes[0].inputs[1].unwrap();
        assert_eq!(g.constants[&new].to_i64_vec().unwrap(), vec![5, -1]);
        assert!(!g.constants.contains_key(&to), "the old shape constant is dropped");
        assert_eq!(g.nodes[1].inputs[1], Some(keep), "a shape not starting with 1 is left");
        assert_eq!(g.values[a].shape, None, "declared shapes are re-inferred");
        // Only batch-1 models.
        assert!(set_batch(&mut g, 2).unwrap_err().to_string().contains("batch 5"));
        assert!(set_batch(&mut Graph::default(), 0).is_err());
    }
}
