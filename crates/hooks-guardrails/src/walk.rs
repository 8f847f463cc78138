//! Iterative walks over every string of a JSON value: any depth, no recursion, so a value
//! nested 100 000 levels deep cannot overflow the stack.

use serde_json::Value;

/// Calls `f` with every string value (not keys) of `v`, writable, depth first, together with
/// the key of the object entry it sits under (the nearest key for strings inside arrays), so a
/// value like `{"ssn": "123456789"}` is judged in context and rewritten in the same visit:
/// judging and writing never pair two walks by visiting order.
pub(crate) fn keyed_strings_mut(v: &mut Value, mut f: impl FnMut(Option<&str>, &mut String)) {
    let mut stack: Vec<(Option<&str>, &mut Value)> = vec![(None, v)];
    while let Some((key, v)) = stack.pop() {
        match v {
            Value::String(s) => f(key, s),
            Value::Array(items) => stack.extend(items.iter_mut().rev().map(|i| (key, i))),
            Value::Object(map) => {
                stack.extend(map.iter_mut().rev().map(|(k, i)| (Some(k.as_str()), i)))
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_every_string_in_order_with_its_key_at_any_depth() {
        let mut v = json!({"a": ["x", {"b": "y"}], "c": 1, "d": "z"});
        let mut seen = Vec::new();
        keyed_strings_mut(&mut v, |k, s| {
            seen.push((k.map(str::to_owned), s.clone()));
            s.make_ascii_uppercase();
        });
        assert_eq!(
            seen,
            [
                (Some("a".to_owned()), "x".to_owned()),
                (Some("b".to_owned()), "y".to_owned()),
                (Some("d".to_owned()), "z".to_owned())
            ]
        );
        assert_eq!(v, json!({"a": ["X", {"b": "Y"}], "c": 1, "d": "Z"}));

        let mut deep = Value::String("leaf".into());
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut n = 0;
        keyed_strings_mut(&mut deep, |k, s| {
            assert_eq!(k, None);
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
