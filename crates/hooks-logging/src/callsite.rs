//! Callsites built at run time, so the target, level and extra field names can be configured
//! (the `tracing` macros need them as constants).
//!
//! Each distinct (name, target, level, field names) is built and leaked once per process and
//! shared by every hook with that configuration, so the memory is bounded by the number of
//! distinct configurations.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use tracing::Level;
use tracing::field::{Field, Value};
use tracing::level_filters::LevelFilter;
use tracing_core::callsite::{Callsite, DefaultCallsite, Identifier};
use tracing_core::field::FieldSet;
use tracing_core::metadata::Kind;
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata};

/// The most fields one event can carry (`tracing`'s own limit for a value set).
pub(crate) const MAX_FIELDS: usize = 32;

const NEVER: u8 = 0;
const SOMETIMES: u8 = 1;
const ALWAYS: u8 = 2;

pub(crate) struct Site {
    interest: AtomicU8,
    meta: OnceLock<Metadata<'static>>,
    fields: OnceLock<Vec<Field>>,
}

static FALLBACK_SITE: DefaultCallsite = DefaultCallsite::new(&FALLBACK_META);
static FALLBACK_META: Metadata<'static> = Metadata::new(
    "hooks-logging",
    "hooks::agent",
    Level::TRACE,
    None,
    None,
    None,
    FieldSet::new(&[], Identifier(&FALLBACK_SITE)),
    Kind::EVENT,
);

impl std::fmt::Debug for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let meta = self.metadata();
        f.debug_struct("Site")
            .field("name", &meta.name())
            .field("target", &meta.target())
            .field("level", meta.level())
            .finish()
    }
}

impl Callsite for Site {
    fn set_interest(&self, interest: Interest) {
        let v = if interest.is_never() {
            NEVER
        } else if interest.is_always() {
            ALWAYS
        } else {
            SOMETIMES
        };
        self.interest.store(v, Ordering::Relaxed);
    }

    fn metadata(&self) -> &Metadata<'_> {
        // Set before the site is registered or used; the fallback is never reached.
        self.meta.get().unwrap_or(&FALLBACK_META)
    }
}

type Key = (&'static str, String, Level, Vec<String>);

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

impl Site {
    /// The shared site for this configuration, built on first use.
    pub(crate) fn get(
        name: &'static str,
        target: &str,
        level: Level,
        fields: &[String],
    ) -> &'static Site {
        static SITES: OnceLock<Mutex<HashMap<Key, &'static Site>>> = OnceLock::new();
        let key: Key = (name, target.to_owned(), level, fields.to_vec());
        let mut sites = SITES
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(site) = sites.get(&key) {
            return site;
        }
        let site: &'static Site = Box::leak(Box::new(Site {
            interest: AtomicU8::new(SOMETIMES),
            meta: OnceLock::new(),
            fields: OnceLock::new(),
        }));
        let names: &'static [&'static str] = Box::leak(
            fields
                .iter()
                .map(|f| leak(f))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let meta = Metadata::new(
            name,
            leak(target),
            level,
            Some(file!()),
            Some(line!()),
            Some(module_path!()),
            FieldSet::new(names, Identifier(site)),
            Kind::EVENT,
        );
        let _ = site.meta.set(meta);
        let _ = site.fields.set(site.metadata().fields().iter().collect());
        tracing_core::callsite::register(site);
        sites.insert(key, site);
        site
    }

    fn meta(&'static self) -> &'static Metadata<'static> {
        self.meta.get().unwrap_or(&FALLBACK_META)
    }

    /// True when some subscriber wants this event: the cheap checks first.
    #[inline]
    pub(crate) fn enabled(&'static self) -> bool {
        let meta = self.meta();
        if *meta.level() > LevelFilter::current() {
            return false;
        }
        match self.interest.load(Ordering::Relaxed) {
            NEVER => false,
            ALWAYS => true,
            _ => tracing::dispatcher::get_default(|d| d.enabled(meta)),
        }
    }

    /// Emits the event with `values`, one per field of the site, in order (`None` = absent).
    pub(crate) fn emit(&'static self, values: &[Option<&dyn Value>]) {
        let Some(fields) = self.fields.get() else {
            return;
        };
        let Some(first) = fields.first() else {
            return;
        };
        let set: [(&Field, Option<&dyn Value>); MAX_FIELDS] =
            std::array::from_fn(|i| match fields.get(i) {
                Some(f) => (f, values.get(i).copied().flatten()),
                None => (first, None),
            });
        let meta = self.meta();
        Event::dispatch(meta, &meta.fields().value_set(&set));
    }
}
