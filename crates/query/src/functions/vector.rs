//! Cassandra 5.0's vector similarity functions: `similarity_cosine`,
//! `similarity_euclidean` and `similarity_dot_product`, each of two float
//! vectors of one dimension, returning a float. The scores are jvector's
//! (which Cassandra calls): `(1 + cosine) / 2`, `1 / (1 + squared distance)`
//! and `(1 + dot product) / 2`, summed in f32 as it does. ANN ordering
//! (`select::ann`) ranks rows by the same scores.

use rocksandra_cql::ast::{Expr, Literal};
use rocksandra_data::types::{CqlType, NativeType};

use super::{arg_text, native, Arg, Function, Kind};
use crate::error::{QueryError, Result};

/// A vector similarity function, also an SAI vector index's
/// `similarity_function` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Similarity {
    Cosine,
    Euclidean,
    DotProduct,
}

impl Similarity {
    /// The index option's value (`COSINE`, case-insensitive); None for others.
    pub fn from_option(value: &str) -> Option<Similarity> {
        match value.to_ascii_uppercase().as_str() {
            "COSINE" => Some(Similarity::Cosine),
            "EUCLIDEAN" => Some(Similarity::Euclidean),
            "DOT_PRODUCT" => Some(Similarity::DotProduct),
            _ => None,
        }
    }

    /// The score of two vectors of one dimension: higher is more similar.
    pub fn score(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Similarity::Cosine => {
                let (mut dot, mut norm_a, mut norm_b) = (0f32, 0f32, 0f32);
                for (x, y) in a.iter().zip(b) {
                    dot += x * y;
                    norm_a += x * x;
                    norm_b += y * y;
                }
                let cosine =
                    (f64::from(dot) / (f64::from(norm_a) * f64::from(norm_b)).sqrt()) as f32;
                (1.0 + cosine) / 2.0
            }
            Similarity::Euclidean => {
                let squared: f32 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
                1.0 / (1.0 + squared)
            }
            Similarity::DotProduct => {
                let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                (1.0 + dot) / 2.0
            }
        }
    }
}

pub(super) fn similarity_kind(name: &str) -> Option<Similarity> {
    Some(match name {
        "similarity_cosine" => Similarity::Cosine,
        "similarity_euclidean" => Similarity::Euclidean,
        "similarity_dot_product" => Similarity::DotProduct,
        _ => return None,
    })
}

/// Cassandra's `FunctionFactory` text for the messages naming the function.
fn factory_text(name: &str) -> String {
    format!("system.{name}(vector<float, n>, vector<float, n>)")
}

/// The vector type an argument is known to have: its own, or a list
/// literal's (a float vector of its length); None for a bind marker.
fn known_type(arg: &Arg<'_>) -> Option<CqlType> {
    match arg {
        Arg::Typed(t) | Arg::Selector(t, _) => Some((*t).clone()),
        Arg::Term(Expr::List(items), _) => Some(CqlType::Vector(
            Box::new(native(NativeType::Float)),
            u32::try_from(items.len()).unwrap_or(u32::MAX),
        )),
        Arg::Term(Expr::Literal(literal), _) => super::constant_type(literal).map(native),
        Arg::Term(..) => None,
    }
}

/// An argument as Cassandra's messages print it (`NULL` for null).
fn label(arg: &Arg<'_>) -> String {
    match arg {
        Arg::Term(Expr::Literal(Literal::Null), _) => "NULL".to_string(),
        other => arg_text(other),
    }
}

fn is_float_vector(ty: &CqlType) -> Option<u32> {
    match ty.unfrozen() {
        CqlType::Vector(e, n) if matches!(e.unfrozen(), CqlType::Native(NativeType::Float)) => {
            Some(*n)
        }
        _ => None,
    }
}

/// Resolves a similarity function as Cassandra's factory does: each
/// argument's type from itself, else from the other argument's.
pub(super) fn resolve(name: &str, kind: Similarity, args: &[Arg<'_>]) -> Result<Function> {
    if args.len() != 2 {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function {}",
            factory_text(name)
        )));
    }
    let first: Vec<Option<CqlType>> = args.iter().map(known_type).collect();
    let mut types = Vec::with_capacity(2);
    for (i, arg) in args.iter().enumerate() {
        let Some(ty) = first[i].clone().or_else(|| first[1 - i].clone()) else {
            return Err(QueryError::invalid(format!(
                "Cannot infer type of argument {} in call to function {}: use type casts to disambiguate",
                label(arg),
                factory_text(name)
            )));
        };
        if is_float_vector(&ty).is_none() {
            return Err(QueryError::invalid(format!(
                "Function system.{name} requires a float vector argument, but found argument {} of type {ty}",
                label(arg)
            )));
        }
        types.push(ty);
    }
    if is_float_vector(&types[0]) != is_float_vector(&types[1]) {
        return Err(QueryError::invalid(
            "All arguments must have the same vector dimensions",
        ));
    }
    let ty = types[0].unfrozen().clone();
    Ok(Function {
        name: name.to_string(),
        kind: Kind::Similarity(kind),
        arg_types: vec![ty.clone(), ty],
        return_type: native(NativeType::Float),
    })
}

/// The floats of a serialized `vector<float, n>`.
pub fn decode_floats(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(QueryError::invalid(format!(
            "Not enough bytes to read a vector of floats ({} bytes)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

pub(super) fn call(
    name: &str,
    kind: Similarity,
    args: &[Option<Vec<u8>>],
) -> Result<Option<Vec<u8>>> {
    let (Some(Some(a)), Some(Some(b))) = (args.first(), args.get(1)) else {
        return Ok(None);
    };
    let (a, b) = (decode_floats(a)?, decode_floats(b)?);
    if kind == Similarity::Cosine && (all_zero(&a) || all_zero(&b)) {
        return Err(QueryError::invalid(format!(
            "Function system.{name} doesn't support all-zero vectors."
        )));
    }
    Ok(Some(kind.score(&a, &b).to_be_bytes().to_vec()))
}

fn all_zero(v: &[f32]) -> bool {
    v.iter().all(|x| *x == 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_jvector_s() {
        let (a, b) = ([1.0f32, 0.0], [0.0f32, 1.0]);
        assert_eq!(Similarity::Cosine.score(&a, &a), 1.0);
        assert_eq!(Similarity::Cosine.score(&a, &b), 0.5);
        assert_eq!(Similarity::Euclidean.score(&a, &b), 1.0 / 3.0);
        assert_eq!(Similarity::DotProduct.score(&[1.0, 2.0], &[3.0, 4.0]), 6.0);
        assert_eq!(
            Similarity::from_option("dot_product"),
            Some(Similarity::DotProduct)
        );
        assert_eq!(Similarity::from_option("manhattan"), None);
    }

    #[test]
    fn cosine_refuses_zero_vectors_and_nulls_give_null() {
        let zero = 0f32.to_be_bytes().repeat(2);
        let one = [1f32.to_be_bytes(), 0f32.to_be_bytes()].concat();
        let refused = call(
            "similarity_cosine",
            Similarity::Cosine,
            &[Some(zero.clone()), Some(one.clone())],
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            "Function system.similarity_cosine doesn't support all-zero vectors."
        );
        let euclid = call(
            "similarity_euclidean",
            Similarity::Euclidean,
            &[Some(zero), Some(one.clone())],
        );
        assert_eq!(euclid.unwrap(), Some(0.5f32.to_be_bytes().to_vec()));
        assert_eq!(
            call("similarity_cosine", Similarity::Cosine, &[None, Some(one)]).unwrap(),
            None
        );
    }
}
