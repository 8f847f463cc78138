//! Iterative walks over every string of a JSON value: any depth, no recursion, so a value
//! nested 100 000 levels deep cannot overflow the stack.

use serde_json::Value;

/// Calls `f` with every string value (not keys) of `v`, depth first.
#[cfg(test)]
pub(crate) fn strings(v: &Value, mut f: impl FnMut(&str)) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => f(s),
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => stack.extend(map.values().rev()),
            _ => {}
        }
    }
}

/// Like [`strings`], with the key of the object entry each string sits under (the nearest
/// key for strings inside arrays), so a value like `{"ssn": "123456789"}` is judged in
/// context.
pub(crate) fn keyed_strings<'v>(v: &'v Value, mut f: impl FnMut(Option<&'v str>, &'v str)) {
    let mut stack: Vec<(Option<&str>, &Value)> = vec![(None, v)];
    while let Some((key, v)) = stack.pop() {
        match v {
            Value::String(s) => f(key, s),
            Value::Array(items) => stack.extend(items.iter().rev().map(|i| (key, i))),
            Value::Object(map) => {
                stack.extend(map.iter().rev().map(|(k, i)| (Some(k.as_str()), i)))
            }
            _ => {}
        }
    }
}

/// Calls `f` with every string value (not keys) of `v`, writable, in the same order as
/// [`strings`].
pub(crate) fn strings_mut(v: &mut Value, mut f: impl FnMut(&mut String)) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => f(s),
            Value::Array(items) => stack.extend(items.iter_mut().rev()),
            Value::Object(map) => stack.extend(map.values_mut().rev()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_every_string_in_order_at_any_depth() {
        let mut v = json!({"a": ["x", {"b": "y"}], "c": 1, "d": "z"});
        let mut seen = Vec::new();
        strings(&v, |s| seen.push(s.to_owned()));
        assert_eq!(seen, ["x", "y", "z"]);
        strings_mut(&mut v, |s| s.make_ascii_uppercase());
        assert_eq!(v, json!({"a": ["X", {"b": "Y"}], "c": 1, "d": "Z"}));

        let mut deep = Value::String("leaf".into());
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut n = 0;
        strings_mut(&mut deep, |s| {
            n += 1;
            s.push('!');
        });
        assert_eq!(n, 1);
        // Take it apart iteratively: the default drop of such a value recurses.
        let mut cur = deep;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
        assert_eq!(cur, json!("leaf!"));
    }
}
