//! The kernel's parsers for values written into tunable files, with the errno each one returns.
//! Lustre's store functions are built from these, so reproducing them gives the same accepted
//! spellings and the same EINVAL/ERANGE split as a real client.

pub const EINVAL: i32 = 22;
pub const ERANGE: i32 = 34;
pub const E2BIG: i32 = 7;
pub const EOVERFLOW: i32 = 75;

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

/// Lustre's `string_to_size()` (lprocfs_status.c, 2.15): a decimal number with an optional
/// unit. Units are case-sensitive: `K M G T P E`, optionally followed by `iB`, are powers of
/// 1024, `kB MB GB TB PB EB` powers of 1000, a bare `B` is bytes. A fraction (three digits at
/// most) is allowed only with one of those units. Ported step by step, so that odd spellings
/// get the answer a real client gives (`4m` and `1.5` are EINVAL, `4MB` is 4,000,000).
fn string_to_size(buf: &str, count: usize) -> Result<u64, i32> {
    const UNITS_10: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    const UNITS_2: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if count >= 22 {
        return Err(E2BIG);
    }
    let b = buf.as_bytes();
    let within = &buf[..count.min(buf.len())];
    // "iB" marks a base-2 unit; any other "B" a base-10 one
    let base10 = buf.find('B').is_some_and(|at| at == 0 || b[at - 1] != b'i');
    let (units, coeff): (&[&str; 6], u64) = if base10 { (&UNITS_10, 1000) } else { (&UNITS_2, 1024) };
    let mut size: u64 = 0;
    let mut blk: u64 = 1;
    let mut len = count;
    let found = (0..units.len()).rev().find_map(|i| within.find(units[i]).map(|at| (i, at)));
    match found {
        None => {
            // 'B' is the only letter left that may follow the number
            if let Some(at) = within.find('B') {
                len = at;
                let rest = &buf[at..];
                if count - len > 2 || (count - len == 2 && rest != "B\n") {
                    return Err(EINVAL);
                }
            }
        }
        Some((i, at)) => {
            for _ in 0..=i {
                blk *= coeff;
            }
            len = at;
            if let Some(dot) = within.find('.') {
                len = dot;
                let digits: String = buf[dot + 1..].chars().take_while(char::is_ascii_digit).take(3).collect();
                let frac: u64 = format!("{digits:0<3}").parse().map_err(|_| EINVAL)?;
                if u64::BITS - frac.leading_zeros() + u64::BITS - blk.leading_zeros() > 65 {
                    return Err(EOVERFLOW);
                }
                size += frac * blk / 1000;
            }
        }
    }
    let whole = kstrtoull(&buf[..len.min(21)], 10)?;
    if whole != 0 && u64::BITS - whole.leading_zeros() + u64::BITS - blk.leading_zeros() > 65 {
        return Err(EOVERFLOW);
    }
    size.checked_add(whole * blk).ok_or(EOVERFLOW)
}

/// Lustre's `sysfs_memparse(buf, count, &val, defunit)`: trailing blanks dropped, `defunit`
/// appended when the value ends in a digit (a `B` default adds nothing), then `string_to_size`.
pub fn sysfs_memparse(s: &str, defunit: &str) -> Result<u64, i32> {
    let t = s.trim_end_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return Err(EINVAL);
    }
    if !t.ends_with(|c: char| c.is_ascii_alphabetic()) && !defunit.starts_with('B') {
        if t.len() + 3 >= 23 {
            return Err(E2BIG);
        }
        let with_unit = format!("{t}{defunit}");
        return string_to_size(&with_unit, with_unit.len());
    }
    string_to_size(s, t.len())
}

/// Short description of an errno, as strerror(3) spells it.
pub fn strerror(errno: i32) -> &'static str {
    match errno {
        EINVAL => "Invalid argument",
        ERANGE => "Numerical result out of range",
        E2BIG => "Argument list too long",
        EOVERFLOW => "Value too large for defined data type",
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
        assert_eq!(kstrtobool("on"), Ok(true));
        assert_eq!(kstrtobool("off"), Ok(false));
        assert_eq!(kstrtobool("maybe"), Err(EINVAL));
    }

    #[test]
    fn memparse_units() {
        assert_eq!(sysfs_memparse("256", "B"), Ok(256));
        assert_eq!(sysfs_memparse("256\n", "B"), Ok(256));
        assert_eq!(sysfs_memparse("1M", "B"), Ok(1 << 20));
        assert_eq!(sysfs_memparse("4MiB", "B"), Ok(4 << 20));
        assert_eq!(sysfs_memparse("512K", "B"), Ok(512 << 10));
        assert_eq!(sysfs_memparse("512KiB\n", "B"), Ok(512 << 10));
        assert_eq!(sysfs_memparse("64", "MiB"), Ok(64 << 20));
        assert_eq!(sysfs_memparse("1.5", "MiB"), Ok(3 << 19));
        assert_eq!(sysfs_memparse("1.5M", "B"), Ok(3 << 19));
        assert_eq!(sysfs_memparse("12q", "B"), Err(EINVAL));
        // 21 digits overflow kstrtoull; 22 characters are too many for string_to_size, and
        // 20 with a unit to append too many for sysfs_memparse
        assert_eq!(sysfs_memparse("123456789012345678901", "B"), Err(ERANGE));
        assert_eq!(sysfs_memparse("1234567890123456789012", "B"), Err(E2BIG));
        assert_eq!(sysfs_memparse("12345678901234567890", "MiB"), Err(E2BIG));
        assert_eq!(sysfs_memparse("", "B"), Err(EINVAL));
    }

    #[test]
    fn memparse_is_lustres_string_to_size() {
        // units are case-sensitive: lower-case m and k are not units
        assert_eq!(sysfs_memparse("4m", "B"), Err(EINVAL));
        assert_eq!(sysfs_memparse("64k", "B"), Err(EINVAL));
        assert_eq!(sysfs_memparse("64m", "MiB"), Err(EINVAL));
        // a "B" without "i" makes the unit decimal
        assert_eq!(sysfs_memparse("4MB", "B"), Ok(4_000_000));
        assert_eq!(sysfs_memparse("8GB", "MiB"), Ok(8_000_000_000));
        assert_eq!(sysfs_memparse("2kB", "B"), Ok(2000));
        assert_eq!(sysfs_memparse("100B", "MiB"), Ok(100));
        // no fraction without a unit
        assert_eq!(sysfs_memparse("1.5", "B"), Err(EINVAL));
        // three decimals at most
        assert_eq!(sysfs_memparse("1.0009K", "B"), Ok(1024));
        assert_eq!(sysfs_memparse("20E", "B"), Err(EOVERFLOW));
        assert_eq!(sysfs_memparse("15E", "B"), Ok(15 << 60));
        assert_eq!(sysfs_memparse("4BB", "B"), Err(EINVAL));
    }
}
