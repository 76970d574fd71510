//! Fixed-length arrays that refuse extra elements.
//!
//! serde fills a `[T; N]` from the first `N` elements of a TOML array and ignores the rest, so
//! `between = [0, 3, 1]` would quietly mean `[0, 3]`. These read the whole array and name its
//! length when it is wrong.

use serde::de::{Deserialize, Deserializer, Error};

struct Exact<T, const N: usize>([T; N]);

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Exact<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        let len = v.len();
        v.try_into().map(Exact).map_err(|_| D::Error::custom(format_args!("expected exactly {N} elements, found {len}")))
    }
}

/// `#[serde(deserialize_with = "exact::array")]` for a `[T; N]` field.
pub fn array<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(d: D) -> Result<[T; N], D::Error> {
    Exact::deserialize(d).map(|e| e.0)
}

/// `#[serde(default, deserialize_with = "exact::option_array")]` for an `Option<[T; N]>` field.
pub fn option_array<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(d: D) -> Result<Option<[T; N]>, D::Error> {
    Exact::deserialize(d).map(|e| Some(e.0))
}

/// `#[serde(deserialize_with = "exact::arrays")]` for a `Vec<[T; N]>` field.
pub fn arrays<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(d: D) -> Result<Vec<[T; N]>, D::Error> {
    Ok(Vec::<Exact<T, N>>::deserialize(d)?.into_iter().map(|e| e.0).collect())
}
