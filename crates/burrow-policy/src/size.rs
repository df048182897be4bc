//! Byte sizes as people write them: `512M`, `1G`, `64KiB`, `4096`.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A number of bytes. Suffixes are binary (K = 1024), because memory limits and file sizes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// `n` kibibytes.
    pub const fn kib(n: u64) -> ByteSize {
        ByteSize(n * 1024)
    }

    /// `n` mebibytes.
    pub const fn mib(n: u64) -> ByteSize {
        ByteSize(n * 1024 * 1024)
    }

    /// The number of bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a size: write a whole number of bytes with an optional K, M, G or T suffix, like 512M"
)]
pub struct ParseSizeError(String);

impl FromStr for ByteSize {
    type Err = ParseSizeError;

    fn from_str(text: &str) -> Result<ByteSize, ParseSizeError> {
        let invalid = || ParseSizeError(text.to_owned());
        let trimmed = text.trim();
        let digits_end = trimmed
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(trimmed.len());
        let (digits, suffix) = trimmed.split_at(digits_end);
        let number: u64 = digits.parse().map_err(|_| invalid())?;
        let shift = match suffix.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            "T" | "TB" | "TIB" => 40,
            _ => return Err(invalid()),
        };
        number
            .checked_mul(1u64 << shift)
            .map(ByteSize)
            .ok_or_else(invalid)
    }
}

impl fmt::Display for ByteSize {
    /// The shortest exact form: `512M` rather than `536870912`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
        for (shift, unit) in UNITS {
            let scale = 1u64 << shift;
            if self.0 >= scale && self.0.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.0 / scale);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ByteSize, D::Error> {
        struct SizeVisitor;

        impl Visitor<'_> for SizeVisitor {
            type Value = ByteSize;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as 512M, or a number of bytes")
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(value))
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<ByteSize, E> {
                u64::try_from(value)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<ByteSize, E> {
                value.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_any(SizeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSize;

    #[test]
    fn parses_suffixes_as_binary_units() {
        assert_eq!("512M".parse(), Ok(ByteSize(512 << 20)));
        assert_eq!("1g".parse(), Ok(ByteSize(1 << 30)));
        assert_eq!("64KiB".parse(), Ok(ByteSize(64 << 10)));
        assert_eq!("4096".parse(), Ok(ByteSize(4096)));
        assert_eq!(" 2 T ".parse(), Ok(ByteSize(2 << 40)));
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert!("".parse::<ByteSize>().is_err());
        assert!("M".parse::<ByteSize>().is_err());
        assert!("1.5G".parse::<ByteSize>().is_err());
        assert!("-1".parse::<ByteSize>().is_err());
        assert!("12X".parse::<ByteSize>().is_err());
        assert!("99999999999999T".parse::<ByteSize>().is_err());
    }

    #[test]
    fn displays_the_shortest_exact_form() {
        assert_eq!(ByteSize(512 << 20).to_string(), "512M");
        assert_eq!(ByteSize(1536 << 20).to_string(), "1536M");
        assert_eq!(ByteSize(1000).to_string(), "1000");
        assert_eq!(ByteSize(0).to_string(), "0");
    }
}
