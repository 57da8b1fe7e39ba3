//! Cassandra 5.0's masking functions (CEP-20): `mask_null`, `mask_default`,
//! `mask_replace`, `mask_inner`, `mask_outer` and `mask_hash`. Each takes a
//! value of any type, so, as the collection functions, it is resolved from
//! its first argument's type. Results checked against Cassandra 5.0.6.

use md5::Md5;
use rocksandra_data::types::{CqlType, NativeType};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use rocksandra_cql::ast::Expr;

use super::{arg_text, check_assignable, native, Arg, Function, Kind};
use crate::error::{QueryError, Result};

pub(super) fn mask_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "mask_null" => Kind::MaskNull,
        "mask_default" => Kind::MaskDefault,
        "mask_replace" => Kind::MaskReplace,
        "mask_inner" => Kind::MaskInner,
        "mask_outer" => Kind::MaskOuter,
        "mask_hash" => Kind::MaskHash,
        _ => return None,
    })
}

pub(super) fn resolve(name: &str, kind: Kind, args: &[Arg<'_>]) -> Result<Function> {
    let (arity, parameters): (&[usize], &str) = match kind {
        Kind::MaskReplace => (&[2], "any, any"),
        Kind::MaskInner | Kind::MaskOuter => (&[3, 4], "[text|varchar|ascii], int, int, [text]"),
        Kind::MaskHash => (&[1, 2], "any, [text]"),
        _ => (&[1], "any"),
    };
    if !arity.contains(&args.len()) {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function system.{name}({parameters})"
        )));
    }
    let Some(Arg::Typed(ty) | Arg::Selector(ty, _)) = args.first() else {
        return Err(QueryError::invalid(format!(
            "Cannot infer type of argument {} in call to function system.{name}: use type casts to disambiguate",
            args.first().map(arg_text).unwrap_or_default()
        )));
    };
    let ty: CqlType = (*ty).clone();
    let text = native(NativeType::Text);
    let int = native(NativeType::Int);
    let (arg_types, return_type) = match kind {
        Kind::MaskReplace => (vec![ty.clone(), ty.clone()], ty.clone()),
        Kind::MaskInner | Kind::MaskOuter => {
            if !matches!(
                ty.unfrozen(),
                CqlType::Native(NativeType::Text | NativeType::Ascii)
            ) {
                return Err(QueryError::invalid(format!(
                    "Function system.{name} requires an argument of type [text|varchar|ascii], but found argument {} of type {ty}",
                    arg_text(&args[0])
                )));
            }
            let mut types = vec![ty.clone(), int.clone(), int];
            if args.len() == 4 {
                types.push(text);
            }
            (types, ty.clone())
        }
        Kind::MaskHash => {
            let mut types = vec![ty.clone()];
            if args.len() == 2 {
                types.push(text);
            }
            (types, native(NativeType::Blob))
        }
        _ => (vec![ty.clone()], ty.clone()),
    };
    if matches!(kind, Kind::MaskInner | Kind::MaskOuter | Kind::MaskHash) {
        check_options(name, args, &arg_types)?;
    }
    // The first argument has the parameter's own type.
    check_assignable(name, args, &arg_types)?;
    Ok(Function {
        name: name.to_string(),
        kind,
        arg_types,
        return_type,
    })
}

