//! Tensors: owned values ([`Tensor`]) and borrowed views ([`TensorRef`], [`TensorMut`]).
//!
//! Owned tensors hold initializers, constant-folded values and reference-executor results.
//! Views are what ops compute on: the arena executor hands out views into its preallocated
//! buffer, so an op's `run` never owns or allocates memory.

use half::f16;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Element type of a tensor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum DType {
    F32,
    F16,
    I8,
    U8,
    I32,
    I64,
    Bool,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::I64 => 8,
        }
    }

    /// Lower-case name as in numpy (`float32`, `int64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }

    /// The ONNX `TensorProto.DataType` code, if this type has one we support.
    pub fn from_onnx(code: i32) -> Option<DType> {
        Some(match code {
            1 => DType::F32,
            2 => DType::U8,
            3 => DType::I8,
            6 => DType::I32,
            7 => DType::I64,
            9 => DType::Bool,
            10 => DType::F16,
            _ => return None,
        })
    }

    /// The ONNX `TensorProto.DataType` code.
    pub fn to_onnx(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::U8 => 2,
            DType::I8 => 3,
            DType::I32 => 6,
            DType::I64 => 7,
            DType::Bool => 9,
            DType::F16 => 10,
        }
    }

    /// True for F32 and F16.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Number of elements of a shape (1 for a scalar); saturates instead of overflowing, so a
/// hostile shape fails the size limit checks rather than wrapping.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |a, &d| a.saturating_mul(d))
}

/// The largest tensor edgert will allocate (16 GiB): bigger shapes come from corrupt or
/// hostile models and are refused with an error instead of aborting on allocation.
pub const MAX_TENSOR_BYTES: usize = 16 << 30;

/// Owned element storage.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum TensorData {
    F32(Vec<f32>),
    F16(Vec<f16>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

/// Borrowed element storage.
#[derive(Clone, Copy, Debug)]
pub enum DataRef<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    I8(&'a [i8]),
    U8(&'a [u8]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    Bool(&'a [bool]),
}

/// Mutably borrowed element storage.
#[derive(Debug)]
pub enum DataMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
    I8(&'a mut [i8]),
    U8(&'a mut [u8]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    Bool(&'a mut [bool]),
}

/// Applies `$body` to the typed slice inside any data enum, binding it to `$v`.
#[macro_export]
macro_rules! match_data {
    ($enum:ident, $e:expr, $v:ident => $body:expr) => {
        match $e {
            $enum::F32($v) => $body,
            $enum::F16($v) => $body,
            $enum::I8($v) => $body,
            $enum::U8($v) => $body,
            $enum::I32($v) => $body,
            $enum::I64($v) => $body,
            $enum::Bool($v) => $body,
        }
    };
}

macro_rules! impl_dtype_of {
    ($t:ident) => {
        impl $t<'_> {
            /// The element type.
            pub fn dtype(&self) -> DType {
                match self {
                    $t::F32(_) => DType::F32,
                    $t::F16(_) => DType::F16,
                    $t::I8(_) => DType::I8,
                    $t::U8(_) => DType::U8,
                    $t::I32(_) => DType::I32,
                    $t::I64(_) => DType::I64,
                    $t::Bool(_) => DType::Bool,
                }
            }
            /// Number of elements.
            pub fn len(&self) -> usize {
                match_data!($t, self, v => v.len())
            }
            /// True if there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }
    };
}
impl_dtype_of!(DataRef);
impl_dtype_of!(DataMut);

impl TensorData {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.as_ref().dtype()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match_data!(TensorData, self, v => v.len())
    }
    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Zero-filled storage of `n` elements.
    pub fn zeros(dtype: DType, n: usize) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(vec![0.0; n]),
            DType::F16 => TensorData::F16(vec![f16::ZERO; n]),
            DType::I8 => TensorData::I8(vec![0; n]),
            DType::U8 => TensorData::U8(vec![0; n]),
            DType::I32 => TensorData::I32(vec![0; n]),
            DType::I64 => TensorData::I64(vec![0; n]),
            DType::Bool => TensorData::Bool(vec![false; n]),
        }
    }
    /// Borrow.
    pub fn as_ref(&self) -> DataRef<'_> {
        match self {
            TensorData::F32(v) => DataRef::F32(v),
            TensorData::F16(v) => DataRef::F16(v),
            TensorData::I8(v) => DataRef::I8(v),
            TensorData::U8(v) => DataRef::U8(v),
            TensorData::I32(v) => DataRef::I32(v),
            TensorData::I64(v) => DataRef::I64(v),
            TensorData::Bool(v) => DataRef::Bool(v),
        }
    }
    /// Borrow mutably.
    pub fn as_mut(&mut self) -> DataMut<'_> {
        match self {
            TensorData::F32(v) => DataMut::F32(v),
            TensorData::F16(v) => DataMut::F16(v),
            TensorData::I8(v) => DataMut::I8(v),
            TensorData::U8(v) => DataMut::U8(v),
            TensorData::I32(v) => DataMut::I32(v),
            TensorData::I64(v) => DataMut::I64(v),
            TensorData::Bool(v) => DataMut::Bool(v),
        }
    }
}

