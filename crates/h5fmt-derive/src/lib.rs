//! `#[derive(H5Compound)]` for [h5fmt](../h5fmt/index.html): a Rust struct
//! as an HDF5 compound type, for writing (`h5fmt::write::H5Type`) and for
//! reading (`h5fmt::data::record::H5Record`).
//!
//! Use it through h5fmt's `derive` feature (`h5fmt::H5Compound`); the
//! generated code names `::h5fmt::...` paths only (no `std`), so it works in
//! `no_std` crates too.
//!
//! The input is parsed by hand from the `proc_macro` token stream (this crate
//! has no dependencies): a non-generic struct with named fields, each
//! `[attributes] [visibility] name: Type`. Field types are passed through
//! untouched, so a type error points at the field's type.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Derive the HDF5 compound type of a struct with named fields.
///
/// Generates:
/// - `impl h5fmt::write::H5Type`: the datatype is a compound whose members are
///   the fields in declaration order, packed (each member's offset is the sum
///   of the sizes before it, as numpy lays out a structured dtype built from a
///   list and as h5py writes it); each member's datatype is the field type's
///   (`h5fmt::write::H5Member`: every `H5Type` — numbers, `bool`, other
///   derived structs — and arrays `[T; N]` of them, as HDF5 array types). The
///   struct must be `Copy` (as every `H5Type`); `#[h5(read_only)]` on the
///   struct leaves this impl out (for structs with `String` fields).
/// - `impl h5fmt::data::record::H5Record`: one value from one element of the
///   file's datatype, members matched by name (the file's member order,
///   offsets, byte orders and extra members do not matter), numbers converted
///   with range checks, nested structs recursively, `[T; N]` from array
///   members of `N` elements, `String` from fixed- or variable-length strings.
///
/// Field attribute `#[h5(name = "member name")]` names the member (default:
/// the field's name).
///
/// ```ignore
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct Point {
///     x: f64,
///     #[h5(name = "y coordinate")]
///     y: f32,
///     id: [u16; 3],
/// }
/// ```
///
/// Enums, unions, tuple and unit structs, and generic structs are refused with
/// a compile error.
#[proc_macro_derive(H5Compound, attributes(h5))]
pub fn derive_h5_compound(input: TokenStream) -> TokenStream {
    match parse(input) {
        Ok(s) => generate(&s),
        Err(e) => e.into_compile_error(),
    }
}

/// A parse error: message and where it points.
struct ParseError {
    msg: String,
    span: Span,
}

impl ParseError {
    fn new(msg: impl Into<String>, span: Span) -> Self {
        ParseError {
            msg: msg.into(),
            span,
        }
    }

    /// `::core::compile_error!("...");` with every token at the error's span.
    fn into_compile_error(self) -> TokenStream {
        let mut lit = Literal::string(&format!("H5Compound: {}", self.msg));
        lit.set_span(self.span);
        let mut out = substitute(
            "::core::compile_error!".parse().unwrap_or_default(),
            &[],
            self.span,
        );
        let mut g = Group::new(Delimiter::Parenthesis, TokenTree::Literal(lit).into());
        g.set_span(self.span);
        out.extend([TokenTree::Group(g)]);
        let mut semi = Punct::new(';', Spacing::Alone);
        semi.set_span(self.span);
        out.extend([TokenTree::Punct(semi)]);
        out
    }
}

/// One field of the struct.
struct Field {
    /// The field's identifier as written (`r#type` stays raw).
    ident: String,
    /// The compound member name.
    member: String,
    /// The field type, as written.
    ty: TokenStream,
    /// Where the field starts, for errors.
    span: Span,
}

/// The parsed derive input.
struct Input {
    name: Ident,
    read_only: bool,
    fields: Vec<Field>,
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

fn is_ident(t: Option<&TokenTree>, s: &str) -> bool {
    matches!(t, Some(TokenTree::Ident(i)) if i.to_string() == s)
}

fn span_of(t: Option<&TokenTree>) -> Span {
    t.map_or_else(Span::call_site, TokenTree::span)
}

/// One `key` or `key = literal` item of an `#[h5(...)]` attribute.
struct AttrArg {
    key: String,
    value: Option<Literal>,
    span: Span,
}

/// Outer attributes starting at `toks[*i]`: the arguments of every
/// `#[h5(...)]` among them (other attributes are skipped).
fn attributes(toks: &[TokenTree], i: &mut usize) -> Result<Vec<AttrArg>, ParseError> {
    let mut args = Vec::new();
    while is_punct(toks.get(*i), '#') {
        let g = match toks.get(*i + 1) {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => g,
            other => {
                return Err(ParseError::new(
                    "expected `[...]` after `#`",
                    span_of(other),
                ))
            }
        };
        *i += 2;
        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
        if !is_ident(inner.first(), "h5") {
            continue;
        }
        let list = match (inner.get(1), inner.len()) {
            (Some(TokenTree::Group(l)), 2) if l.delimiter() == Delimiter::Parenthesis => l,
            _ => {
                return Err(ParseError::new(
                    "expected `#[h5(name = \"...\")]` or `#[h5(read_only)]`",
                    g.span(),
                ))
            }
        };
        args.extend(attr_args(list.stream())?);
    }
    Ok(args)
}

/// The comma-separated `key` / `key = literal` items of an attribute list.
fn attr_args(ts: TokenStream) -> Result<Vec<AttrArg>, ParseError> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::new();
    for item in toks.split(|t| is_punct(Some(t), ',')) {
        match item {
            [] => {}
            [TokenTree::Ident(k)] => out.push(AttrArg {
                key: k.to_string(),
                value: None,
                span: k.span(),
            }),
            [TokenTree::Ident(k), TokenTree::Punct(eq), TokenTree::Literal(v)]
                if eq.as_char() == '=' =>
            {
                out.push(AttrArg {
                    key: k.to_string(),
                    value: Some(v.clone()),
                    span: k.span(),
                });
            }
            [first, ..] => {
                return Err(ParseError::new(
                    "expected `key` or `key = \"value\"` in `#[h5(...)]`",
                    first.span(),
                ))
            }
        }
    }
    Ok(out)
}

/// The value of a (raw or ordinary) string literal, with escapes resolved.
fn string_value(lit: &Literal) -> Option<String> {
    let s = lit.to_string();
    if let Some(raw) = s.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let body = raw.get(hashes..raw.len().checked_sub(hashes)?)?;
        return Some(body.strip_prefix('"')?.strip_suffix('"')?.to_string());
    }
    let body = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            '0' => out.push('\0'),
            '\\' => out.push('\\'),
            '"' => out.push('"'),
            '\'' => out.push('\''),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
            }
            'u' => {
                let rest: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let code = u32::from_str_radix(rest.strip_prefix('{')?, 16).ok()?;
                out.push(char::from_u32(code)?);
            }
            '\n' => {
                // A line continuation: the following whitespace is skipped.
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Skip a visibility (`pub`, `pub(crate)`, `pub(in path)`).
fn visibility(toks: &[TokenTree], i: &mut usize) {
    if is_ident(toks.get(*i), "pub") {
        *i += 1;
        if let Some(TokenTree::Group(g)) = toks.get(*i) {
            if g.delimiter() == Delimiter::Parenthesis {
                *i += 1;
            }
        }
    }
}

fn parse(input: TokenStream) -> Result<Input, ParseError> {
    let toks: Vec<TokenTree> = input.into_iter().collect();
    let mut i = 0;
    let mut read_only = false;
    for a in attributes(&toks, &mut i)? {
        match (a.key.as_str(), &a.value) {
            ("read_only", None) => read_only = true,
            _ => {
                return Err(ParseError::new(
                    format!(
                        "unknown struct attribute `{}` (the struct takes `#[h5(read_only)]`)",
                        a.key
                    ),
                    a.span,
                ))
            }
        }
    }
    visibility(&toks, &mut i);
    match toks.get(i) {
        Some(TokenTree::Ident(k)) if k.to_string() == "struct" => {}
        Some(TokenTree::Ident(k)) if k.to_string() == "enum" => {
            return Err(ParseError::new(
                "enums are not supported (only structs with named fields are compound types)",
                k.span(),
            ))
        }
        Some(TokenTree::Ident(k)) if k.to_string() == "union" => {
            return Err(ParseError::new(
                "unions are not supported (only structs with named fields are compound types)",
                k.span(),
            ))
        }
        other => return Err(ParseError::new("expected a struct", span_of(other))),
    }
    let name = match toks.get(i + 1) {
        Some(TokenTree::Ident(n)) => n.clone(),
        other => {
            return Err(ParseError::new(
                "expected the struct's name",
                span_of(other),
            ))
        }
    };
    let body = match toks.get(i + 2) {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g,
        Some(TokenTree::Punct(p)) if p.as_char() == '<' => {
            return Err(ParseError::new(
                "generic structs (type, lifetime or const parameters) are not supported",
                p.span(),
            ))
        }
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
            return Err(ParseError::new(
                "tuple structs are not supported: the fields need names (the member names)",
                g.span(),
            ))
        }
        Some(TokenTree::Ident(w)) if w.to_string() == "where" => {
            return Err(ParseError::new(
                "`where` clauses are not supported",
                w.span(),
            ))
        }
        other => {
            return Err(ParseError::new(
                "unit structs are not supported: a compound type needs at least one member",
                span_of(other),
            ))
        }
    };
    let fields = fields(body)?;
    if fields.is_empty() {
        return Err(ParseError::new(
            "a compound type needs at least one member; the struct has no fields",
            body.span(),
        ));
    }
    for (k, f) in fields.iter().enumerate() {
        if fields.iter().take(k).any(|g| g.member == f.member) {
            return Err(ParseError::new(
                format!("two fields are named member {:?}", f.member),
                f.span,
            ));
        }
    }
    Ok(Input {
        name,
        read_only,
        fields,
    })
}

