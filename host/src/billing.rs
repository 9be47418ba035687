//! Money rules of the spec, as pure functions over integer cents.
//!
//! - A completed `qualia` scan costs 250 cents, charged once, when it is first fetched.
//! - The first 250 cents of each UTC calendar month are free; charges use the free credit
//!   first, then the prepaid deposit.
//! - Failed and cancelled scans are never charged.
//! - A new scan is refused (402) when the available funds minus what queued, processing and
//!   completed-but-unfetched scans will cost cannot cover it.
//!
//! The SQL that applies these rules atomically is in `store::wallet` and `store::scans`.

use chrono::{DateTime, Datelike, Utc};

/// Monthly free allowance, in cents.
pub const FREE_MONTHLY_CENTS: i64 = 250;

/// The free-credit period a moment belongs to, `YYYY-MM` (UTC).
pub fn period_of(now: DateTime<Utc>) -> String {
    format!("{:04}-{:02}", now.year(), now.month())
}

/// First day of the free-credit month (UTC), `YYYY-MM-DD`.
pub fn period_start(now: DateTime<Utc>) -> String {
    format!("{:04}-{:02}-01", now.year(), now.month())
}

/// A wallet as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletState {
    pub deposit_cents: i64,
    /// The month `free_used_cents` belongs to.
    pub free_period: String,
    pub free_used_cents: i64,
}

impl WalletState {
    /// Free credit left in `period`; a wallet last charged in an earlier month has it all.
    pub fn free_remaining(&self, period: &str) -> i64 {
        if self.free_period == period {
            (FREE_MONTHLY_CENTS - self.free_used_cents).max(0)
        } else {
            FREE_MONTHLY_CENTS
        }
    }

    /// Deposit plus this month's free credit: everything charged so far is reflected.
    pub fn available(&self, period: &str) -> i64 {
        self.deposit_cents + self.free_remaining(period)
    }

    /// Whether one more scan at `price` fits once `owed` (cost of unsettled scans) is set aside.
    pub fn can_cover(&self, period: &str, owed: i64, price: i64) -> bool {
        self.available(period) - owed >= price
    }

    /// Applies a charge of `price` in `period`: free credit first, then the deposit.
    /// Returns the new state and the `(free, deposit)` split.
    pub fn charge(&self, period: &str, price: i64) -> (Self, i64, i64) {
        let free_left = self.free_remaining(period);
        let free_part = price.min(free_left);
        let deposit_part = price - free_part;
        let used_before = if self.free_period == period {
            self.free_used_cents
        } else {
            0
        };
        let next = Self {
            deposit_cents: self.deposit_cents - deposit_part,
            free_period: period.to_owned(),
            free_used_cents: used_before + free_part,
        };
        (next, free_part, deposit_part)
    }
}

/// Parses a dollar amount such as `20`, `20.5` or `20.00` into cents, exactly (no floats).
///
/// # Errors
/// Negative, more than two decimals, non-numeric, or over one million dollars.
pub fn parse_usd(text: &str) -> Result<i64, String> {
    let t = text.trim().trim_start_matches('$');
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a dollar amount like 20.00"));
    }
    if frac.len() > 2 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} has more than two decimals"));
    }
    let whole: i64 = whole
        .parse()
        .map_err(|_| format!("{text:?} is too large"))?;
    let frac_cents: i64 = match frac.len() {
        0 => 0,
        1 => frac.parse::<i64>().unwrap_or(0) * 10,
        _ => frac.parse::<i64>().unwrap_or(0),
    };
    if whole > 1_000_000 {
        return Err("amounts over 1,000,000 USD are refused".into());
    }
    Ok(whole * 100 + frac_cents)
}

/// Cents as a JSON number of dollars (2.5 for 250). Exact for every cent value we store.
pub fn usd(cents: i64) -> f64 {
    cents as f64 / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn wallet(deposit: i64, period: &str, used: i64) -> WalletState {
        WalletState {
            deposit_cents: deposit,
            free_period: period.into(),
            free_used_cents: used,
        }
    }

    #[test]
    fn periods_are_utc_months() {
        let t = Utc
            .with_ymd_and_hms(2026, 12, 31, 23, 59, 59)
            .single()
            .expect("valid");
        assert_eq!(period_of(t), "2026-12");
        assert_eq!(period_start(t), "2026-12-01");
        let t = Utc
            .with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
            .single()
            .expect("valid");
        assert_eq!(period_of(t), "2027-01");
    }

    #[test]
    fn free_credit_first_then_deposit() {
        let w = wallet(1000, "2026-11", 0);
        let (w, free, dep) = w.charge("2026-11", 250);
        assert_eq!((free, dep), (250, 0));
        assert_eq!(w.deposit_cents, 1000);
        let (w, free, dep) = w.charge("2026-11", 250);
        assert_eq!((free, dep), (0, 250));
        assert_eq!(w.deposit_cents, 750);
        assert_eq!(w.free_remaining("2026-11"), 0);
        // The month rolls over: the free credit is back.
        assert_eq!(w.free_remaining("2026-12"), 250);
        let (w, free, dep) = w.charge("2026-12", 250);
        assert_eq!((free, dep), (250, 0));
        assert_eq!(
            (w.free_period.as_str(), w.free_used_cents),
            ("2026-12", 250)
        );
    }

    #[test]
    fn split_charge_when_free_credit_is_partly_used() {
        let w = wallet(500, "2026-11", 100);
        let (w, free, dep) = w.charge("2026-11", 250);
        assert_eq!((free, dep), (150, 100));
        assert_eq!(w.deposit_cents, 400);
    }

    #[test]
    fn cover_check_counts_owed_scans() {
        let w = wallet(0, "2026-11", 0);
        assert!(w.can_cover("2026-11", 0, 250));
        assert!(!w.can_cover("2026-11", 250, 250));
        let w = wallet(249, "2026-11", 250);
        assert!(!w.can_cover("2026-11", 0, 250));
        let w = wallet(500, "2026-11", 0);
        assert!(w.can_cover("2026-11", 500, 250));
        assert!(!w.can_cover("2026-11", 750, 250));
    }

    #[test]
    fn usd_parsing_is_exact() {
        assert_eq!(parse_usd("20.00"), Ok(2000));
        assert_eq!(parse_usd("20"), Ok(2000));
        assert_eq!(parse_usd("0.5"), Ok(50));
        assert_eq!(parse_usd("$2.50"), Ok(250));
        assert!(parse_usd("-1").is_err());
        assert!(parse_usd("1.005").is_err());
        assert!(parse_usd("abc").is_err());
        assert!(parse_usd("2000000").is_err());
        assert_eq!(usd(250), 2.5);
    }
}
