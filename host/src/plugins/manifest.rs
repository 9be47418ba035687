//! A plugin's manifest: built by the host from the component's exports and its `describe()`,
//! never taken on trust from a side file, so the manifest cannot disagree with the code.

use serde::{Deserialize, Serialize};

/// The WIT contract versions this host serves. Released versions are frozen; a new one is a
/// new folder under `wit/` and a new entry here, and the old ones keep working.
pub const SUPPORTED_WIT: &[&str] = &["1.0.0"];

/// The three plugin worlds; each is also a slot kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Lens,
    Moments,
    Manipulation,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Lens, Kind::Moments, Kind::Manipulation];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lens => "lens",
            Kind::Moments => "moments",
            Kind::Manipulation => "manipulation",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The interface a component of this world exports, at a contract version.
    pub fn export_name(self, wit: &str) -> String {
        let iface = match self {
            Kind::Lens => "lens-plugin",
            Kind::Moments => "moments-plugin",
            Kind::Manipulation => "manipulation-plugin",
        };
        format!("brainscan:analysis/{iface}@{wit}")
    }
}

/// Limits a plugin asked for in `describe()`; `None` takes the host's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestedLimits {
    pub fuel_per_second: Option<u64>,
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub kind: Kind,
    /// Contract version the component was built against (from its export names).
    pub wit_version: String,
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    pub size_bytes: u64,
    pub author: String,
    pub description: String,
    /// Lens plugins: the lens names they score.
    pub provides: Vec<String>,
    pub limits: RequestedLimits,
    /// `builtin` for the plugins embedded in the binary, `upload` otherwise.
    pub source: String,
}

impl Manifest {
    /// `name@version`, the id operators type.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// Plugin names: lower-case letters, digits and `-`, starting with a letter, 1-64 characters.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Versions: `MAJOR.MINOR.PATCH` with an optional `-pre` tag of `[0-9A-Za-z.-]`, ≤ 64 chars.
pub fn valid_version(version: &str) -> bool {
    if version.len() > 64 {
        return false;
    }
    let (core, pre) = version.split_once('-').unwrap_or((version, ""));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 9 && p.chars().all(|c| c.is_ascii_digit()))
        && pre
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && (version.contains('-') <= !pre.is_empty())
}

/// Lens names a plugin may provide: `[a-z0-9_]`, starting with a letter, 1-32 characters.
pub fn valid_lens_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Splits `name@version`.
pub fn parse_id(id: &str) -> Option<(&str, &str)> {
    let (name, version) = id.split_once('@')?;
    (valid_name(name) && valid_version(version)).then_some((name, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_versions_and_ids() {
        assert!(valid_name("lens-standard"));
        assert!(!valid_name("Lens"));
        assert!(!valid_name("-x"));
        assert!(!valid_name(""));
        assert!(valid_version("1.0.0"));
        assert!(valid_version("1.2.3-rc.1"));
        assert!(!valid_version("1.0"));
        assert!(!valid_version("1.0.0-"));
        assert!(!valid_version("1.x.0"));
        assert!(valid_lens_name("purchase_intent"));
        assert!(!valid_lens_name("Humor"));
        assert_eq!(parse_id("a@1.0.0"), Some(("a", "1.0.0")));
        assert_eq!(parse_id("a1.0.0"), None);
        assert_eq!(
            Kind::Lens.export_name("1.0.0"),
            "brainscan:analysis/lens-plugin@1.0.0"
        );
    }
}

/// Property tests (security round 4, point 7): what the manifest checks accept is what they
/// document, and an id splits back into the name and version it was made of.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn accepted_names_versions_and_ids_are_the_documented_ones(
            name in prop_oneof!["\\PC{0,80}", "[a-z][a-z0-9-]{0,70}"],
            version in prop_oneof!["\\PC{0,70}", "[0-9]{1,10}\\.[0-9]{1,10}\\.[0-9]{1,10}(-[0-9A-Za-z.-]{0,60})?"],
            lens in prop_oneof!["\\PC{0,40}", "[a-z][a-z0-9_]{0,40}"],
        ) {
            if valid_name(&name) {
                prop_assert!((1..=64).contains(&name.len()));
                prop_assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
            }
            if valid_version(&version) {
                prop_assert!(version.len() <= 64);
                let core = version.split('-').next().unwrap_or_default();
                prop_assert_eq!(core.split('.').count(), 3);
            }
            if valid_lens_name(&lens) {
                prop_assert!((1..=32).contains(&lens.len()));
                prop_assert!(lens.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
            }
            let id = format!("{name}@{version}");
            match parse_id(&id) {
                Some((n, v)) => {
                    prop_assert!(valid_name(n) && valid_version(v));
                    prop_assert_eq!(format!("{n}@{v}"), id);
                }
                None => prop_assert!(!(valid_name(&name) && valid_version(&version))),
            }
        }
    }
}