/// Split a field list at its top-level commas (commas inside `<...>` of a
/// generic type such as `Foo<A, B>` do not end a field).
fn split_fields(toks: &[TokenTree]) -> Vec<&[TokenTree]> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut prev_joint_dash = false;
    for (k, t) in toks.iter().enumerate() {
        let mut joint_dash = false;
        if let TokenTree::Punct(p) = t {
            match p.as_char() {
                '<' => depth += 1,
                // `->` in a function pointer type is not a closing bracket.
                '>' if !prev_joint_dash => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    out.push(&toks[start..k]);
                    start = k + 1;
                }
                '-' => joint_dash = p.spacing() == Spacing::Joint,
                _ => {}
            }
        }
        prev_joint_dash = joint_dash;
    }
    out.push(&toks[start..]);
    out
}

fn fields(body: &Group) -> Result<Vec<Field>, ParseError> {
    let toks: Vec<TokenTree> = body.stream().into_iter().collect();
    let mut out = Vec::new();
    for part in split_fields(&toks) {
        if part.is_empty() {
            continue;
        }
        let mut i = 0;
        let args = attributes(part, &mut i)?;
        visibility(part, &mut i);
        let ident = match part.get(i) {
            Some(TokenTree::Ident(id)) => id.clone(),
            other => return Err(ParseError::new("expected a field name", span_of(other))),
        };
        if !is_punct(part.get(i + 1), ':') {
            return Err(ParseError::new(
                "expected `:` after the field name",
                span_of(part.get(i + 1)),
            ));
        }
        let ty: TokenStream = part.get(i + 2..).unwrap_or(&[]).iter().cloned().collect();
        if ty.is_empty() {
            return Err(ParseError::new("expected the field's type", ident.span()));
        }
        let ident_s = ident.to_string();
        let mut member = ident_s.strip_prefix("r#").unwrap_or(&ident_s).to_string();
        for a in args {
            match (a.key.as_str(), &a.value) {
                ("name", Some(v)) => {
                    member = string_value(v).ok_or_else(|| {
                        ParseError::new("`name` takes a string literal", v.span())
                    })?;
                    if member.is_empty() || member.contains('\0') {
                        return Err(ParseError::new(
                            "a member name must be non-empty and hold no NUL",
                            v.span(),
                        ));
                    }
                }
                _ => {
                    return Err(ParseError::new(
                        format!(
                            "unknown field attribute `{}` (fields take `#[h5(name = \"...\")]`)",
                            a.key
                        ),
                        a.span,
                    ))
                }
            }
        }
        out.push(Field {
            ident: ident_s,
            member,
            ty,
            span: ident.span(),
        });
    }
    Ok(out)
}

