//! Elements into Rust values chosen by the caller: [`H5Record`], implemented
//! for numbers, `bool`, `String`, [`Value`], fixed arrays `[T; N]`, and by
//! `#[derive(H5Compound)]` (feature `derive`) for structs, whose fields are
//! matched to compound members by name.
//!
//! A read first builds a plan from the file's datatype ([`H5Record::plan`]:
//! member lookup, offsets and conversions decided once, so a missing member
//! or an impossible conversion fails before any element is read), then
//! applies it to each element's bytes ([`H5Record::read`]). Numbers convert
//! as [`crate::data::convert::convert_slice`] converts them: any byte
//! order; integers (and enums, bitfields) to any integer type that holds the
//! value, else `Unrepresentable`; integers and IEEE floats to floats; a float
//! to an integer type is refused.

use crate::data::convert::{f16_to_f64, int_value, load_u128, H5Native};
use crate::data::decode::{decode_element, decode_element_in, Budget};
use crate::data::{HeapResolver, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::format::datatype::{ByteOrder, CompoundMember, Datatype};
use crate::Ctx;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// What reading an element may need besides its bytes: the file's sizes and
/// limits, and its global heap (variable-length strings).
#[derive(Clone, Copy)]
pub struct RecordCx<'a> {
    /// Sizes and limits of the file.
    pub ctx: Ctx,
    /// The file's global heap.
    pub heap: &'a dyn HeapResolver,
    /// What the strings and values read so far may still take (one read's
    /// `Limits::max_read_bytes`); `None`: each element on its own.
    budget: Option<&'a Budget<'a>>,
}

impl<'a> RecordCx<'a> {
    /// A context for reading elements of a file with these sizes and limits
    /// and this heap.
    pub fn new(ctx: Ctx, heap: &'a dyn HeapResolver) -> Self {
        RecordCx {
            ctx,
            heap,
            budget: None,
        }
    }

    /// As [`RecordCx::new`], charging `budget`.
    pub(crate) fn with_budget(
        ctx: Ctx,
        heap: &'a dyn HeapResolver,
        budget: &'a Budget<'a>,
    ) -> Self {
        RecordCx {
            ctx,
            heap,
            budget: Some(budget),
        }
    }

    /// One element decoded into a value, charged to this read's budget.
    fn value(&self, dtype: &Datatype, bytes: &[u8]) -> Result<Value> {
        match self.budget {
            Some(b) => decode_element_in(dtype, bytes, self.ctx, self.heap, b),
            None => decode_element(dtype, bytes, self.ctx, self.heap),
        }
    }
}

/// A Rust type that one element of a file datatype can be read into.
///
/// Implemented for the primitive numbers, `bool`, `String`, [`Value`],
/// arrays `[T; N]` of implementors, and by `#[derive(H5Compound)]`.
pub trait H5Record: Sized {
    /// What [`H5Record::plan`] decides once for a datatype.
    type Plan;

    /// Check that elements of `dtype` (the file's datatype) can be read into
    /// `Self` and decide how.
    ///
    /// # Errors
    /// `Usage` for a compound member the type needs and the file lacks;
    /// `Unrepresentable` for a datatype that does not convert to `Self`.
    fn plan(dtype: &Datatype) -> Result<Self::Plan>;

    /// One value from the bytes of one element (exactly the datatype's size).
    ///
    /// # Errors
    /// `Unrepresentable` for a value that does not fit (an integer out of
    /// range); heap errors for variable-length strings.
    fn read(plan: &Self::Plan, bytes: &[u8], cx: &RecordCx<'_>) -> Result<Self>;
}

/// The members of a compound datatype; `what` (the Rust type's name) is for
/// the error.
///
/// # Errors
/// `Unrepresentable` when `dtype` is not compound.
pub fn compound_members<'a>(dtype: &'a Datatype, what: &str) -> Result<&'a [CompoundMember]> {
    match dtype {
        Datatype::Compound { members, .. } => Ok(members),
        other => Err(Error::unrepresentable(format!(
            "{what} needs a compound datatype, the file has {}",
            describe(other)
        ))),
    }
}

