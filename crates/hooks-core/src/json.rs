//! The JSON depth guard: arguments nested too deeply are refused before any hook, log or span
//! meets them, and taken apart without recursion.

use serde_json::Value;

/// Tool-call arguments nested deeper than this are refused: the call gets an error result and
/// the value is taken apart without recursion, so no hook, log or span meets it (a value
/// nested 100 000 levels deep would otherwise overflow the stack when cloned or dropped).
pub const MAX_ARGUMENT_DEPTH: usize = 128;

/// True when `v` nests arrays and objects more than `max` levels deep (checked without
/// recursion; `[[1]]` is 2 levels).
pub fn nests_deeper_than(v: &Value, max: usize) -> bool {
    let container = |v: &Value| matches!(v, Value::Array(_) | Value::Object(_));
    if !container(v) {
        return false;
    }
    // A flat object (the usual arguments) needs no stack at all.
    let flat = |v: &Value| match v {
        Value::Array(items) => !items.iter().any(container),
        Value::Object(map) => !map.values().any(container),
        _ => true,
    };
    if max >= 1 && flat(v) {
        return false;
    }
    let mut stack: Vec<(&Value, usize)> = vec![(v, 1)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .filter(|c| container(c))
                    .map(|c| (c, depth + 1)),
            ),
            Value::Object(map) => stack.extend(
                map.values()
                    .filter(|c| container(c))
                    .map(|c| (c, depth + 1)),
            ),
            _ => {}
        }
    }
    false
}

/// Drops `v` without recursion (the default drop of a deeply nested value recurses).
pub fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// What kind of JSON value `v` is, with its article, for error messages: `"a string"`,
/// `"an object"`, `"null"` ….
///
/// ```
/// assert_eq!(hooks_core::json::kind_name(&serde_json::json!([1])), "an array");
/// ```
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_measured_without_recursion() {
        assert!(!nests_deeper_than(&serde_json::json!([[1]]), 2));
        assert!(nests_deeper_than(&serde_json::json!([[[1]]]), 2));
        let mut deep = Value::Null;
        for _ in 0..200_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(nests_deeper_than(&deep, MAX_ARGUMENT_DEPTH));
        drop_deep(deep);
    }
}
