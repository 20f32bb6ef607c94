//! Gemm: `Y = alpha · A' · B' + beta · C`, where `A'` is `A` or its transpose (`transA`),
//! likewise `B'`, and the optional `C` broadcasts unidirectionally to `[M, N]`.
//!
//! From opset 11 `C` is optional (opset 13 only adds bfloat16); the attributes and their
//! defaults (`alpha = beta = 1`, no transposes) are the same in opsets 11 to 21.
//!
//! f32 without `transA` runs on the CPU kernels (`cpu::matmul`: sums in f32), then applies
//! alpha, beta and C in one pass; other cases run the reference loop (sums in f64).

use half::f16;

use crate::cpu::{self, Exec};
use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DataMut, DataRef, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{MatElem, check_len, check_mat_dtype};

/// The Gemm op.
#[derive(Debug, Clone, PartialEq)]
pub struct Gemm {
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of `C`.
    pub beta: f32,
    /// Whether `A` is given transposed (`[K, M]`).
    pub trans_a: bool,
    /// Whether `B` is given transposed (`[N, K]`).
    pub trans_b: bool,
}

/// Sizes of one Gemm and how `C` maps onto the output.
#[derive(Clone, Copy, Debug)]
struct Dims {
    m: usize,
    k: usize,
    n: usize,
    /// `C`'s rows and columns after right-aligning it on `[M, N]` (each 1 or full).
    c: Option<(usize, usize)>,
}

impl Gemm {
    /// Parses `alpha`, `beta`, `transA`, `transB`.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Self> {
        let flag = |name: &str| -> Result<bool> {
            match attrs.int_or(name, 0)? {
                0 => Ok(false),
                1 => Ok(true),
                v => invalid!("attribute `{name}` must be 0 or 1, got {v}"),
            }
        };
        Ok(Gemm {
            alpha: attrs.float_or("alpha", 1.0)?,
            beta: attrs.float_or("beta", 1.0)?,
            trans_a: flag("transA")?,
            trans_b: flag("transB")?,
        })
    }

    fn dims(&self, a: &[usize], b: &[usize], c: Option<&[usize]>) -> Result<Dims> {
        if a.len() != 2 || b.len() != 2 {
            invalid!("Gemm needs 2-D A and B, got A {a:?} and B {b:?}");
        }
        let (m, ka) = if self.trans_a { (a[1], a[0]) } else { (a[0], a[1]) };
        let (kb, n) = if self.trans_b { (b[1], b[0]) } else { (b[0], b[1]) };
        if ka != kb {
            invalid!(
                "Gemm inner dims differ: A {a:?} (transA = {}) has K = {ka}, B {b:?} (transB = {}) has K = {kb}",
                self.trans_a as u8,
                self.trans_b as u8
            );
        }
        if m.checked_mul(n).is_none() {
            invalid!("Gemm of A {a:?} and B {b:?} has more elements than fit in memory");
        }
        let c = match c {
            None => None,
            Some(cs) => {
                let (cr, cc) = match *cs {
                    [] => (1, 1),
                    [c1] => (1, c1),
                    [c0, c1] => (c0, c1),
                    _ => invalid!("Gemm's C must have rank ≤ 2, got {cs:?}"),
                };
                if (cr != 1 && cr != m) || (cc != 1 && cc != n) {
                    invalid!("Gemm's C {cs:?} does not broadcast to the output [{m}, {n}]");
                }
                Some((cr, cc))
            }
        };
        Ok(Dims { m, k: ka, n, c })
    }

    fn run_typed<T: MatElem>(&self, d: Dims, a: &[T], b: &[T], c: Option<&[T]>, y: &mut [T]) {
        let Dims { m, k, n, .. } = d;
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::zero();
                for p in 0..k {
                    let av = if self.trans_a { a[p * m + i] } else { a[i * k + p] };
                    let bv = if self.trans_b { b[j * k + p] } else { b[p * n + j] };
                    acc = T::mac(acc, av, bv);
                }
                let cv = match (c, d.c) {
                    (Some(c), Some((cr, cc))) => {
                        Some(c[if cr == 1 { 0 } else { i } * cc + if cc == 1 { 0 } else { j }])
                    }
                    _ => None,
                };
                y[i * n + j] = T::scale(acc, self.alpha, cv, self.beta);
            }
        }
    }
}

impl Gemm {
    /// `y = alpha · y + beta · C` (C broadcast), skipped where it changes nothing.
    fn scale_and_add_c(&self, d: Dims, c: Option<&[f32]>, y: &mut [f32]) {
        let (alpha, beta) = (self.alpha, self.beta);
        match (c, d.c) {
            (Some(c), Some((cr, cc))) => {
                for (i, row) in y.chunks_exact_mut(d.n).enumerate() {
                    let c_row = &c[if cr == 1 { 0 } else { i * cc }..];
                    for (j, v) in row.iter_mut().enumerate() {
                        let cv = c_row[if cc == 1 { 0 } else { j }];
                        *v = alpha * *v + beta * cv;
                    }
                }
            }
            _ if alpha != 1.0 => y.iter_mut().for_each(|v| *v *= alpha),
            _ => {}
        }
    }
}