/// Short name of a datatype's class for messages.
fn describe(dtype: &Datatype) -> String {
    match dtype {
        Datatype::Integer { size, signed, .. } => {
            format!(
                "a {}-byte {} integer",
                size,
                if *signed { "signed" } else { "unsigned" }
            )
        }
        Datatype::Float { size, .. } => format!("a {size}-byte float"),
        Datatype::Time { .. } => String::from("a time type"),
        Datatype::String { size, .. } => format!("a {size}-byte string"),
        Datatype::Bitfield { size, .. } => format!("a {size}-byte bitfield"),
        Datatype::Opaque { size, .. } => format!("a {size}-byte opaque type"),
        Datatype::Compound { members, .. } => {
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            format!("a compound of {names:?}")
        }
        Datatype::Reference { .. } => String::from("a reference"),
        Datatype::Enum { .. } => String::from("an enum"),
        Datatype::VarLenSequence { .. } => String::from("a variable-length sequence"),
        Datatype::VarLenString { .. } => String::from("a variable-length string"),
        Datatype::Array { dims, .. } => format!("an array of dims {dims:?}"),
        Datatype::Complex { .. } => String::from("a complex number"),
    }
}

/// The plan of one member of a compound: where it is and how to read it.
#[derive(Debug, Clone)]
pub struct MemberPlan<P> {
    name: &'static str,
    offset: usize,
    size: usize,
    plan: P,
}

impl<P> MemberPlan<P> {
    /// Find member `name` among `members` and plan reading it into `T`.
    ///
    /// # Errors
    /// `Usage` when no member has that name; `T`'s plan errors (prefixed
    /// with the member name).
    pub fn new<T: H5Record<Plan = P>>(
        members: &[CompoundMember],
        name: &'static str,
    ) -> Result<Self> {
        let m = members.iter().find(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            Error::usage(format!(
                "compound member {name:?} not found (the file's members: {names:?})"
            ))
        })?;
        let bad = || Error::unrepresentable(format!("member {name:?}: offset or size above usize"));
        let plan = T::plan(&m.dtype).map_err(|e| e.context(&format!("member {name:?}")))?;
        Ok(MemberPlan {
            name,
            offset: usize::try_from(m.offset).map_err(|_| bad())?,
            size: usize::try_from(m.dtype.size()).map_err(|_| bad())?,
            plan,
        })
    }

    /// Read the member out of the bytes of a compound element.
    ///
    /// # Errors
    /// `Corrupt` when the member lies outside the element; `T`'s read
    /// errors (prefixed with the member name).
    pub fn read<T: H5Record<Plan = P>>(&self, bytes: &[u8], cx: &RecordCx<'_>) -> Result<T> {
        let part = self
            .offset
            .checked_add(self.size)
            .and_then(|end| bytes.get(self.offset..end))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Corrupt,
                    format!("compound member {:?} outside its element", self.name),
                )
            })?;
        T::read(&self.plan, part, cx).map_err(|e| e.context(&format!("member {:?}", self.name)))
    }
}

/// How to read a number: integer bits or an IEEE float of some byte order.
#[derive(Debug, Clone, Copy)]
pub struct NumPlan(Num);

#[derive(Debug, Clone, Copy)]
enum Num {
    Int {
        order: ByteOrder,
        signed: bool,
        bit_offset: u16,
        precision: u16,
    },
    F16(ByteOrder),
    F32(ByteOrder),
    F64(ByteOrder),
}

/// A number read from an element, before conversion.
enum Raw {
    Int(i128),
    Float(f64),
}