impl<'a> DataRef<'a> {
    /// Copies into owned storage.
    pub fn to_owned(&self) -> TensorData {
        match *self {
            DataRef::F32(v) => TensorData::F32(v.to_vec()),
            DataRef::F16(v) => TensorData::F16(v.to_vec()),
            DataRef::I8(v) => TensorData::I8(v.to_vec()),
            DataRef::U8(v) => TensorData::U8(v.to_vec()),
            DataRef::I32(v) => TensorData::I32(v.to_vec()),
            DataRef::I64(v) => TensorData::I64(v.to_vec()),
            DataRef::Bool(v) => TensorData::Bool(v.to_vec()),
        }
    }
    /// The raw bytes (native endianness).
    #[allow(clippy::unnecessary_cast)] // the cast is needed for every element type but u8
    pub fn as_bytes(&self) -> &'a [u8] {
        // SAFETY: every element type here is plain old data without padding; bool is one
        // byte holding 0 or 1.
        match_data!(DataRef, *self, v => unsafe {
            std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v))
        })
    }
}

/// An owned tensor: a shape and its elements in row-major order.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Tensor {
    shape: Vec<usize>,
    data: TensorData,
}

impl Tensor {
    /// Builds a tensor; errors if the element count does not match the shape.
    pub fn new(shape: Vec<usize>, data: TensorData) -> Result<Tensor> {
        if numel(&shape) != data.len() {
            return Err(Error::Invalid(format!(
                "tensor of shape {:?} needs {} elements, got {}",
                shape,
                numel(&shape),
                data.len()
            )));
        }
        Ok(Tensor { shape, data })
    }
    /// A zero-filled tensor.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
        Tensor { shape: shape.to_vec(), data: TensorData::zeros(dtype, numel(shape)) }
    }
    /// An f32 tensor; errors if the element count does not match.
    pub fn from_f32(shape: &[usize], v: Vec<f32>) -> Result<Tensor> {
        Tensor::new(shape.to_vec(), TensorData::F32(v))
    }
    /// An i64 tensor; errors if the element count does not match.
    pub fn from_i64(shape: &[usize], v: Vec<i64>) -> Result<Tensor> {
        Tensor::new(shape.to_vec(), TensorData::I64(v))
    }
    /// A rank-0 f32 tensor.
    pub fn scalar_f32(v: f32) -> Tensor {
        Tensor { shape: vec![], data: TensorData::F32(vec![v]) }
    }
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }
    /// True if the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// The storage.
    pub fn data(&self) -> &TensorData {
        &self.data
    }
    /// Consumes the tensor, returning its storage.
    pub fn into_data(self) -> TensorData {
        self.data
    }
    /// Changes the shape, keeping the elements; errors on a count mismatch.
    pub fn reshaped(self, shape: Vec<usize>) -> Result<Tensor> {
        Tensor::new(shape, self.data)
    }
    /// A borrowed view.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { shape: &self.shape, data: self.data.as_ref() }
    }
    /// A mutable view.
    pub fn view_mut(&mut self) -> TensorMut<'_> {
        TensorMut { shape: &self.shape, data: self.data.as_mut() }
    }
    /// The f32 elements, or an error naming the actual type.
    pub fn as_f32(&self) -> Result<&[f32]> {
        self.view().as_f32()
    }
    /// The elements of an integer tensor widened to i64 (for shape-like inputs).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        self.view().to_i64_vec()
    }
    /// The elements converted to f32 (for float-valued parameters of any float type).
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        self.view().to_f32_vec()
    }
}

/// A borrowed tensor: shape plus typed elements.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// The shape.
    pub shape: &'a [usize],
    /// The elements, row-major.
    pub data: DataRef<'a>,
}

/// A mutably borrowed tensor.
#[derive(Debug)]
pub struct TensorMut<'a> {
    /// The shape.
    pub shape: &'a [usize],
    /// The elements, row-major.
    pub data: DataMut<'a>,
}

