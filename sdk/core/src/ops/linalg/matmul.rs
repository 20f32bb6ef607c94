//! MatMul: the numpy `matmul` product. A 1-D first operand is a row vector `[1, K]` and a
//! 1-D second operand a column vector `[K, 1]`, the added dim being dropped from the result;
//! the dims before the last two are batch dims and broadcast numpy-style.
//!
//! f32 products run on the CPU GEMM (`cpu::matmul`, sums in f32; an unbatched B makes the
//! whole batch one product); other types run the reference loop (sums in f64).

use half::f16;

use crate::cpu::{self, Exec};
use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DataMut, DataRef, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{MatElem, check_len, check_mat_dtype, check_rank};

/// The MatMul op (no attributes).
#[derive(Debug, Clone, Default)]
pub struct MatMul;

impl MatMul {
    /// MatMul has no attributes; the semantics are the same in opsets 11 to 21.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Self> {
        Ok(MatMul)
    }
}

/// The geometry of one batched product, computed without heap allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// Rows of each product (1 for a 1-D first operand).
    pub m: usize,
    /// The contracted dim.
    pub k: usize,
    /// Columns of each product (1 for a 1-D second operand).
    pub n: usize,
    /// The broadcast batch dims.
    pub batch: [usize; MAX_RANK],
    /// Number of batch dims.
    pub batch_rank: usize,
    /// Per batch dim, how many matrices of A (resp. B) one step skips (0 on broadcast dims).
    pub sa: [usize; MAX_RANK],
    pub sb: [usize; MAX_RANK],
    /// Whether A (resp. B) was a vector (its added dim is dropped from the output).
    pub a_vec: bool,
    pub b_vec: bool,
}

impl Geometry {
    /// Checks two operand shapes and works out their product's geometry.
    pub fn new(a: &[usize], b: &[usize]) -> Result<Geometry> {
        check_rank(a, "A")?;
        check_rank(b, "B")?;
        if a.is_empty() || b.is_empty() {
            invalid!("MatMul operands must have rank ≥ 1, got A {a:?} and B {b:?}");
        }
        let (a_vec, b_vec) = (a.len() == 1, b.len() == 1);
        let (m, ka) = if a_vec { (1, a[0]) } else { (a[a.len() - 2], a[a.len() - 1]) };
        let (kb, n) = if b_vec { (b[0], 1) } else { (b[b.len() - 2], b[b.len() - 1]) };
        if ka != kb {
            invalid!("MatMul inner dims differ: A {a:?} has K = {ka}, B {b:?} has K = {kb}");
        }
        let ab = if a_vec { &a[..0] } else { &a[..a.len() - 2] };
        let bb = if b_vec { &b[..0] } else { &b[..b.len() - 2] };
        let rank = ab.len().max(bb.len());
        let mut batch = [1usize; MAX_RANK];
        for i in 0..rank {
            // Right-aligned dims, 1 where an operand has fewer batch dims.
            let da = if i + ab.len() >= rank { ab[i + ab.len() - rank] } else { 1 };
            let db = if i + bb.len() >= rank { bb[i + bb.len() - rank] } else { 1 };
            batch[i] = if da == db || db == 1 {
                da
            } else if da == 1 {
                db
            } else {
                invalid!("MatMul batch dims of A {a:?} and B {b:?} do not broadcast");
            };
        }
        let strides = |bs: &[usize]| {
            let mut s = [0usize; MAX_RANK];
            let off = rank - bs.len();
            let mut acc = 1usize;
            for i in (0..bs.len()).rev() {
                s[off + i] = if bs[i] == 1 { 0 } else { acc };
                acc *= bs[i];
            }
            s
        };
        // Operands with a zero dim can describe a huge output: refuse sizes that overflow.
        let out = batch[..rank].iter().try_fold(m, |acc, &d| acc.checked_mul(d)).and_then(|v| v.checked_mul(n));
        if out.is_none() {
            invalid!("MatMul of A {a:?} and B {b:?} has more elements than fit in memory");
        }
        Ok(Geometry { m, k: ka, n, batch, batch_rank: rank, sa: strides(ab), sb: strides(bb), a_vec, b_vec })
    }

