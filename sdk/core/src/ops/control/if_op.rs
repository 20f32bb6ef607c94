//! If: runs `then_branch` or `else_branch` depending on a bool condition.
//!
//! Output shapes must be known when a context is planned: with a constant condition only the
//! taken branch is planned; otherwise both are, and they must agree (freeze the input that
//! decides the condition, e.g. Silero VAD's sample rate, when they don't).

use super::subgraph::{Body, copy_into, truthy};
use crate::error::{Error, Result};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{TensorMut, TensorRef};

/// The If op.
#[derive(Debug)]
pub struct If {
    then_branch: Body,
    else_branch: Body,
}

impl If {
    /// Builds from attributes `then_branch`, `else_branch` and the capture list the importer
    /// records (`captures`: node inputs 1.. in order).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<If> {
        let captures = super::captures(attrs)?;
        let then_branch = Body::new(super::subgraph_attr(attrs, "then_branch")?, &captures, 1)?;
        let else_branch = Body::new(super::subgraph_attr(attrs, "else_branch")?, &captures, 1)?;
        for (name, b) in [("then_branch", &then_branch), ("else_branch", &else_branch)] {
            if b.formal_inputs() != 0 {
                return Err(Error::Invalid(format!("{name} must take no formal inputs")));
            }
        }
        if then_branch.num_outputs() != else_branch.num_outputs() {
            return Err(Error::Invalid(format!(
                "then_branch has {} outputs, else_branch {}",
                then_branch.num_outputs(),
                else_branch.num_outputs()
            )));
        }
        Ok(If { then_branch, else_branch })
    }
}

impl Op for If {
    fn op_type(&self) -> &'static str {
        "If"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let cond = required(inputs, 0, "cond")?;
        if cond.shape.iter().product::<usize>() != 1 {
            return Err(Error::Invalid(format!("cond must hold one element, has shape {:?}", cond.shape)));
        }
        match cond.value {
            Some(v) => {
                let taken = if truthy(&v.view())? { &self.then_branch } else { &self.else_branch };
                taken.infer(&[], inputs)
            }
            None => {
                // With a run-time condition both branches are planned. A branch that can't run
                // with these shapes (Silero VAD's 8 kHz branch fed 16 kHz chunks) would fail
                // at run time in any runtime: plan with the other, and fail if it is taken.
                let t = self.then_branch.infer(&[], inputs).map_err(|e| branch_err("then_branch", e));
                let e = self.else_branch.infer(&[], inputs).map_err(|e| branch_err("else_branch", e));
                match (t, e) {
                    (Ok(t), Ok(e)) if t != e => Err(Error::Invalid(format!(
                        "the branches give different output types (then: {t:?}, else: {e:?}) and the \
                         condition is only known at run time: freeze the input that decides it"
                    ))),
                    (Ok(t), Ok(_)) => Ok(t),
                    (Ok(t), Err(e)) | (Err(e), Ok(t)) => {
                        log::info!("If: planning with one branch only; the other can't run here: {e}");
                        Ok(t)
                    }
                    (Err(t), Err(_)) => Err(t),
                }
            }
        }
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let cond = required(inputs, 0, "cond")?;
        let (name, body) =
            if truthy(&cond)? { ("then_branch", &self.then_branch) } else { ("else_branch", &self.else_branch) };
        let mut session = body.session(&[], inputs).map_err(|e| branch_err(name, e))?;
        session.run(&[]).map_err(|e| branch_err(name, e))?;
        for (i, out) in outputs.iter_mut().enumerate() {
            let r = session.output(i)?;
            if r.shape != out.shape || r.dtype() != out.dtype() {
                return Err(Error::Invalid(format!(
                    "{name} output #{i} is {} {:?}, planned {} {:?}",
                    r.dtype(),
                    r.shape,
                    out.dtype(),
                    out.shape
                )));
            }
            copy_into(out, 0, &r)?;
        }
        Ok(())
    }
}

fn branch_err(name: &str, e: Error) -> Error {
    Error::Invalid(format!("in {name}: {e}"))
}