impl Op for Gemm {
    fn op_type(&self) -> &'static str {
        "Gemm"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() < 2 || inputs.len() > 3 {
            invalid!("Gemm expects 2 or 3 inputs, got {}", inputs.len());
        }
        let a = required(inputs, 0, "A")?;
        let b = required(inputs, 1, "B")?;
        let c = optional(inputs, 2);
        check_mat_dtype(a.dtype, "A")?;
        for (t, what) in [(Some(b), "B"), (c, "C")] {
            if let Some(t) = t
                && t.dtype != a.dtype
            {
                invalid!("Gemm's {what} is {}, A is {}: types must match", t.dtype, a.dtype);
            }
        }
        let d = self.dims(a.shape, b.shape, c.map(|c| c.shape))?;
        Ok(vec![TypeShape::new(a.dtype, vec![d.m, d.n])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        self.run_exec(inputs, outputs, scratch, &Exec::single())
    }

    fn run_exec(
        &self,
        inputs: &[Option<TensorRef>],
        outputs: &mut [TensorMut],
        _scratch: &mut [u8],
        exec: &Exec,
    ) -> Result<()> {
        let a = required(inputs, 0, "A")?;
        let b = required(inputs, 1, "B")?;
        let c = optional(inputs, 2);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        let d = self.dims(a.shape, b.shape, c.map(|c| c.shape))?;
        check_len(a.data.len(), a.shape, "A")?;
        check_len(b.data.len(), b.shape, "B")?;
        if let Some(c) = c {
            check_len(c.data.len(), c.shape, "C")?;
        }
        if y.data.len() != d.m * d.n {
            invalid!("output has {} elements, Gemm needs {}", y.data.len(), d.m * d.n);
        }
        if let (DataRef::F32(av), DataRef::F32(bv), DataMut::F32(ys), false) =
            (a.data, b.data, &mut y.data, self.trans_a)
        {
            let cs = match c.map(|c| c.data) {
                None => None,
                Some(DataRef::F32(c)) => Some(c),
                Some(other) => invalid!("Gemm's C is {}, expected float32", other.dtype()),
            };
            if self.trans_b {
                cpu::matmul::a_times_bt(exec, d.m, d.n, d.k, av, bv, ys);
            } else {
                cpu::matmul::a_times_b(exec, d.m, d.n, d.k, av, bv, ys);
            }
            self.scale_and_add_c(d, cs, ys);
            return Ok(());
        }
        macro_rules! go {
            ($t:ty, $v:ident) => {{
                let cs = match c.map(|c| c.data) {
                    None => None,
                    Some(DataRef::$v(c)) => Some(c),
                    Some(other) => invalid!("Gemm's C is {}, expected {}", other.dtype(), a.dtype()),
                };
                match (b.data, &mut y.data) {
                    (DataRef::$v(bs), DataMut::$v(ys)) => self.run_typed::<$t>(d, as_slice(a.data)?, bs, cs, ys),
                    _ => invalid!("Gemm's B and output must be {}", a.dtype()),
                }
            }};
        }
        fn as_slice<T: MatElem>(d: DataRef<'_>) -> Result<&[T]> {
            T::slice(d).ok_or_else(|| invalid_err!("Gemm's A has an unexpected type"))
        }
        match a.data {
            DataRef::F32(_) => go!(f32, F32),
            DataRef::F16(_) => go!(f16, F16),
            DataRef::I32(_) => go!(i32, I32),
            DataRef::I64(_) => go!(i64, I64),
            _ => invalid!("Gemm on {} is not supported (float32, float16, int32 or int64)", a.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::{Attr, eval};
    use crate::tensor::{Tensor, TensorData};

    fn gemm(alpha: f32, beta: f32, ta: i64, tb: i64) -> Gemm {
        let attrs = int_attrs(&[("transA", ta), ("transB", tb)])
            .with("alpha", Attr::Float(alpha))
            .with("beta", Attr::Float(beta));
        Gemm::build(&attrs, 13).unwrap()
    }

    fn run(op: &Gemm, ins: &[Option<&Tensor>]) -> crate::error::Result<Tensor> {
        eval(op, ins).map(|mut v| v.remove(0))
    }

    #[test]
    fn defaults_and_hand_checked() {
        let op = Gemm::build(&Attrs::new(), 11).unwrap();
        assert_eq!(op, gemm(1.0, 1.0, 0, 0));
        let a = f32s(&[2, 3], vec![1., 2., 3., 4., 5., 6.]);
        let b = f32s(&[3, 2], vec![7., 8., 9., 10., 11., 12.]);
        let y = run(&op, &[Some(&a), Some(&b)]).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[58., 64., 139., 154.]);
        let c = f32s(&[2], vec![1., -1.]);
        let y = run(&op, &[Some(&a), Some(&b), Some(&c)]).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[59., 63., 140., 153.]);
        // Transposed operands, scales, column-vector and scalar C.
        let at = f32s(&[3, 2], vec![1., 4., 2., 5., 3., 6.]);
        let bt = f32s(&[2, 3], vec![7., 9., 11., 8., 10., 12.]);
        let ccol = f32s(&[2, 1], vec![10., 20.]);
        let y = run(&gemm(0.5, 2.0, 1, 1), &[Some(&at), Some(&bt), Some(&ccol)]).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[49., 52., 109.5, 117.]);
        let y = run(&gemm(1.0, 0.5, 0, 0), &[Some(&a), Some(&b), Some(&Tensor::scalar_f32(4.))]).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[60., 66., 141., 156.]);
        // Integers: exact with unit scales, truncated through f64 otherwise.
        let ai = i32s(&[1, 2], vec![3, 4]);
        let bi = i32s(&[2, 1], vec![5, 6]);
        let ci = i32s(&[1], vec![-1]);
        assert_eq!(run(&op, &[Some(&ai), Some(&bi), Some(&ci)]).unwrap().data(), &TensorData::I32(vec![38]));
        assert_eq!(
            run(&gemm(0.5, 1.0, 0, 0), &[Some(&ai), Some(&bi), Some(&ci)]).unwrap().data(),
            &TensorData::I32(vec![18])
        );
        // f16.
        let y =
            run(&op, &[Some(&f16s(&[1, 1], &[1.5])), Some(&f16s(&[1, 1], &[2.0])), Some(&f16s(&[], &[0.25]))]).unwrap();
        assert_eq!(y.to_f32_vec().unwrap(), vec![3.25]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(3);
        for &(m, k, n) in &[(7, 13, 5), (13, 7, 13), (1, 1, 1), (3, 13, 7)] {
            for (ta, tb) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                for cshape in [None, Some(vec![m, n]), Some(vec![n]), Some(vec![m, 1]), Some(vec![1, n]), Some(vec![])]
                {
                    let (alpha, beta) = (rng.uniform(-2.0, 2.0) as f32, rng.uniform(-2.0, 2.0) as f32);
                    let ash = if ta == 1 { [k, m] } else { [m, k] };
                    let bsh = if tb == 1 { [n, k] } else { [k, n] };
                    let a = rand_f32(&mut rng, &ash, -1.0, 1.0);
                    let b = rand_f32(&mut rng, &bsh, -1.0, 1.0);
                    let c = cshape.as_ref().map(|s| rand_f32(&mut rng, s, -1.0, 1.0));
                    let y = run(&gemm(alpha, beta, ta, tb), &[Some(&a), Some(&b), c.as_ref()]).unwrap();
                    let (av, bv) = (a.as_f32().unwrap(), b.as_f32().unwrap());
                    let mut want = vec![0f32; m * n];
                    for i in 0..m {
                        for j in 0..n {
                            let mut s = 0f64;
                            for p in 0..k {
                                let x = if ta == 1 { av[p * m + i] } else { av[i * k + p] };
                                let z = if tb == 1 { bv[j * k + p] } else { bv[p * n + j] };
                                s += x as f64 * z as f64;
                            }
                            let cv = match &c {
                                None => 0.0,
                                Some(c) => {
                                    let s = c.shape();
                                    let cs = c.as_f32().unwrap();
                                    match s.len() {
                                        0 => cs[0],
                                        1 => cs[j % s[0]],
                                        _ => cs[(i % s[0]) * s[1] + j % s[1]],
                                    }
                                }
                            };
                            want[i * n + j] = (alpha as f64 * s + beta as f64 * cv as f64) as f32;
                        }
                    }
                    assert_close(y.as_f32().unwrap(), &want);
                }
            }
        }
    }

