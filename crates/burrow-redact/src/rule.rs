//! PII rules: what to look for ([`PiiKind`]) and what to do with it
//! ([`Strategy`]), written in the `--redact TYPE[:STRATEGY]` flag syntax.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{ParseRuleError, one_line};

/// What a rule looks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PiiKind {
    /// Email addresses (`local@domain.tld`).
    Email,
    /// Card numbers written as four groups of four digits, optionally
    /// separated by a space or dash, that pass the Luhn check.
    CreditCard,
    /// IPv4 addresses (four octets 0–255, no leading zeros) and IPv6
    /// addresses (anything `std::net::Ipv6Addr` parses, `::` alone excepted).
    Ip,
    /// MAC addresses: six hex pairs separated by `:` or `-`.
    MacAddress,
    /// URLs: `http://` or `https://` ones, and bare ones that start with
    /// `www.` or have a path (`example.com/x`).
    Url,
    /// A user's regex, compiled as given (Rust `regex` syntax, matched
    /// against bytes, Unicode on). It must not match the empty string.
    Custom(String),
}

impl PiiKind {
    /// The type's name as LangChain spells it: in `[REDACTED_{NAME}]`
    /// (upper-cased), `<{name}_hash:…>` and `Output blocked: detected {name}.`
    pub fn name(&self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::CreditCard => "credit_card",
            PiiKind::Ip => "ip",
            PiiKind::MacAddress => "mac_address",
            PiiKind::Url => "url",
            PiiKind::Custom(_) => "custom",
        }
    }

    fn from_name(name: &str) -> Option<PiiKind> {
        Some(match name.to_ascii_lowercase().as_str() {
            "email" => PiiKind::Email,
            "credit_card" => PiiKind::CreditCard,
            "ip" => PiiKind::Ip,
            "mac_address" | "mac" => PiiKind::MacAddress,
            "url" => PiiKind::Url,
            _ => return None,
        })
    }
}

/// What is done with a match. The formats are LangChain's PII middleware's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// `[REDACTED_EMAIL]`, `[REDACTED_CREDIT_CARD]`, … (the default).
    #[default]
    Redact,
    /// Keep a little for humans: `alice@****.com`, `****-****-****-1234`,
    /// `*.*.*.42`, `**:**:**:**:**:ff`, `[MASKED_URL]`, `****abcd`.
    Mask,
    /// `<email_hash:1f2e3d4c>`: the first 8 hex digits of the SHA-256 of
    /// the match, so equal values stay recognisably equal.
    Hash,
    /// Withhold the whole output and return only
    /// `Output blocked: detected email.` if anything matches.
    Block,
}

