//! Numpy-style (multidirectional) broadcasting, without heap allocation in the hot path.

use crate::error::Result;
use crate::invalid;
use crate::tensor::MAX_RANK;

/// The broadcast shape of several shapes, or an error naming them.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                invalid!("shapes {:?} do not broadcast", shapes);
            }
        }
    }
    // A zero-size dim wins over 1 (numpy semantics): handled above since 1 is replaced.
    Ok(out)
}

/// Strides of `input` laid over `out` (right-aligned), 0 on broadcast dims; fixed size.
pub fn broadcast_strides(input: &[usize], out: &[usize]) -> [usize; MAX_RANK] {
    let mut s = [0usize; MAX_RANK];
    let off = out.len() - input.len();
    let mut acc = 1;
    for i in (0..input.len()).rev() {
        s[off + i] = if input[i] == 1 { 0 } else { acc };
        acc *= input[i];
    }
    s
}

/// Calls `f(out_index, a_index, b_index)` for every element of the broadcast output,
/// in row-major order. `out` must be the broadcast of `a` and `b`; rank ≤ 8.
pub fn for_each2(out: &[usize], a: &[usize], b: &[usize], mut f: impl FnMut(usize, usize, usize)) {
    let n: usize = out.iter().product();
    if a == out && b == out {
        for i in 0..n {
            f(i, i, i);
        }
        return;
    }
    let sa = broadcast_strides(a, out);
    let sb = broadcast_strides(b, out);
    let rank = out.len();
    if rank == 0 {
        if n == 1 {
            f(0, 0, 0);
        }
        return;
    }
    let inner = out[rank - 1];
    let (ia, ib) = (sa[rank - 1], sb[rank - 1]);
    let mut idx = [0usize; MAX_RANK];
    let (mut oa, mut ob) = (0usize, 0usize);
    let mut o = 0;
    while o < n {
        for k in 0..inner {
            f(o + k, oa + k * ia, ob + k * ib);
        }
        o += inner;
        // Advance the odometer over the outer dims.
        let mut d = rank - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            oa += sa[d];
            ob += sb[d];
            if idx[d] < out[d] {
                break;
            }
            oa -= sa[d] * out[d];
            ob -= sb[d] * out[d];
            idx[d] = 0;
        }
    }
}

/// Like [`for_each2`] for three inputs (Where, Clip with tensor bounds, ...).
pub fn for_each3(out: &[usize], a: &[usize], b: &[usize], c: &[usize], mut f: impl FnMut(usize, usize, usize, usize)) {
    let n: usize = out.iter().product();
    let sa = broadcast_strides(a, out);
    let sb = broadcast_strides(b, out);
    let sc = broadcast_strides(c, out);
    let rank = out.len();
    let mut idx = [0usize; MAX_RANK];
    for o in 0..n {
        let (mut ia, mut ib, mut ic) = (0, 0, 0);
        for d in 0..rank {
            ia += idx[d] * sa[d];
            ib += idx[d] * sb[d];
            ic += idx[d] * sc[d];
        }
        f(o, ia, ib, ic);
        let mut d = rank;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(broadcast_shapes(&[&[2, 3, 4], &[3, 1]]).unwrap(), vec![2, 3, 4]);
        assert_eq!(broadcast_shapes(&[&[], &[5]]).unwrap(), vec![5]);
        assert!(broadcast_shapes(&[&[2, 3], &[4]]).is_err());
    }

    #[test]
    fn for_each2_matches_naive() {
        let out = [2, 3, 4];
        let a = [3, 1];
        let b = [2, 1, 4];
        let mut seen = Vec::new();
        for_each2(&out, &a, &b, |o, ia, ib| seen.push((o, ia, ib)));
        let mut want = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    want.push((i * 12 + j * 4 + k, j, i * 4 + k));
                }
            }
        }
        assert_eq!(seen, want);
        let mut seen3 = Vec::new();
        for_each3(&out, &a, &b, &[4], |o, ia, ib, ic| seen3.push((o, ia, ib, ic)));
        let want3: Vec<_> = want.iter().map(|&(o, ia, ib)| (o, ia, ib, o % 4)).collect();
        assert_eq!(seen3, want3);
    }
}