impl NumPlan {
    /// Plan reading numbers of `dtype` (integer, enum, bitfield, IEEE float)
    /// as `T`.
    ///
    /// # Errors
    /// `Unrepresentable` for other datatypes and for a float read as an
    /// integer type.
    pub fn new<T: H5Native>(dtype: &Datatype) -> Result<Self> {
        let storage = match dtype {
            Datatype::Enum { base, .. } => base.as_ref(),
            other => other,
        };
        let bad =
            || Error::unrepresentable(format!("cannot convert {} to {}", describe(dtype), T::NAME));
        let num = match storage {
            Datatype::Integer {
                order,
                signed,
                bit_offset,
                precision,
                size,
            } if *size > 0 => Num::Int {
                order: *order,
                signed: *signed,
                bit_offset: *bit_offset,
                precision: *precision,
            },
            Datatype::Bitfield {
                order,
                bit_offset,
                precision,
                size,
            } if *size > 0 => Num::Int {
                order: *order,
                signed: false,
                bit_offset: *bit_offset,
                precision: *precision,
            },
            Datatype::Float { size, order, .. } if storage.is_ieee_standard() => {
                // Integer types take no floats (`from_f64` is `None` for them).
                if T::from_f64(0.0).is_none() {
                    return Err(bad());
                }
                match size {
                    2 => Num::F16(*order),
                    4 => Num::F32(*order),
                    8 => Num::F64(*order),
                    _ => return Err(bad()),
                }
            }
            _ => return Err(bad()),
        };
        Ok(NumPlan(num))
    }

    fn raw(&self, b: &[u8]) -> Raw {
        match self.0 {
            Num::Int {
                order,
                signed,
                bit_offset,
                precision,
            } => Raw::Int(int_value(b, order, signed, bit_offset, precision)),
            #[allow(clippy::cast_possible_truncation)]
            Num::F16(o) => Raw::Float(f16_to_f64(load_u128(b, o) as u16)),
            #[allow(clippy::cast_possible_truncation)]
            Num::F32(o) => Raw::Float(f64::from(f32::from_bits(load_u128(b, o) as u32))),
            #[allow(clippy::cast_possible_truncation)]
            Num::F64(o) => Raw::Float(f64::from_bits(load_u128(b, o) as u64)),
        }
    }

    /// The number in `b` (one element) as `T`.
    ///
    /// # Errors
    /// `Unrepresentable` when the value does not fit `T`.
    pub fn get<T: H5Native>(&self, b: &[u8]) -> Result<T> {
        match self.raw(b) {
            Raw::Int(v) => T::from_i128(v).ok_or_else(|| {
                Error::unrepresentable(format!("value {v} does not fit {}", T::NAME))
            }),
            Raw::Float(v) => T::from_f64(v).ok_or_else(|| {
                Error::unrepresentable(format!("value {v} does not fit {}", T::NAME))
            }),
        }
    }
}

macro_rules! record_num {
    ($($t:ty),*) => {$(
        impl H5Record for $t {
            type Plan = NumPlan;
            fn plan(dtype: &Datatype) -> Result<NumPlan> {
                NumPlan::new::<$t>(dtype)
            }
            fn read(plan: &NumPlan, bytes: &[u8], _cx: &RecordCx<'_>) -> Result<Self> {
                plan.get::<$t>(bytes)
            }
        }
    )*};
}
record_num!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// `bool` from an integer or enum (h5py's boolean enum): zero is `false`,
/// anything else `true`.
impl H5Record for bool {
    type Plan = NumPlan;
    fn plan(dtype: &Datatype) -> Result<NumPlan> {
        NumPlan::new::<i64>(dtype).map_err(|_| {
            Error::unrepresentable(format!("cannot convert {} to bool", describe(dtype)))
        })
    }
    fn read(plan: &NumPlan, bytes: &[u8], _cx: &RecordCx<'_>) -> Result<Self> {
        Ok(match plan.raw(bytes) {
            Raw::Int(v) => v != 0,
            Raw::Float(v) => v != 0.0,
        })
    }
}