impl Strategy {
    /// The strategy's name in the flag syntax.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Redact => "redact",
            Strategy::Mask => "mask",
            Strategy::Hash => "hash",
            Strategy::Block => "block",
        }
    }

    fn from_name(name: &str) -> Option<Strategy> {
        Some(match name.to_ascii_lowercase().as_str() {
            "redact" => Strategy::Redact,
            "mask" => Strategy::Mask,
            "hash" => Strategy::Hash,
            "block" => Strategy::Block,
            _ => return None,
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One PII rule: a type and a strategy.
///
/// The flag syntax (`FromStr` and `Display`, and the JSON form, which is the
/// same string):
///
/// | value | meaning |
/// | --- | --- |
/// | `email`, `credit_card`, `ip`, `mac_address` (or `mac`), `url` | that type, strategy `redact` |
/// | `email:mask`, `ip:hash`, `mac:block`, … | that type and strategy |
/// | `re:REGEX` | a custom regex (everything after `re:`), strategy `redact` |
/// | `re/STRATEGY:REGEX` | a custom regex with another strategy, e.g. `re/mask:[0-9]{6}` |
///
/// A strategy suffix after a custom regex would be ambiguous (`:mask` may be
/// part of the regex), hence the `re/STRATEGY:` form.
///
/// ```
/// use burrow_redact::{PiiKind, RuleSpec, Strategy};
///
/// let rule: RuleSpec = "mac:block".parse()?;
/// assert_eq!(rule, RuleSpec::new(PiiKind::MacAddress, Strategy::Block));
/// assert_eq!(rule.to_string(), "mac_address:block");
///
/// let custom: RuleSpec = "re:[0-9]{6}".parse()?;
/// assert_eq!(custom, RuleSpec::custom("[0-9]{6}", Strategy::Redact)?);
/// assert_eq!(RuleSpec::custom("[0-9]{6}", Strategy::Mask)?.to_string(), "re/mask:[0-9]{6}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuleSpec {
    /// What to look for.
    pub kind: PiiKind,
    /// What to do with it.
    pub strategy: Strategy,
}

impl RuleSpec {
    /// A rule for `kind` with `strategy`. A custom regex is checked when the
    /// [`Redactor`](crate::Redactor) is built; [`RuleSpec::custom`] checks it
    /// at once.
    pub fn new(kind: PiiKind, strategy: Strategy) -> RuleSpec {
        RuleSpec { kind, strategy }
    }

    /// A custom-regex rule, with the regex checked now.
    pub fn custom(
        regex: impl Into<String>,
        strategy: Strategy,
    ) -> Result<RuleSpec, ParseRuleError> {
        let rule = RuleSpec {
            kind: PiiKind::Custom(regex.into()),
            strategy,
        };
        rule.check().map_err(|reason| ParseRuleError {
            value: rule.to_string(),
            reason,
        })?;
        Ok(rule)
    }

    /// Checks what the type cannot check: that a custom regex parses and
    /// cannot match the empty string.
    pub(crate) fn check(&self) -> Result<(), String> {
        let PiiKind::Custom(pattern) = &self.kind else {
            return Ok(());
        };
        let hir = regex_automata::util::syntax::parse_with(pattern, &crate::pii::syntax_config())
            .map_err(|err| format!("invalid regex: {}", one_line(&err.to_string())))?;
        if hir.properties().minimum_len() == Some(0) {
            return Err("the regex can match the empty string".to_string());
        }
        Ok(())
    }
}

impl fmt::Display for RuleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.kind, self.strategy) {
            (PiiKind::Custom(pattern), Strategy::Redact) => write!(f, "re:{pattern}"),
            (PiiKind::Custom(pattern), strategy) => write!(f, "re/{strategy}:{pattern}"),
            (kind, Strategy::Redact) => f.write_str(kind.name()),
            (kind, strategy) => write!(f, "{}:{strategy}", kind.name()),
        }
    }
}

impl FromStr for RuleSpec {
    type Err = ParseRuleError;

    fn from_str(value: &str) -> Result<RuleSpec, ParseRuleError> {
        let error = |reason: String| ParseRuleError {
            value: value.to_string(),
            reason,
        };
        let rule = if let Some(pattern) = value.strip_prefix("re:") {
            RuleSpec {
                kind: PiiKind::Custom(pattern.to_string()),
                strategy: Strategy::Redact,
            }
        } else if let Some(rest) = value.strip_prefix("re/") {
            let Some((strategy, pattern)) = rest.split_once(':') else {
                return Err(error("expected re/STRATEGY:REGEX".to_string()));
            };
            let strategy =
                Strategy::from_name(strategy).ok_or_else(|| error(unknown_strategy(strategy)))?;
            RuleSpec {
                kind: PiiKind::Custom(pattern.to_string()),
                strategy,
            }
        } else {
            let (kind, strategy) = match value.split_once(':') {
                Some((kind, strategy)) => {
                    let strategy = Strategy::from_name(strategy)
                        .ok_or_else(|| error(unknown_strategy(strategy)))?;
                    (kind, strategy)
                }
                None => (value, Strategy::Redact),
            };
            let kind = PiiKind::from_name(kind).ok_or_else(|| error(unknown_type(kind)))?;
            RuleSpec { kind, strategy }
        };
        rule.check().map_err(error)?;
        Ok(rule)
    }
}

fn unknown_type(kind: &str) -> String {
    if kind.is_empty() {
        "no type given (expected email, credit_card, ip, mac_address, url or re:REGEX)".to_string()
    } else {
        format!(
            "unknown type {kind:?} (expected email, credit_card, ip, mac_address (or mac), url or re:REGEX)"
        )
    }
}

fn unknown_strategy(strategy: &str) -> String {
    format!("unknown strategy {strategy:?} (expected redact, mask, hash or block)")
}

