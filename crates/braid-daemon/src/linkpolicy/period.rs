//! When a data cap's period began, in the link's local time (carriers reset caps on a day
//! and hour of the subscriber's clock). Pure functions of the time given, so that tests can
//! pick any date and zone.

use super::{Cap, CapPeriod};
use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone};

/// The start of the period that `now` falls in.
pub fn period_start<Tz: TimeZone>(cap: &Cap, now: &DateTime<Tz>) -> DateTime<Tz> {
    let tz = now.timezone();
    let today = now.date_naive();
    let at = |d: NaiveDate| -> DateTime<Tz> {
        let naive = d.and_hms_opt(cap.reset_hour.min(23), 0, 0).expect("an hour of 0-23 exists");
        // A reset hour skipped by a daylight-saving jump starts at the first instant after it.
        tz.from_local_datetime(&naive)
            .earliest()
            .or_else(|| tz.from_local_datetime(&(naive + chrono::Duration::hours(1))).earliest())
            .unwrap_or_else(|| tz.from_utc_datetime(&naive))
    };
    match cap.period {
        CapPeriod::Daily => {
            let s = at(today);
            if s <= *now {
                s
            } else {
                at(today - Days::new(1))
            }
        }
        CapPeriod::Weekly => {
            let want = cap.reset_day.clamp(1, 7);
            let have = today.weekday().number_from_monday();
            let back = (have + 7 - want) % 7;
            let s = at(today - Days::new(u64::from(back)));
            if s <= *now {
                s
            } else {
                at(today - Days::new(u64::from(back) + 7))
            }
        }
        CapPeriod::Monthly => {
            let this = month_day(today.year(), today.month(), cap.reset_day);
            let s = at(this);
            if s <= *now {
                s
            } else {
                let prev = today.with_day(1).expect("day 1 exists") - Months::new(1);
                at(month_day(prev.year(), prev.month(), cap.reset_day))
            }
        }
    }
}

/// Day `day` of a month, or its last day when the month is shorter.
fn month_day(year: i32, month: u32, day: u32) -> NaiveDate {
    (1..=day.clamp(1, 31))
        .rev()
        .find_map(|d| NaiveDate::from_ymd_opt(year, month, d))
        .expect("day 1 of a month exists")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkpolicy::CapAction;
    use chrono::{FixedOffset, Utc};

    fn cap(period: CapPeriod, day: u32, hour: u32) -> Cap {
        Cap { bytes: 1, period, reset_day: day, reset_hour: hour, action: CapAction::Demote }
    }

    fn t(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    #[test]
    fn daily_weekly_monthly_in_local_time() {
        // 2026-11-24 is a Tuesday.
        let now = t("2026-11-24T10:30:00+02:00");
        let c = cap(CapPeriod::Daily, 1, 3);
        assert_eq!(period_start(&c, &now), t("2026-11-24T03:00:00+02:00"));
        let c = cap(CapPeriod::Daily, 1, 12);
        assert_eq!(period_start(&c, &now), t("2026-11-23T12:00:00+02:00"));
        let c = cap(CapPeriod::Weekly, 1, 0);
        assert_eq!(period_start(&c, &now), t("2026-11-23T00:00:00+02:00"));
        let c = cap(CapPeriod::Weekly, 2, 11);
        assert_eq!(period_start(&c, &now), t("2026-11-17T11:00:00+02:00"));
        let c = cap(CapPeriod::Monthly, 1, 0);
        assert_eq!(period_start(&c, &now), t("2026-11-01T00:00:00+02:00"));
        let c = cap(CapPeriod::Monthly, 25, 0);
        assert_eq!(period_start(&c, &now), t("2026-10-25T00:00:00+02:00"));
        // Day 31 in a 30-day month is its last day; in January back to December 31.
        let c = cap(CapPeriod::Monthly, 31, 0);
        assert_eq!(period_start(&c, &now), t("2026-10-31T00:00:00+02:00"));
        assert_eq!(period_start(&c, &t("2026-12-01T00:00:00+02:00")), t("2026-11-30T00:00:00+02:00"));
        assert_eq!(period_start(&c, &t("2027-01-05T00:00:00+02:00")), t("2026-12-31T00:00:00+02:00"));
        // The reset instant itself belongs to the new period.
        let c = cap(CapPeriod::Daily, 1, 0);
        assert_eq!(period_start(&c, &t("2026-11-24T00:00:00Z")), t("2026-11-24T00:00:00Z"));
        let _ = period_start(&c, &Utc::now());
    }
}