    /// The output shape.
    pub fn out_shape(&self) -> Vec<usize> {
        let mut s = self.batch[..self.batch_rank].to_vec();
        if !self.a_vec {
            s.push(self.m);
        }
        if !self.b_vec {
            s.push(self.n);
        }
        s
    }

    /// Number of products.
    pub fn batches(&self) -> usize {
        self.batch[..self.batch_rank].iter().product()
    }

    /// Calls `f(batch, a_matrix, b_matrix)` for every output batch in order, with the index
    /// of the A and B matrices it multiplies (broadcast batches repeat an index).
    pub fn for_each_batch(&self, mut f: impl FnMut(usize, usize, usize)) {
        let mut idx = [0usize; MAX_RANK];
        let (mut oa, mut ob) = (0usize, 0usize);
        for batch in 0..self.batches() {
            f(batch, oa, ob);
            // Advance the batch odometer, keeping A's and B's matrix offsets in step.
            let mut d = self.batch_rank;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                oa += self.sa[d];
                ob += self.sb[d];
                if idx[d] < self.batch[d] {
                    break;
                }
                oa -= self.sa[d] * self.batch[d];
                ob -= self.sb[d] * self.batch[d];
                idx[d] = 0;
            }
        }
    }
}

/// `y[b] = a[b] · b[b]` for every broadcast batch `b` (row-major operands).
fn matmul_typed<T: MatElem>(g: &Geometry, a: &[T], b: &[T], y: &mut [T]) {
    let (m, k, n) = (g.m, g.k, g.n);
    g.for_each_batch(|batch, oa, ob| {
        let (am, bm, ym) = (oa * m * k, ob * k * n, batch * m * n);
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::zero();
                for p in 0..k {
                    acc = T::mac(acc, a[am + i * k + p], b[bm + p * n + j]);
                }
                y[ym + i * n + j] = T::finish(acc);
            }
        }
    });
}

/// The f32 product of every broadcast batch on the CPU GEMM.
fn matmul_f32(exec: &Exec, g: &Geometry, a: &[f32], b: &[f32], y: &mut [f32]) {
    let (m, k, n) = (g.m, g.k, g.n);
    if g.sb[..g.batch_rank].iter().all(|&s| s == 0) {
        // B is shared by every batch, and A's batches are contiguous: one tall product.
        let rows = g.batches() * m;
        cpu::matmul::a_times_b(exec, rows, n, k, &a[..rows * k], &b[..k * n], &mut y[..rows * n]);
        return;
    }
    g.for_each_batch(|batch, oa, ob| {
        let (am, bm, ym) = (oa * m * k, ob * k * n, batch * m * n);
        let (ab, bb, yb) = (&a[am..am + m * k], &b[bm..bm + k * n], &mut y[ym..ym + m * n]);
        cpu::matmul::a_times_b(exec, m, n, k, ab, bb, yb);
    });
}