impl Serialize for RuleSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RuleSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RuleSpec, D::Error> {
        let value = String::deserialize(deserializer)?;
        value.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn parse(value: &str) -> RuleSpec {
        value.parse().unwrap()
    }

    #[test]
    fn types_default_to_redact() {
        assert_eq!(
            parse("email"),
            RuleSpec::new(PiiKind::Email, Strategy::Redact)
        );
        assert_eq!(
            parse("credit_card"),
            RuleSpec::new(PiiKind::CreditCard, Strategy::Redact)
        );
        assert_eq!(parse("ip"), RuleSpec::new(PiiKind::Ip, Strategy::Redact));
        assert_eq!(parse("url"), RuleSpec::new(PiiKind::Url, Strategy::Redact));
        assert_eq!(
            parse("mac_address"),
            RuleSpec::new(PiiKind::MacAddress, Strategy::Redact)
        );
    }

    #[test]
    fn strategies_and_the_mac_alias() {
        assert_eq!(
            parse("email:mask"),
            RuleSpec::new(PiiKind::Email, Strategy::Mask)
        );
        assert_eq!(
            parse("credit_card:hash"),
            RuleSpec::new(PiiKind::CreditCard, Strategy::Hash)
        );
        assert_eq!(
            parse("mac:block"),
            RuleSpec::new(PiiKind::MacAddress, Strategy::Block)
        );
        assert_eq!(
            parse("ip:redact"),
            RuleSpec::new(PiiKind::Ip, Strategy::Redact)
        );
    }

    #[test]
    fn custom_regex_takes_everything_after_re() {
        assert_eq!(
            parse("re:[0-9]{6}"),
            RuleSpec::new(PiiKind::Custom("[0-9]{6}".into()), Strategy::Redact)
        );
        // A colon in the regex is part of the regex, not a strategy.
        assert_eq!(
            parse("re:a:mask"),
            RuleSpec::new(PiiKind::Custom("a:mask".into()), Strategy::Redact)
        );
        assert_eq!(
            parse("re/hash:x:y"),
            RuleSpec::new(PiiKind::Custom("x:y".into()), Strategy::Hash)
        );
    }

    #[test]
    fn display_round_trips() {
        for value in [
            "email",
            "email:mask",
            "credit_card:hash",
            "ip:block",
            "mac_address",
            "url:mask",
            "re:[0-9]{6}",
            "re/block:a:b",
        ] {
            assert_eq!(parse(value).to_string(), value);
            assert_eq!(parse(&parse(value).to_string()), parse(value));
        }
        assert_eq!(parse("mac:hash").to_string(), "mac_address:hash");
    }

    #[test]
    fn errors_are_one_line_and_name_the_value() {
        for (value, needle) in [
            ("phone", "unknown type \"phone\""),
            ("email:scramble", "unknown strategy \"scramble\""),
            ("", "no type given"),
            ("re:(abc", "unclosed group"),
            ("re:a*", "empty string"),
            ("re/nope:x", "unknown strategy \"nope\""),
            ("re/mask", "re/STRATEGY:REGEX"),
        ] {
            let message = value.parse::<RuleSpec>().unwrap_err().to_string();
            assert!(!message.contains('\n'), "{message}");
            assert!(message.contains(&format!("{value:?}")), "{message}");
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn custom_constructor_checks_the_regex() {
        assert!(RuleSpec::custom("[a-z]+", Strategy::Mask).is_ok());
        let err = RuleSpec::custom("[a-z", Strategy::Mask)
            .unwrap_err()
            .to_string();
        assert!(err.contains("re/mask:[a-z") && !err.contains('\n'), "{err}");
    }

    #[test]
    fn serde_uses_the_flag_syntax() {
        let rules = vec![parse("email:mask"), parse("re:[0-9]{6}"), parse("ip")];
        let json = serde_json::to_string(&rules).unwrap();
        assert_eq!(json, r#"["email:mask","re:[0-9]{6}","ip"]"#);
        assert_eq!(serde_json::from_str::<Vec<RuleSpec>>(&json).unwrap(), rules);
        let err = serde_json::from_str::<RuleSpec>(r#""bogus""#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown type \"bogus\""), "{err}");
    }
}