/// How to read a string: the file's string datatype.
#[derive(Debug, Clone)]
pub struct StrPlan(Datatype);

/// `String` from a fixed-length string (trailing padding removed) or a
/// variable-length one (from the global heap). Bytes that are not UTF-8
/// are replaced by U+FFFD, as [`crate::Attribute::read_string`] does.
impl H5Record for String {
    type Plan = StrPlan;
    fn plan(dtype: &Datatype) -> Result<StrPlan> {
        match dtype {
            Datatype::String { .. } | Datatype::VarLenString { .. } => Ok(StrPlan(dtype.clone())),
            other => Err(Error::unrepresentable(format!(
                "cannot convert {} to String",
                describe(other)
            ))),
        }
    }
    fn read(plan: &StrPlan, bytes: &[u8], cx: &RecordCx<'_>) -> Result<Self> {
        match cx.value(&plan.0, bytes)? {
            Value::Str(s) => Ok(s),
            Value::RawStr(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
            _ => Err(Error::unrepresentable(
                "string element decoded as a non-string",
            )),
        }
    }
}

/// [`Value`] takes an element of any datatype, decoded as
/// [`crate::Dataset::read_values`] decodes it.
impl H5Record for Value {
    type Plan = Datatype;
    fn plan(dtype: &Datatype) -> Result<Datatype> {
        Ok(dtype.clone())
    }
    fn read(plan: &Datatype, bytes: &[u8], cx: &RecordCx<'_>) -> Result<Self> {
        cx.value(plan, bytes)
    }
}

/// How to read an array member: each element's size and plan.
#[derive(Debug, Clone)]
pub struct ArrayPlan<P> {
    elem: usize,
    plan: P,
}

/// `[T; N]` from an array datatype of `N` elements in all (any rank,
/// row-major), or from one whose first dimension is `N` when `T` takes the
/// rest (`[[T; M]; N]` from dims `[N, M]`).
impl<T: H5Record, const N: usize> H5Record for [T; N] {
    type Plan = ArrayPlan<T::Plan>;
    fn plan(dtype: &Datatype) -> Result<Self::Plan> {
        let Datatype::Array { dims, base } = dtype else {
            return Err(Error::unrepresentable(format!(
                "cannot convert {} to an array of {N}",
                describe(dtype)
            )));
        };
        let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let (elem_dtype, elem_size) = if n == Some(N as u64) {
            (base.as_ref().clone(), base.size())
        } else if let (Some(&first), Some(rest)) = (dims.first(), dims.get(1..)) {
            if first != N as u64 || rest.is_empty() {
                return Err(Error::unrepresentable(format!(
                    "cannot convert an array of dims {dims:?} to an array of {N}"
                )));
            }
            let inner = Datatype::Array {
                dims: rest.to_vec(),
                base: base.clone(),
            };
            let size = inner.size();
            (inner, size)
        } else {
            return Err(Error::unrepresentable(format!(
                "cannot convert an array of dims {dims:?} to an array of {N}"
            )));
        };
        let elem = usize::try_from(elem_size)
            .map_err(|_| Error::unrepresentable("array element size above usize"))?;
        Ok(ArrayPlan {
            elem,
            plan: T::plan(&elem_dtype)?,
        })
    }
    fn read(plan: &Self::Plan, bytes: &[u8], cx: &RecordCx<'_>) -> Result<Self> {
        let mut v = Vec::with_capacity(N);
        for k in 0..N {
            let part = k
                .checked_mul(plan.elem)
                .and_then(|start| bytes.get(start..start.checked_add(plan.elem)?))
                .ok_or_else(|| {
                    Error::new(ErrorKind::Corrupt, "array element outside its member")
                })?;
            v.push(T::read(&plan.plan, part, cx).map_err(|e| e.context(&format!("[{k}]")))?);
        }
        v.try_into()
            .map_err(|_| Error::new(ErrorKind::Corrupt, "array of the wrong length"))
    }
}

/// `count` elements of `dtype` in `raw` read into `T`s.
///
/// # Errors
/// `T`'s plan errors; `Truncated` when `raw` holds fewer than `count`
/// elements; `Limit` when the result would exceed
/// `ctx.limits.max_read_bytes`; the first element's read error, prefixed
/// with its index.
pub fn read_records<T: H5Record>(
    dtype: &Datatype,
    raw: &[u8],
    count: u64,
    cx: &RecordCx<'_>,
) -> Result<Vec<T>> {
    match cx.budget {
        Some(_) => read_records_from(dtype, raw, count, cx, 0),
        None => {
            let budget = Budget::new(cx.ctx);
            let cx = RecordCx::with_budget(cx.ctx, cx.heap, &budget);
            read_records_from(dtype, raw, count, &cx, 0)
        }
    }
}

/// [`read_records`] of elements numbered from `first` in error messages,
/// charging `cx`'s budget (when it has one) for the `T`s and what they hold.
pub(crate) fn read_records_from<T: H5Record>(
    dtype: &Datatype,
    raw: &[u8],
    count: u64,
    cx: &RecordCx<'_>,
    first: u64,
) -> Result<Vec<T>> {
    let plan = T::plan(dtype)?;
    let size = usize::try_from(dtype.size())
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::unrepresentable("element size of zero or above usize"))?;
    let n = usize::try_from(count).map_err(|_| Error::limit(format!("{count} elements")))?;
    let need = n
        .checked_mul(size)
        .filter(|&need| need <= raw.len())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Truncated,
                format!(
                    "{count} elements of {size} bytes do not fit in {} bytes",
                    raw.len()
                ),
            )
        })?;
    let out_bytes = count.saturating_mul(core::mem::size_of::<T>() as u64);
    match cx.budget {
        Some(b) => b.charge(out_bytes)?,
        None => Budget::new(cx.ctx).charge(out_bytes)?,
    }
    let mut out = crate::io::try_vec(n, "records")?;
    for (i, e) in raw
        .get(..need)
        .unwrap_or(&[])
        .chunks_exact(size)
        .enumerate()
    {
        out.push(
            T::read(&plan, e, cx)
                .map_err(|e| e.context(&format!("element {}", first.saturating_add(i as u64))))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::NoHeap;
    use crate::format::datatype::{CharSet, StringPad};
    use alloc::boxed::Box;
    use alloc::vec;

    fn cx() -> RecordCx<'static> {
        let ctx = Ctx {
            sizes: crate::Sizes {
                offsets: 8,
                lengths: 8,
            },
            limits: crate::Limits::default(),
        };
        RecordCx::new(ctx, &NoHeap)
    }

    /// A hand-written `H5Record` as the derive writes it: fields `x: u8`,
    /// `s: String`.
    #[derive(Debug, PartialEq)]
    struct Rec {
        x: u8,
        s: String,
    }

    impl H5Record for Rec {
        type Plan = (MemberPlan<NumPlan>, MemberPlan<StrPlan>);
        fn plan(dtype: &Datatype) -> Result<Self::Plan> {
            let m = compound_members(dtype, "Rec")?;
            Ok((
                MemberPlan::new::<u8>(m, "x")?,
                MemberPlan::new::<String>(m, "s")?,
            ))
        }
        fn read(plan: &Self::Plan, bytes: &[u8], cx: &RecordCx<'_>) -> Result<Self> {
            Ok(Rec {
                x: plan.0.read::<u8>(bytes, cx)?,
                s: plan.1.read::<String>(bytes, cx)?,
            })
        }
    }

    /// File layout: `s` (3-byte NUL-padded string) at 0, `y` (extra) at 3,
    /// `x` (big-endian i16) at 4; 6 bytes per element.
    fn dtype() -> Datatype {
        Datatype::Compound {
            size: 6,
            members: vec![
                CompoundMember {
                    name: "s".into(),
                    offset: 0,
                    dtype: Datatype::String {
                        size: 3,
                        pad: StringPad::NullPad,
                        cset: CharSet::Ascii,
                    },
                },
                CompoundMember {
                    name: "y".into(),
                    offset: 3,
                    dtype: Datatype::int_le(1, false),
                },
                CompoundMember {
                    name: "x".into(),
                    offset: 4,
                    dtype: Datatype::Integer {
                        size: 2,
                        order: ByteOrder::Big,
                        signed: true,
                        bit_offset: 0,
                        precision: 16,
                    },
                },
            ],
        }
    }

    #[test]
    fn members_by_name_any_order_and_byte_order() {
        let raw = [
            b'a', b'b', 0, 9, 0x00, 0xff, b'x', b'y', b'z', 9, 0x00, 0x07,
        ];
        let got: Vec<Rec> = read_records(&dtype(), &raw, 2, &cx()).unwrap();
        assert_eq!(
            got,
            vec![
                Rec {
                    x: 255,
                    s: "ab".into()
                },
                Rec {
                    x: 7,
                    s: "xyz".into()
                }
            ]
        );
    }

    #[test]
    fn errors_not_panics() {
        // 0x0100 = 256 does not fit u8.
        let raw = [b'a', 0, 0, 0, 0x01, 0x00];
        let e = read_records::<Rec>(&dtype(), &raw, 1, &cx()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unrepresentable);
        assert!(e.message().contains("element 0") && e.message().contains("\"x\""));
        // -1 does not fit u8 either.
        let raw = [b'a', 0, 0, 0, 0xff, 0xff];
        assert!(read_records::<Rec>(&dtype(), &raw, 1, &cx()).is_err());
        // Fewer bytes than elements.
        let e = read_records::<Rec>(&dtype(), &raw, 2, &cx()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        // A member lying outside its element (corrupt offsets).
        let Datatype::Compound { members, .. } = dtype() else {
            unreachable!()
        };
        let bad = Datatype::Compound {
            size: 6,
            members: members
                .into_iter()
                .map(|mut m| {
                    m.offset = m.offset.saturating_add(u32::MAX - 2);
                    m
                })
                .collect(),
        };
        assert!(read_records::<Rec>(&bad, &[0; 6], 1, &cx()).is_err());
        // A missing member.
        let e = Rec::plan(&Datatype::Compound {
            size: 1,
            members: vec![CompoundMember {
                name: "x".into(),
                offset: 0,
                dtype: Datatype::int_le(1, false),
            }],
        })
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage);
        assert!(e.message().contains("\"s\""));
        // Floats do not go to integers; integers and floats go to floats.
        assert!(<i32 as H5Record>::plan(&Datatype::float_le(8)).is_err());
        let half = read_records::<f64>(&Datatype::float_le(2), &[0x00, 0x3c], 1, &cx()).unwrap();
        assert_eq!(half, vec![1.0]);
        // Arrays of the wrong length or rank.
        let arr = Datatype::Array {
            dims: vec![2, 3],
            base: Box::new(Datatype::int_le(1, false)),
        };
        assert!(<[u8; 5] as H5Record>::plan(&arr).is_err());
        assert!(<[[u8; 2]; 3] as H5Record>::plan(&arr).is_err());
        let got = read_records::<[[u8; 3]; 2]>(&arr, &[1, 2, 3, 4, 5, 6], 1, &cx()).unwrap();
        assert_eq!(got, vec![[[1, 2, 3], [4, 5, 6]]]);
        // Zero-size elements.
        let empty = Datatype::Compound {
            size: 0,
            members: vec![],
        };
        assert!(read_records::<Value>(&empty, &[], 3, &cx()).is_err());
    }
}