/// The placeholder identifier standing for field `k`'s type in the
/// generated source text.
fn ty_marker(k: usize) -> String {
    format!("__h5fmt_field_type_{k}")
}

fn generate(s: &Input) -> TokenStream {
    let name = s.name.to_string();
    let mut src = String::new();
    if !s.read_only {
        let mut members = String::new();
        let mut puts = String::new();
        for (k, f) in s.fields.iter().enumerate() {
            let t = ty_marker(k);
            members.push_str(&format!(
                "({:?}, <{t} as ::h5fmt::write::H5Member>::member_dtype()),",
                f.member
            ));
            puts.push_str(&format!(
                "<{t} as ::h5fmt::write::H5Member>::put_member(&self.{}, out);",
                f.ident
            ));
        }
        src.push_str(&format!(
            "#[automatically_derived]
            impl ::h5fmt::write::H5Type for {name} {{
                fn dtype() -> ::h5fmt::Datatype {{
                    ::h5fmt::write::compound_dtype(&[{members}])
                }}
                fn put(&self, out: &mut ::h5fmt::__private::Vec<u8>) {{
                    {puts}
                }}
            }}"
        ));
    }
    let mut plan_ty = String::new();
    let mut plans = String::new();
    let mut reads = String::new();
    for (k, f) in s.fields.iter().enumerate() {
        let t = ty_marker(k);
        plan_ty.push_str(&format!(
            "::h5fmt::data::record::MemberPlan< <{t} as ::h5fmt::data::record::H5Record>::Plan >,"
        ));
        plans.push_str(&format!(
            "::h5fmt::data::record::MemberPlan::new::<{t}>(members, {:?})?,",
            f.member
        ));
        reads.push_str(&format!("{}: plan.{k}.read::<{t}>(bytes, cx)?,", f.ident));
    }
    src.push_str(&format!(
        "#[automatically_derived]
        impl ::h5fmt::data::record::H5Record for {name} {{
            type Plan = ({plan_ty});
            fn plan(dtype: &::h5fmt::Datatype) -> ::h5fmt::Result<Self::Plan> {{
                let members = ::h5fmt::data::record::compound_members(dtype, {name:?})?;
                ::core::result::Result::Ok(({plans}))
            }}
            fn read(
                plan: &Self::Plan,
                bytes: &[u8],
                cx: &::h5fmt::data::record::RecordCx<'_>,
            ) -> ::h5fmt::Result<Self> {{
                ::core::result::Result::Ok({name} {{ {reads} }})
            }}
        }}"
    ));
    let ts: TokenStream = match src.parse() {
        Ok(ts) => ts,
        Err(e) => {
            return ParseError::new(
                format!("internal error: generated code does not parse: {e}"),
                s.name.span(),
            )
            .into_compile_error()
        }
    };
    let types: Vec<&TokenStream> = s.fields.iter().map(|f| &f.ty).collect();
    substitute(ts, &types, s.name.span())
}

/// Replace each placeholder identifier by its field type (an invisible
/// group, so the type stays one unit and keeps its spans); give the other
/// tokens `span` (with no types: every token gets `span`).
fn substitute(ts: TokenStream, types: &[&TokenStream], span: Span) -> TokenStream {
    ts.into_iter()
        .map(|t| match t {
            TokenTree::Ident(id) => {
                let s = id.to_string();
                let k = s
                    .strip_prefix("__h5fmt_field_type_")
                    .and_then(|n| n.parse::<usize>().ok());
                match k.and_then(|k| types.get(k)) {
                    Some(ty) => TokenTree::Group(Group::new(Delimiter::None, (*ty).clone())),
                    None => {
                        let mut id = id;
                        id.set_span(span);
                        TokenTree::Ident(id)
                    }
                }
            }
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), substitute(g.stream(), types, span));
                n.set_span(span);
                TokenTree::Group(n)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
