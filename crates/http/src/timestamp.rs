//! Timestamps as the API and the pages write them.

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

/// RFC 3339 in UTC with milliseconds (`2026-11-23T12:00:00.000Z`). Written digit by digit for
/// the years 0 to 9999 (every answer writes many timestamps; chrono's formatter is the
/// formatting machinery per field), by chrono for any other.
pub fn timestamp(at: DateTime<Utc>) -> String {
    let year = at.year();
    if !(0..=9999).contains(&year) {
        return at.to_rfc3339_opts(SecondsFormat::Millis, true);
    }
    let mut out = [0u8; 24];
    let mut put = |at: usize, value: u32, digits: usize| {
        let mut v = value;
        for i in (0..digits).rev() {
            out[at + i] = b'0' + u8::try_from(v % 10).unwrap_or(0);
            v /= 10;
        }
    };
    put(0, year.unsigned_abs(), 4);
    put(5, at.month(), 2);
    put(8, at.day(), 2);
    put(11, at.hour(), 2);
    put(14, at.minute(), 2);
    put(17, at.second(), 2);
    // A leap second's nanoseconds run past a second: chrono writes them as 60.xxx.
    put(20, (at.nanosecond() / 1_000_000).min(1999) % 1000, 3);
    if at.nanosecond() >= 1_000_000_000 {
        put(17, at.second() + 1, 2);
    }
    for (i, c) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (23, b'Z')] {
        out[i] = c;
    }
    // Every byte is an ASCII digit or separator.
    String::from_utf8(out.to_vec()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn written_as_chrono_writes_it() {
        let chrono = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut at = Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap();
        // Every few hours over two centuries, with odd milliseconds.
        for step in 0..200_000i64 {
            assert_eq!(timestamp(at), chrono(at), "{step}");
            at += chrono::Duration::milliseconds(31_536_000 + 7 * step);
        }
        for (y, m, d, h, mi, s, ms) in
            [(0, 1, 1, 0, 0, 0, 0), (9999, 12, 31, 23, 59, 59, 999), (2026, 2, 28, 9, 5, 3, 1)]
        {
            let at = Utc.with_ymd_and_hms(y, m, d, h, mi, s).unwrap() + chrono::Duration::milliseconds(ms);
            assert_eq!(timestamp(at), chrono(at));
        }
        let far = Utc.with_ymd_and_hms(10_000, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(timestamp(far), chrono(far));
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_milli_opt(23, 59, 59, 1_500)
            .unwrap()
            .and_utc();
        assert_eq!(timestamp(leap), chrono(leap));
    }
}
