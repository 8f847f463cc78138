//! A run's extensions: typed values any hook or tool of the run can store and read.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A typed map, one value per type, shared by everything that takes part in one run: a hook
/// stores what a later hook or a tool of the same run reads (a tenant id, a budget, a
/// decision), like `http::Extensions` for a request.
///
/// It belongs to the run and is dropped with it, so it needs no bound and no cleanup. Every
/// event and [`ToolInput`](crate::agent::ToolInput) hands it out. Values are cloned out; use an
/// `Arc` for large ones. Define a newtype per meaning rather than storing a bare `String`.
///
/// ```
/// use hooks_core::Extensions;
/// #[derive(Clone, Debug, PartialEq)]
/// struct Tenant(String);
///
/// let ext = Extensions::new();
/// assert_eq!(ext.insert(Tenant("acme".into())), None);
/// assert_eq!(ext.get::<Tenant>(), Some(Tenant("acme".into())));
/// assert!(ext.get::<u32>().is_none());
/// ```
#[derive(Default)]
pub struct Extensions {
    map: Mutex<BTreeMap<TypeId, Box<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.lock().len())
            .finish()
    }
}

impl Extensions {
    /// An empty map.
    pub const fn new() -> Self {
        Self {
            map: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<TypeId, Box<dyn Any + Send + Sync>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `value`, replacing (and returning) the value of its type.
    pub fn insert<T: Send + Sync + 'static>(&self, value: T) -> Option<T> {
        self.lock()
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// A clone of the value of type `T`.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.lock()
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
            .cloned()
    }

    /// Calls `f` with the value of type `T`, writable, if there is one (under a short lock:
    /// keep `f` quick).
    pub fn with<T: Send + Sync + 'static, R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.lock()
            .get_mut(&TypeId::of::<T>())
            .and_then(|v| v.downcast_mut::<T>())
            .map(f)
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&self) -> Option<T> {
        self.lock()
            .remove(&TypeId::of::<T>())
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// True when it holds a value of type `T`.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.lock().contains_key(&TypeId::of::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type_replaced_updated_and_removed() {
        let ext = Extensions::new();
        assert_eq!(ext.insert(1u32), None);
        assert_eq!(ext.insert(2u32), Some(1));
        assert_eq!(
            ext.with(|n: &mut u32| {
                *n += 1;
                *n
            }),
            Some(3)
        );
        assert!(ext.contains::<u32>());
        assert!(!ext.contains::<u64>());
        assert_eq!(ext.remove::<u32>(), Some(3));
        assert_eq!(ext.get::<u32>(), None);
    }
}