impl<'a> TensorRef<'a> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// Copies into an owned tensor.
    pub fn to_tensor(&self) -> Tensor {
        Tensor { shape: self.shape.to_vec(), data: self.data.to_owned() }
    }
    /// The f32 elements, or an error naming the actual type.
    pub fn as_f32(&self) -> Result<&'a [f32]> {
        match self.data {
            DataRef::F32(v) => Ok(v),
            other => Err(Error::Invalid(format!("expected float32, got {}", other.dtype()))),
        }
    }
    /// The elements of an integer tensor widened to i64.
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        Ok(match self.data {
            DataRef::I64(v) => v.to_vec(),
            DataRef::I32(v) => v.iter().map(|&x| x as i64).collect(),
            DataRef::I8(v) => v.iter().map(|&x| x as i64).collect(),
            DataRef::U8(v) => v.iter().map(|&x| x as i64).collect(),
            other => {
                return Err(Error::Invalid(format!("expected an integer tensor, got {}", other.dtype())));
            }
        })
    }
    /// The elements converted to f32.
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        Ok(match self.data {
            DataRef::F32(v) => v.to_vec(),
            DataRef::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            DataRef::I64(v) => v.iter().map(|&x| x as f32).collect(),
            DataRef::I32(v) => v.iter().map(|&x| x as f32).collect(),
            DataRef::I8(v) => v.iter().map(|&x| x as f32).collect(),
            DataRef::U8(v) => v.iter().map(|&x| x as f32).collect(),
            DataRef::Bool(v) => v.iter().map(|&x| x as u8 as f32).collect(),
        })
    }
}

impl<'a> TensorMut<'a> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// The f32 elements, or an error naming the actual type.
    pub fn as_f32_mut(&mut self) -> Result<&mut [f32]> {
        match &mut self.data {
            DataMut::F32(v) => Ok(v),
            other => Err(Error::Invalid(format!("expected float32 output, got {}", other.dtype()))),
        }
    }
    /// Reborrows as a read-only view.
    pub fn as_ref(&self) -> TensorRef<'_> {
        let data = match &self.data {
            DataMut::F32(v) => DataRef::F32(v),
            DataMut::F16(v) => DataRef::F16(v),
            DataMut::I8(v) => DataRef::I8(v),
            DataMut::U8(v) => DataRef::U8(v),
            DataMut::I32(v) => DataRef::I32(v),
            DataMut::I64(v) => DataRef::I64(v),
            DataMut::Bool(v) => DataRef::Bool(v),
        };
        TensorRef { shape: self.shape, data }
    }
}

/// Element types that ops can be generic over.
pub trait Element: Copy + PartialOrd + Default + Send + Sync + std::fmt::Debug + 'static {
    /// The matching [`DType`].
    const DTYPE: DType;
    /// Converts to f64 (lossless for every supported type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts from f64 with the numpy `astype` semantics (truncation for integers).
    fn from_f64(v: f64) -> Self;
    /// Borrows the typed slice out of a view, if the type matches.
    fn slice(d: DataRef<'_>) -> Option<&[Self]>;
    /// Borrows the typed mutable slice out of a view, if the type matches.
    fn slice_mut<'a>(d: &'a mut DataMut<'_>) -> Option<&'a mut [Self]>;
}

macro_rules! impl_element {
    ($t:ty, $variant:ident, |$x:ident| $to:expr, |$y:ident| $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn to_f64(self) -> f64 {
                let $x = self;
                $to
            }
            fn from_f64($y: f64) -> Self {
                $from
            }
            fn slice(d: DataRef<'_>) -> Option<&[Self]> {
                match d {
                    DataRef::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut<'a>(d: &'a mut DataMut<'_>) -> Option<&'a mut [Self]> {
                match d {
                    DataMut::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
impl_element!(f32, F32, |x| x as f64, |y| y as f32);
impl_element!(f16, F16, |x| x.to_f64(), |y| f16::from_f64(y));
impl_element!(i8, I8, |x| x as f64, |y| y as i8);
impl_element!(u8, U8, |x| x as f64, |y| y as u8);
impl_element!(i32, I32, |x| x as f64, |y| y as i32);
impl_element!(i64, I64, |x| x as f64, |y| y as i64);
impl_element!(bool, Bool, |x| x as u8 as f64, |y| y != 0.0);

impl<'a> TensorRef<'a> {
    /// The typed elements, or an error naming both types.
    pub fn typed<T: Element>(&self) -> Result<&'a [T]> {
        T::slice(self.data).ok_or_else(|| Error::Invalid(format!("expected {}, got {}", T::DTYPE, self.dtype())))
    }
}

impl TensorMut<'_> {
    /// The typed mutable elements, or an error naming both types.
    pub fn typed_mut<T: Element>(&mut self) -> Result<&mut [T]> {
        let actual = self.dtype();
        T::slice_mut(&mut self.data)
            .ok_or_else(|| Error::Invalid(format!("expected {} output, got {}", T::DTYPE, actual)))
    }
}

/// Row-major strides of a shape, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Maximum rank supported by kernels that keep per-dimension state on the stack.
pub const MAX_RANK: usize = 8;

/// Row-major strides in a fixed-size array (no heap allocation); dims past `shape.len()` are 0.
pub fn strides_fixed(shape: &[usize]) -> [usize; MAX_RANK] {
    let mut s = [0usize; MAX_RANK];
    let mut acc = 1;
    for i in (0..shape.len().min(MAX_RANK)).rev() {
        s[i] = acc;
        acc *= shape[i];
    }
    s
}