impl Op for MatMul {
    fn op_type(&self) -> &'static str {
        "MatMul"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 2 {
            invalid!("MatMul expects 2 inputs, got {}", inputs.len());
        }
        let a = required(inputs, 0, "A")?;
        let b = required(inputs, 1, "B")?;
        check_mat_dtype(a.dtype, "A")?;
        if b.dtype != a.dtype {
            invalid!("MatMul operands have different types: A is {}, B is {}", a.dtype, b.dtype);
        }
        let g = Geometry::new(a.shape, b.shape)?;
        Ok(vec![TypeShape::new(a.dtype, g.out_shape())])
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
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        let g = Geometry::new(a.shape, b.shape)?;
        check_len(a.data.len(), a.shape, "A")?;
        check_len(b.data.len(), b.shape, "B")?;
        if y.data.len() != g.batches() * g.m * g.n {
            invalid!("output has {} elements, the product needs {}", y.data.len(), g.batches() * g.m * g.n);
        }
        match (a.data, b.data, &mut y.data) {
            (DataRef::F32(a), DataRef::F32(b), DataMut::F32(y)) => matmul_f32(exec, &g, a, b, y),
            (DataRef::F16(a), DataRef::F16(b), DataMut::F16(y)) => matmul_typed::<f16>(&g, a, b, y),
            (DataRef::I32(a), DataRef::I32(b), DataMut::I32(y)) => matmul_typed::<i32>(&g, a, b, y),
            (DataRef::I64(a), DataRef::I64(b), DataMut::I64(y)) => matmul_typed::<i64>(&g, a, b, y),
            _ => invalid!("MatMul on {} × {} into {} is not supported", a.dtype(), b.dtype(), y.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::eval;
    use crate::tensor::{Tensor, TensorData};

    fn inf(t: &Tensor) -> crate::ops::InferInput<'_> {
        crate::ops::InferInput { dtype: t.dtype(), shape: t.shape(), value: None }
    }

    fn mm(a: &Tensor, b: &Tensor) -> crate::error::Result<Tensor> {
        eval(&MatMul, &[Some(a), Some(b)]).map(|mut v| v.remove(0))
    }

    #[test]
    fn hand_checked() {
        let a = f32s(&[2, 3], vec![1., 2., 3., 4., 5., 6.]);
        let b = f32s(&[3, 2], vec![7., 8., 9., 10., 11., 12.]);
        let y = mm(&a, &b).unwrap();
        assert_eq!(y.shape(), &[2, 2]);
        assert_eq!(y.as_f32().unwrap(), &[58., 64., 139., 154.]);
        // Vector · matrix, matrix · vector, vector · vector.
        let v = f32s(&[3], vec![1., 0., -1.]);
        let y = mm(&v, &b).unwrap();
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[2][..], &[-4., -4.][..]));
        let y = mm(&a, &v).unwrap();
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[2][..], &[-2., -2.][..]));
        let y = mm(&v, &v).unwrap();
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[][..], &[2.][..]));
        // Integers wrap like numpy's int32 matmul.
        let a = i32s(&[1, 2], vec![i32::MAX, 1]);
        let b = i32s(&[2, 1], vec![2, 3]);
        assert_eq!(mm(&a, &b).unwrap().data(), &TensorData::I32(vec![i32::MAX.wrapping_mul(2).wrapping_add(3)]));
        let a = Tensor::from_i64(&[2, 2], vec![1, 2, 3, 4]).unwrap();
        assert_eq!(mm(&a, &a).unwrap().data(), &TensorData::I64(vec![7, 10, 15, 22]));
        // f16 in and out.
        let h = f16s(&[1, 2], &[0.5, 2.0]);
        let y = mm(&h, &f16s(&[2, 1], &[4.0, 0.25])).unwrap();
        assert_eq!(y.to_f32_vec().unwrap(), vec![2.5]);
        // K = 0 gives zeros.
        let y = mm(&f32s(&[2, 0], vec![]), &f32s(&[0, 3], vec![])).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[0.; 6]);
    }

    /// Naive numpy matmul on explicit coordinates.
    fn naive(a: &[f32], ash: &[usize], b: &[f32], bsh: &[usize]) -> (Vec<usize>, Vec<f32>) {
        let a2: Vec<usize> = if ash.len() == 1 { vec![1, ash[0]] } else { ash.to_vec() };
        let b2: Vec<usize> = if bsh.len() == 1 { vec![bsh[0], 1] } else { bsh.to_vec() };
        let (ab, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
        let r = ab.len().max(bb.len());
        let pad = |s: &[usize]| [vec![1; r - s.len()], s.to_vec()].concat();
        let (pa, pb) = (pad(ab), pad(bb));
        let batch: Vec<usize> = pa.iter().zip(&pb).map(|(&x, &y)| x.max(y)).collect();
        let (m, k, n) = (a2[a2.len() - 2], a2[a2.len() - 1], b2[b2.len() - 1]);
        let nb: usize = batch.iter().product();
        let mut out = vec![0f32; nb * m * n];
        for bi in 0..nb {
            let mut rem = bi;
            let mut coord = vec![0; r];
            for d in (0..r).rev() {
                coord[d] = rem % batch[d];
                rem /= batch[d];
            }
            let flat = |p: &[usize]| coord.iter().zip(p).fold(0, |acc, (&c, &d)| acc * d + if d == 1 { 0 } else { c });
            let (fa, fb) = (flat(&pa), flat(&pb));
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..k).map(|p| a[(fa * m + i) * k + p] as f64 * b[(fb * k + p) * n + j] as f64).sum();
                    out[(bi * m + i) * n + j] = s as f32;
                }
            }
        }
        let mut shape = batch;
        if ash.len() > 1 {
            shape.push(m);
        }
        if bsh.len() > 1 {
            shape.push(n);
        }
        (shape, out)
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(11);
        let cases: &[(&[usize], &[usize])] = &[
            (&[7, 13], &[13, 7]),
            (&[3, 7, 13], &[3, 13, 5]),
            (&[2, 1, 7, 4], &[3, 4, 13]),
            (&[13], &[2, 13, 7]),
            (&[2, 3, 7, 13], &[13]),
            (&[1, 7, 13], &[4, 13, 1]),
            (&[13], &[13]),
            (&[5, 1, 2, 3], &[1, 6, 3, 2]),
        ];
        for &(ash, bsh) in cases {
            let a = rand_f32(&mut rng, ash, -1.0, 1.0);
            let b = rand_f32(&mut rng, bsh, -1.0, 1.0);
            let y = mm(&a, &b).unwrap();
            let (shape, want) = naive(a.as_f32().unwrap(), ash, b.as_f32().unwrap(), bsh);
            assert_eq!(y.shape(), &shape[..], "{ash:?} x {bsh:?}");
            assert_close(y.as_f32().unwrap(), &want);
            // The f16 path agrees with the f32 one on f16-exact inputs, within f16 rounding.
            let ah = f16s(ash, a.as_f32().unwrap());
            let bh = f16s(bsh, b.as_f32().unwrap());
            let yh = mm(&ah, &bh).unwrap();
            let (_, want_h) = naive(&ah.to_f32_vec().unwrap(), ash, &bh.to_f32_vec().unwrap(), bsh);
            assert_close_tol(&yh.to_f32_vec().unwrap(), &want_h, 1e-2, 1e-3);
        }
    }

    #[test]
    fn errors() {
        let a = f32s(&[2, 3], vec![0.; 6]);
        assert!(mm(&a, &f32s(&[2, 3], vec![0.; 6])).is_err(), "K mismatch");
        assert!(mm(&f32s(&[2, 2, 3], vec![0.; 12]), &f32s(&[3, 3, 1], vec![0.; 9])).is_err(), "batch 2 vs 3");
        assert!(mm(&Tensor::scalar_f32(1.), &a).is_err(), "scalar operand");
        assert!(mm(&a, &i32s(&[3], vec![1, 2, 3])).is_err(), "mixed types");
        let u = Tensor::new(vec![1, 1], TensorData::U8(vec![1])).unwrap();
        assert!(mm(&u, &u).is_err(), "uint8 is MatMulInteger's");
        let huge = f32s(&[1 << 40, 0], vec![]);
        assert!(
            MatMul.infer(&[Some(inf(&huge)), Some(inf(&f32s(&[0, 1 << 40], vec![])))]).is_err(),
            "overflowing output"
        );
        let big = Tensor::zeros(crate::tensor::DType::F32, &[1; 9]);
        assert!(mm(&big, &big).is_err(), "rank over MAX_RANK");
        assert!(eval(&MatMul, &[Some(&a)]).is_err());
        assert!(eval(&MatMul, &[Some(&a), None]).is_err());
    }
}
