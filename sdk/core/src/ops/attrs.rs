//! ONNX node attributes, in a form that serializes into the engine file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// One attribute value.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum Attr {
    /// `float`.
    Float(f32),
    /// `int`.
    Int(i64),
    /// `string` (bytes as in ONNX; usually UTF-8).
    String(Vec<u8>),
    /// `tensor`.
    Tensor(Tensor),
    /// `floats`.
    Floats(Vec<f32>),
    /// `ints`.
    Ints(Vec<i64>),
    /// `strings`.
    Strings(Vec<Vec<u8>>),
    /// `graph`: an If branch or Loop body (with the outer values it reads as inputs).
    Graph(super::control::Subgraph),
}

/// A node's attributes by name.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct Attrs {
    map: BTreeMap<String, Attr>,
}

impl Attrs {
    /// No attributes.
    pub fn new() -> Attrs {
        Attrs::default()
    }
    /// Adds or replaces one (builder style).
    pub fn with(mut self, name: &str, value: Attr) -> Attrs {
        self.map.insert(name.to_string(), value);
        self
    }
    /// Adds or replaces one.
    pub fn insert(&mut self, name: &str, value: Attr) {
        self.map.insert(name.to_string(), value);
    }
    /// The raw attribute.
    pub fn get(&self, name: &str) -> Option<&Attr> {
        self.map.get(name)
    }
    /// All attributes, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Attr)> {
        self.map.iter()
    }

    fn wrong(name: &str, want: &str, got: &Attr) -> Error {
        Error::Invalid(format!("attribute `{name}` should be {want}, got {got:?}"))
    }

    /// An `int` attribute, if present.
    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Int(v)) => Ok(Some(*v)),
            Some(other) => Err(Self::wrong(name, "an int", other)),
        }
    }
    /// An `int` attribute with a default.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64> {
        Ok(self.int(name)?.unwrap_or(default))
    }
    /// A `float` attribute, if present.
    pub fn float(&self, name: &str) -> Result<Option<f32>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Float(v)) => Ok(Some(*v)),
            Some(Attr::Int(v)) => Ok(Some(*v as f32)),
            Some(other) => Err(Self::wrong(name, "a float", other)),
        }
    }
    /// A `float` attribute with a default.
    pub fn float_or(&self, name: &str, default: f32) -> Result<f32> {
        Ok(self.float(name)?.unwrap_or(default))
    }
    /// An `ints` attribute, if present.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(other) => Err(Self::wrong(name, "a list of ints", other)),
        }
    }
    /// A `floats` attribute, if present.
    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Floats(v)) => Ok(Some(v.clone())),
            Some(other) => Err(Self::wrong(name, "a list of floats", other)),
        }
    }
    /// A `string` attribute as UTF-8, if present.
    pub fn string(&self, name: &str) -> Result<Option<String>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::String(v)) => String::from_utf8(v.clone())
                .map(Some)
                .map_err(|_| Error::Invalid(format!("attribute `{name}` is not UTF-8"))),
            Some(other) => Err(Self::wrong(name, "a string", other)),
        }
    }
    /// A `string` attribute with a default.
    pub fn string_or(&self, name: &str, default: &str) -> Result<String> {
        Ok(self.string(name)?.unwrap_or_else(|| default.to_string()))
    }
    /// A `strings` attribute as UTF-8, if present.
    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Strings(v)) => v
                .iter()
                .map(|s| {
                    String::from_utf8(s.clone()).map_err(|_| Error::Invalid(format!("attribute `{name}` is not UTF-8")))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(other) => Err(Self::wrong(name, "a list of strings", other)),
        }
    }
    /// A `tensor` attribute, if present.
    pub fn tensor(&self, name: &str) -> Result<Option<&Tensor>> {
        match self.map.get(name) {
            None => Ok(None),
            Some(Attr::Tensor(t)) => Ok(Some(t)),
            Some(other) => Err(Self::wrong(name, "a tensor", other)),
        }
    }
}