/// The lengths and the padding of `mask_inner`/`mask_outer`, the algorithm
/// of `mask_hash`: a constant of another type is refused in Cassandra's
/// words for these parameters.
fn check_options(name: &str, args: &[Arg<'_>], params: &[CqlType]) -> Result<()> {
    for (arg, param) in args.iter().zip(params).skip(1) {
        let Arg::Term(Expr::Literal(literal), _) = arg else {
            continue;
        };
        let Some(found) = super::constant_type(literal) else {
            continue;
        };
        if super::test_arg(arg, param) == super::Assignment::NotAssignable {
            return Err(QueryError::invalid(format!(
                "Function system.{name} requires an argument of type {param}, but found argument {} of type {}",
                arg_text(arg),
                native(found)
            )));
        }
    }
    Ok(())
}

pub(super) fn call(f: &Function, args: &[Option<Vec<u8>>]) -> Result<Option<Vec<u8>>> {
    let value = args.first().cloned().flatten();
    let ty = f
        .arg_types
        .first()
        .cloned()
        .unwrap_or(native(NativeType::Blob));
    Ok(match f.kind {
        Kind::MaskNull => None,
        Kind::MaskDefault => Some(masked_default(&ty)?),
        Kind::MaskReplace => args.get(1).cloned().flatten(),
        Kind::MaskInner | Kind::MaskOuter => match value {
            None => None,
            Some(bytes) => Some(partial(f, &bytes, args)?),
        },
        Kind::MaskHash => match value {
            None => None,
            Some(bytes) => {
                let algorithm = match args.get(1).cloned().flatten() {
                    Some(name) => String::from_utf8_lossy(&name).into_owned(),
                    None => "SHA-256".to_string(),
                };
                Some(hash(&algorithm, &bytes)?)
            }
        },
        _ => None,
    })
}

/// `mask_inner` keeps `begin` characters at the start and `end` at the end
/// and pads the rest; `mask_outer` pads those and keeps the rest. A null or
/// negative count is 0.
fn partial(f: &Function, bytes: &[u8], args: &[Option<Vec<u8>>]) -> Result<Vec<u8>> {
    let count = |i: usize| -> usize {
        args.get(i)
            .cloned()
            .flatten()
            .and_then(|b| <[u8; 4]>::try_from(b.as_slice()).ok())
            .map_or(0, |b| i32::from_be_bytes(b).max(0) as usize)
    };
    let (begin, end) = (count(1), count(2));
    let padding = match args.get(3).cloned().flatten() {
        None => '*',
        Some(p) => {
            let p = String::from_utf8_lossy(&p).into_owned();
            let mut chars = p.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => c,
                _ => {
                    return Err(QueryError::invalid(format!(
                        "The padding argument for function system.{} should be single-character, but '{p}' has {} characters.",
                        f.name,
                        p.chars().count()
                    )))
                }
            }
        }
    };
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len();
    let masked: String = chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let outer = i < begin || i + end >= len;
            let mask = if f.kind == Kind::MaskInner {
                !outer
            } else {
                outer
            };
            if mask {
                padding
            } else {
                c
            }
        })
        .collect();
    Ok(masked.into_bytes())
}

fn hash(algorithm: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    Ok(match algorithm.to_ascii_uppercase().as_str() {
        "MD5" => Md5::digest(bytes).to_vec(),
        "SHA-1" | "SHA1" | "SHA" => Sha1::digest(bytes).to_vec(),
        "SHA-256" => Sha256::digest(bytes).to_vec(),
        "SHA-384" => Sha384::digest(bytes).to_vec(),
        "SHA-512" => Sha512::digest(bytes).to_vec(),
        _ => {
            return Err(QueryError::invalid(format!(
                "Hash algorithm not found: {algorithm}"
            )))
        }
    })
}

/// The value `mask_default` returns for each type: zero, empty, the epoch,
/// `****` for strings, and the default of every field for tuples and UDTs.
fn masked_default(ty: &CqlType) -> Result<Vec<u8>> {
    use NativeType as N;
    Ok(match ty.unfrozen() {
        CqlType::Native(n) => match n {
            N::Ascii | N::Text => b"****".to_vec(),
            N::Boolean | N::Tinyint | N::Varint => vec![0],
            N::Smallint => vec![0; 2],
            N::Int | N::Float | N::Inet => vec![0; 4],
            N::Bigint | N::Counter | N::Double | N::Timestamp | N::Time => vec![0; 8],
            N::Decimal => vec![0, 0, 0, 0, 0],
            N::Blob => Vec::new(),
            N::Uuid => vec![0; 16],
            // The smallest time UUID Cassandra makes (`UUIDGen.minTimeUUID(0)`).
            N::Timeuuid => vec![
                0x13, 0x81, 0x40, 0x00, 0x1d, 0xd2, 0x11, 0xb2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                0x80, 0x80,
            ],
            N::Date => (1u32 << 31).to_be_bytes().to_vec(),
            N::Duration => vec![0; 3],
        },
        CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) => vec![0; 4],
        CqlType::Tuple(fields) => fields_default(fields.iter())?,
        CqlType::Udt(udt) => fields_default(udt.fields.iter().map(|(_, t)| t))?,
        other => {
            return Err(QueryError::invalid(format!(
                "Function system.mask_default does not support values of type {other}"
            )))
        }
    })
}

fn fields_default<'a>(fields: impl Iterator<Item = &'a CqlType>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for field in fields {
        let value = masked_default(field)?;
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(&value);
    }
    Ok(out)
}