    #[test]
    fn errors() {
        let op = Gemm::build(&Attrs::new(), 13).unwrap();
        let a = f32s(&[2, 3], vec![0.; 6]);
        let b = f32s(&[3, 4], vec![0.; 12]);
        assert!(run(&op, &[Some(&a), Some(&a)]).is_err(), "K mismatch");
        assert!(run(&op, &[Some(&a), Some(&b), Some(&f32s(&[3], vec![0.; 3]))]).is_err(), "C [3] vs N = 4");
        assert!(run(&op, &[Some(&a), Some(&b), Some(&f32s(&[1, 2, 4], vec![0.; 8]))]).is_err(), "C rank 3");
        assert!(run(&op, &[Some(&f32s(&[6], vec![0.; 6])), Some(&b)]).is_err(), "1-D A");
        assert!(run(&op, &[Some(&a), Some(&i32s(&[3, 1], vec![0; 3]))]).is_err(), "mixed types");
        assert!(run(&op, &[Some(&a)]).is_err(), "missing B");
        assert!(Gemm::build(&int_attrs(&[("transA", 2)]), 13).is_err());
        // transA makes A [3, 2] read as [2, 3]: K = 2 vs 3 fails.
        assert!(run(&gemm(1., 1., 1, 0), &[Some(&a), Some(&b)]).is_err());
    }
}
