//! [`Num`]: the arithmetic the elementwise ops need, defined once per numeric element type.
//!
//! Integer arithmetic wraps on overflow (numpy's behaviour); integer division and remainder
//! by zero give 0 (numpy warns and gives 0 for remainders; ONNX leaves it undefined) so that
//! a bad value never panics. F16 computes in f32 and rounds the result once.

use half::f16;

use crate::tensor::Element;

/// Arithmetic on one numeric element type.
pub trait Num: Element {
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Sum (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// Difference (wrapping for integers).
    fn sub(self, o: Self) -> Self;
    /// Product (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    /// Quotient; integers truncate toward zero (C semantics), and `x / 0` is 0.
    fn div(self, o: Self) -> Self;
    /// Remainder with the sign of the dividend (C `fmod`); integer `x % 0` is 0.
    fn fmod(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python/numpy `mod`); integer `x % 0` is 0.
    fn floor_mod(self, o: Self) -> Self {
        let r = self.fmod(o);
        if r != Self::ZERO && ((r < Self::ZERO) != (o < Self::ZERO)) { r.add(o) } else { r }
    }
    /// The larger; NaN if either is NaN.
    fn max_of(self, o: Self) -> Self;
    /// The smaller; NaN if either is NaN.
    fn min_of(self, o: Self) -> Self;
    /// Negation (wrapping for integers).
    fn neg(self) -> Self;
    /// Absolute value (wrapping: `|i8::MIN|` is `i8::MIN`, as in numpy).
    fn abs(self) -> Self;
    /// -1, 0 or 1 (NaN for NaN).
    fn sign(self) -> Self;
    /// The value as i64 (floats truncate toward zero, saturating).
    fn to_i64(self) -> i64;
    /// An i64 converted as numpy's `astype` does for integers (wrapping).
    fn from_i64(v: i64) -> Self;
}

macro_rules! int_num {
    ($t:ty, $signed:expr) => {
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            fn fmod(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_rem(o) }
            }
            fn max_of(self, o: Self) -> Self {
                Ord::max(self, o)
            }
            fn min_of(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            fn abs(self) -> Self {
                if $signed && self < Self::ZERO { self.wrapping_neg() } else { self }
            }
            fn sign(self) -> Self {
                if self > 0 {
                    1
                } else if self == 0 {
                    0
                } else {
                    Self::ZERO.wrapping_sub(1)
                }
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_num!(i8, true);
int_num!(u8, false);
int_num!(i32, true);
int_num!(i64, true);

impl Num for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div(self, o: Self) -> Self {
        self / o
    }
    fn fmod(self, o: Self) -> Self {
        self % o
    }
    fn floor_mod(self, o: Self) -> Self {
        let r = self % o;
        if r == 0.0 {
            0.0f32.copysign(o)
        } else if (r < 0.0) != (o < 0.0) {
            r + o
        } else {
            r
        }
    }
    fn max_of(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() { f32::NAN } else { self.max(o) }
    }
    fn min_of(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() { f32::NAN } else { self.min(o) }
    }
    fn neg(self) -> Self {
        -self
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn sign(self) -> Self {
        if self > 0.0 {
            1.0
        } else if self < 0.0 {
            -1.0
        } else {
            // 0, -0 and NaN map to themselves.
            self
        }
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Self {
        v as f32
    }
}

impl Num for f16 {
    const ZERO: Self = f16::ZERO;
    const ONE: Self = f16::ONE;
    fn add(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() + o.to_f32())
    }
    fn sub(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() - o.to_f32())
    }
    fn mul(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() * o.to_f32())
    }
    fn div(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() / o.to_f32())
    }
    fn fmod(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() % o.to_f32())
    }
    fn floor_mod(self, o: Self) -> Self {
        f16::from_f32(self.to_f32().floor_mod(o.to_f32()))
    }
    fn max_of(self, o: Self) -> Self {
        f16::from_f32(self.to_f32().max_of(o.to_f32()))
    }
    fn min_of(self, o: Self) -> Self {
        f16::from_f32(self.to_f32().min_of(o.to_f32()))
    }
    fn neg(self) -> Self {
        -self
    }
    fn abs(self) -> Self {
        f16::from_f32(self.to_f32().abs())
    }
    fn sign(self) -> Self {
        f16::from_f32(self.to_f32().sign())
    }
    fn to_i64(self) -> i64 {
        self.to_f32() as i64
    }
    fn from_i64(v: i64) -> Self {
        f16::from_f64(v as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edge_cases() {
        assert_eq!(7i32.div(-2), -3);
        assert_eq!((-7i32).div(2), -3);
        assert_eq!(5i64.div(0), 0);
        assert_eq!(i8::MIN.div(-1), i8::MIN);
        assert_eq!(i8::MIN.fmod(-1), 0);
        assert_eq!((-7i32).fmod(3), -1);
        assert_eq!((-7i32).floor_mod(3), 2);
        assert_eq!(7i32.floor_mod(-3), -2);
        assert_eq!(200u8.add(100), 44);
        assert_eq!(Num::abs(i8::MIN), i8::MIN);
        assert_eq!((-5i8).sign(), -1);
        assert_eq!(0u8.sign(), 0);
    }

    #[test]
    fn float_edge_cases() {
        assert!(f32::NAN.max_of(1.0).is_nan());
        assert!(1.0f32.min_of(f32::NAN).is_nan());
        assert_eq!((-7.5f32).floor_mod(2.0), 0.5);
        assert_eq!((-7.5f32).fmod(2.0), -1.5);
        assert!(f32::NAN.sign().is_nan());
        assert_eq!(f16::from_f32(1.5).add(f16::from_f32(2.25)), f16::from_f32(3.75));
    }
}
