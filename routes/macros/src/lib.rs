//! `#[route(<operation id>, <the rest of utoipa::path's arguments>)]` on a handler: its
//! OpenAPI operation, whose method, path, operation id and tag (its function's name) come
//! from the operation's row of the route table (`netops_routes::ROUTES`), so that a route
//! states them once.
//!
//! ```text
//! #[route(list_machines, params(MachinesQuery), responses((status = 200, ...)))]
//! ```
//!
//! is
//!
//! ```text
//! #[utoipa::path(get, path = "/machines", operation_id = "list_machines", tag = "fleet",
//!     params(MachinesQuery), responses((status = 200, ...)))]
//! ```
//!
//! An operation id that is not in the table is a compile error naming it. The crate using
//! it needs `utoipa` among its dependencies, as for `#[utoipa::path]`.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

#[proc_macro_attribute]
pub fn route(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr) {
        Ok(path) => {
            let mut out = path;
            out.extend(item);
            out
        }
        Err((span, message)) => {
            let mut out = compile_error(span, &message);
            out.extend(item);
            out
        }
    }
}

/// The `#[utoipa::path(...)]` attribute for `attr`, or where and why it cannot be written.
fn expand(attr: TokenStream) -> Result<TokenStream, (Span, String)> {
    let mut tokens = attr.into_iter();
    let op = match tokens.next() {
        Some(TokenTree::Ident(op)) => op,
        Some(other) => {
            return Err((
                other.span(),
                "#[route] takes an operation id of the route table first: #[route(list_machines, ...)]"
                    .to_owned(),
            ));
        }
        None => {
            return Err((
                Span::call_site(),
                "#[route] takes an operation id of the route table: #[route(list_machines, ...)]"
                    .to_owned(),
            ));
        }
    };
    let name = op.to_string();
    let Some(route) = netops_routes::by_op(&name) else {
        return Err((
            op.span(),
            format!(
                "no route `{name}` in the route table (routes/src/lib.rs): add its row, or use \
                 the operation id of an existing one"
            ),
        ));
    };
    let rest: Vec<TokenTree> = match tokens.next() {
        None => Vec::new(),
        Some(TokenTree::Punct(p)) if p.as_char() == ',' => tokens.collect(),
        Some(other) => {
            return Err((
                other.span(),
                format!("expected `,` after `{name}`: #[route({name}, responses(...), ...)]"),
            ));
        }
    };
    let span = op.span();
    let mut args: Vec<TokenTree> =
        vec![Ident::new(&route.method.as_str().to_ascii_lowercase(), span).into()];
    for (key, value) in [
        ("path", route.path),
        ("operation_id", route.op),
        ("tag", route.function.name()),
    ] {
        args.push(punct(',', span));
        args.push(Ident::new(key, span).into());
        args.push(punct('=', span));
        let mut literal = Literal::string(value);
        literal.set_span(span);
        args.push(literal.into());
    }
    if !rest.is_empty() {
        args.push(punct(',', span));
        args.extend(rest);
    }
    // #[::utoipa::path(args)]
    let path: Vec<TokenTree> = vec![
        joint(':', span),
        punct(':', span),
        Ident::new("utoipa", span).into(),
        joint(':', span),
        punct(':', span),
        Ident::new("path", span).into(),
        group(Delimiter::Parenthesis, args.into_iter().collect(), span),
    ];
    Ok([
        punct('#', span),
        group(Delimiter::Bracket, path.into_iter().collect(), span),
    ]
    .into_iter()
    .collect())
}

/// `compile_error!("message")` at `span`.
fn compile_error(span: Span, message: &str) -> TokenStream {
    let mut literal = Literal::string(message);
    literal.set_span(span);
    [
        Ident::new("compile_error", span).into(),
        punct('!', span),
        group(
            Delimiter::Parenthesis,
            TokenStream::from(TokenTree::from(literal)),
            span,
        ),
        punct(';', span),
    ]
    .into_iter()
    .collect()
}

fn punct(c: char, span: Span) -> TokenTree {
    let mut p = Punct::new(c, Spacing::Alone);
    p.set_span(span);
    p.into()
}

fn joint(c: char, span: Span) -> TokenTree {
    let mut p = Punct::new(c, Spacing::Joint);
    p.set_span(span);
    p.into()
}

fn group(delimiter: Delimiter, stream: TokenStream, span: Span) -> TokenTree {
    let mut g = Group::new(delimiter, stream);
    g.set_span(span);
    g.into()
}
