//! The kernel's parsers for values written into tunable files, with the errno each one returns.
//! Lustre's store functions are built from these, so reproducing them gives the same accepted
//! spellings and the same EINVAL/ERANGE split as a real client.

pub const EINVAL: i32 = 22;
pub const ERANGE: i32 = 34;
pub const E2BIG: i32 = 7;

/// Strip the single trailing newline `echo` adds (the kernel's kstrto* accept it).
fn trim_nl(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

/// `kstrtoull(s, base)`: optional '+', base 0 means 0x-hex / 0-octal / decimal.
pub fn kstrtoull(s: &str, base: u32) -> Result<u64, i32> {
    let s = trim_nl(s);
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = match base {
        0 => {
            if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                (h, 16)
            } else if s.len() > 1 && s.starts_with('0') {
                (&s[1..], 8)
            } else {
                (s, 10)
            }
        }
        b => (s, b),
    };
    if digits.is_empty() {
        return Err(EINVAL);
    }
    let mut v: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix).ok_or(EINVAL)? as u64;
        v = v.checked_mul(radix as u64).and_then(|v| v.checked_add(d)).ok_or(ERANGE)?;
    }
    Ok(v)
}

/// `kstrtouint`: as kstrtoull, then ERANGE above u32::MAX.
pub fn kstrtouint(s: &str, base: u32) -> Result<u32, i32> {
    let v = kstrtoull(s, base)?;
    u32::try_from(v).map_err(|_| ERANGE)
}

/// `kstrtoll(s, 10)`: signed decimal.
pub fn kstrtoll(s: &str) -> Result<i64, i32> {
    let t = trim_nl(s);
    if let Some(rest) = t.strip_prefix('-') {
        let v = kstrtoull(rest, 10)?;
        if v > i64::MAX as u64 + 1 {
            return Err(ERANGE);
        }
        Ok((v as i128).wrapping_neg() as i64)
    } else {
        let v = kstrtoull(t, 10)?;
        i64::try_from(v).map_err(|_| ERANGE)
    }
}

/// `kstrtobool`: y/Y/1/n/N/0 and on/off by their first characters.
pub fn kstrtobool(s: &str) -> Result<bool, i32> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'y' | b'Y' | b'1') => Ok(true),
        Some(b'n' | b'N' | b'0') => Ok(false),
        Some(b'o' | b'O') => match b.get(1) {
            Some(b'n' | b'N') => Ok(true),
            Some(b'f' | b'F') => Ok(false),
            _ => Err(EINVAL),
        },
        _ => Err(EINVAL),
    }
}

/// Lustre's `sysfs_memparse(buf, count, &val, defunit)`: a decimal number with an optional
/// fraction and unit (B, K, KB, KiB, M, ..., E), `defunit` when none is given.
pub fn sysfs_memparse(s: &str, defunit: &str) -> Result<u64, i32> {
    let t = trim_nl(s).trim_end();
    if t.len() > 20 {
        return Err(E2BIG);
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return Err(EINVAL);
    }
    let unit = if unit.is_empty() { defunit } else { unit };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        "P" | "PB" | "PIB" => 50,
        "E" | "EB" | "EIB" => 60,
        _ => return Err(EINVAL),
    };
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let int: u64 = if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| ERANGE)? };
    let mut v = int.checked_shl(shift).filter(|v| v >> shift == int).ok_or(ERANGE)?;
    if !frac_part.is_empty() {
        let frac: f64 = format!("0.{frac_part}").parse().map_err(|_| EINVAL)?;
        v = v.checked_add((frac * (1u64 << shift) as f64) as u64).ok_or(ERANGE)?;
    }
    Ok(v)
}

/// Short description of an errno, as strerror(3) spells it.
pub fn strerror(errno: i32) -> &'static str {
    match errno {
        EINVAL => "Invalid argument",
        ERANGE => "Numerical result out of range",
        E2BIG => "Argument list too long",
        13 => "Permission denied",
        2 => "No such file or directory",
        _ => "Unknown error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrto_variants() {
        assert_eq!(kstrtouint("8\n", 0), Ok(8));
        assert_eq!(kstrtouint("0x10", 0), Ok(16));
        assert_eq!(kstrtouint("010", 0), Ok(8));
        assert_eq!(kstrtouint("+5", 10), Ok(5));
        assert_eq!(kstrtouint("abc", 0), Err(EINVAL));
        assert_eq!(kstrtouint("", 0), Err(EINVAL));
        assert_eq!(kstrtouint("-1", 0), Err(EINVAL));
        assert_eq!(kstrtouint("99999999999", 0), Err(ERANGE));
        assert_eq!(kstrtoll("-3"), Ok(-3));
        assert_eq!(kstrtobool("on"), Ok(true));
        assert_eq!(kstrtobool("off"), Ok(false));
        assert_eq!(kstrtobool("maybe"), Err(EINVAL));
    }

    #[test]
    fn memparse_units() {
        assert_eq!(sysfs_memparse("256", "B"), Ok(256));
        assert_eq!(sysfs_memparse("1M", "B"), Ok(1 << 20));
        assert_eq!(sysfs_memparse("4MiB", "B"), Ok(4 << 20));
        assert_eq!(sysfs_memparse("512K", "B"), Ok(512 << 10));
        assert_eq!(sysfs_memparse("64", "MiB"), Ok(64 << 20));
        assert_eq!(sysfs_memparse("1.5M", "B"), Ok(3 << 19));
        assert_eq!(sysfs_memparse("12q", "B"), Err(EINVAL));
        assert_eq!(sysfs_memparse("123456789012345678901", "B"), Err(E2BIG));
    }
}
