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
    for_each_run2(out, a, b, |o, ia, sa, ib, sb, len| {
        for k in 0..len {
            f(o + k, ia + k * sa, ib + k * sb);
        }
    });
}

/// Like [`for_each2`], a run of consecutive outputs at a time: `f(out_start, a_start,
/// a_step, b_start, b_step, len)` covers outputs `out_start..out_start + len`, whose inputs
/// are `a_start + k * a_step` and `b_start + k * b_step` (a step is 1, or 0 where that input
/// is broadcast). Trailing dims that are laid out alike in all three tensors are merged, so
/// a run is as long as the layouts allow (the whole tensor for equal shapes or a scalar).
pub fn for_each_run2(
    out: &[usize],
    a: &[usize],
    b: &[usize],
    mut f: impl FnMut(usize, usize, usize, usize, usize, usize),
) {
    let n: usize = out.iter().product();
    if n == 0 {
        return;
    }
    let rank = out.len();
    let sa = broadcast_strides(a, out);
    let sb = broadcast_strides(b, out);
    if rank == 0 {
        f(0, 0, 0, 0, 0, 1);
        return;
    }
    // Merge trailing dims while each input either walks them contiguously or broadcasts
    // them all (stride 0 throughout).
    let (ia, ib) = (sa[rank - 1].min(1), sb[rank - 1].min(1));
    let mut inner = 1usize;
    let mut first = rank; // dims first..rank are merged into the run
    while first > 0 {
        let d = first - 1;
        let a_ok = if ia == 1 { sa[d] == inner } else { sa[d] == 0 };
        let b_ok = if ib == 1 { sb[d] == inner } else { sb[d] == 0 };
        if !(a_ok && b_ok) && out[d] != 1 {
            break;
        }
        inner *= out[d];
        first = d;
    }
    if first == 0 {
        f(0, 0, ia, 0, ib, inner);
        return;
    }
    let mut idx = [0usize; MAX_RANK];
    let (mut oa, mut ob) = (0usize, 0usize);
    let mut o = 0;
    while o < n {
        f(o, oa, ia, ob, ib, inner);
        o += inner;
        // Advance the odometer over the outer dims 0..first.
        let mut d = first;
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

    /// Runs cover every output once, in order, with the inputs' indices from a plain
    /// multi-index walk, over random broadcasting shapes (scalars, size-1 and zero dims).
    #[test]
    fn runs_match_a_plain_walk_over_random_shapes() {
        let mut seed = 99u64;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut merged_whole = 0;
        for _ in 0..500 {
            let rank = next(5);
            let out: Vec<usize> = (0..rank)
                .map(|_| {
                    let choices = if next(20) == 0 { 5 } else { 4 };
                    [1, 2, 3, 4, 0][next(choices)]
                })
                .collect();
            let sub = |next: &mut dyn FnMut(usize) -> usize| -> Vec<usize> {
                let r = next(rank + 1);
                out[rank - r..].iter().map(|&d| if next(3) == 0 { 1 } else { d }).collect()
            };
            let (a, b) = (sub(&mut next), sub(&mut next));
            let (sa, sb) = (broadcast_strides(&a, &out), broadcast_strides(&b, &out));
            let mut want = Vec::new();
            let n: usize = out.iter().product();
            for o in 0..n {
                let (mut rem, mut ia, mut ib) = (o, 0, 0);
                for d in (0..rank).rev() {
                    let i = rem % out[d];
                    rem /= out[d];
                    ia += i * sa[d];
                    ib += i * sb[d];
                }
                want.push((o, ia, ib));
            }
            let mut got = Vec::new();
            let mut runs = 0;
            for_each_run2(&out, &a, &b, |o, ia, sta, ib, stb, len| {
                assert!(sta <= 1 && stb <= 1 && len > 0);
                runs += 1;
                got.extend((0..len).map(|k| (o + k, ia + k * sta, ib + k * stb)));
            });
            assert_eq!(got, want, "out {out:?} a {a:?} b {b:?}");
            if a == out && b == out && n > 0 {
                assert_eq!(runs, 1, "equal shapes are one run");
                merged_whole += 1;
            }
        }
        assert!(merged_whole > 0);
    }
}
