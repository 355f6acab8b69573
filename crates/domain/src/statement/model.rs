//! A merchant's statement setting, the month a statement covers, and the statement itself.

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use crate::export::model::{ExportFilters, ExportSpec, ExportType};
use crate::ids::{EmailId, ExportId, PublicToken, StatementId};
use crate::mode::Scope;

/// Where a merchant (in one mode) wants its monthly statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementSetting {
    /// The merchant and mode.
    pub scope: Scope,
    /// The billing email the statement's links go to.
    pub email: String,
    /// When statements were asked for (the scope's time): the first statement is of the month
    /// this falls in.
    pub enabled_at: DateTime<Utc>,
}

/// A calendar month (in UTC): what a statement covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StatementMonth {
    /// Its first day.
    first: NaiveDate,
}

impl StatementMonth {
    /// The month of `year` and `month` (1 to 12); `None` otherwise.
    pub fn new(year: i32, month: u32) -> Option<Self> {
        NaiveDate::from_ymd_opt(year, month, 1).map(|first| Self { first })
    }

    /// The month `at` falls in.
    pub fn containing(at: DateTime<Utc>) -> Self {
        Self::of_day(at.date_naive())
    }

    /// The month of `day`.
    pub fn of_day(day: NaiveDate) -> Self {
        Self { first: day.with_day(1).unwrap_or(day) }
    }

    /// Its first day.
    pub fn first_day(self) -> NaiveDate {
        self.first
    }

    /// Reads `2026-11`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (y, m) = text.split_once('-')?;
        if y.len() != 4 || m.len() != 2 {
            return None;
        }
        Self::new(y.parse().ok()?, m.parse().ok()?)
    }

    /// The month before.
    pub fn previous(self) -> Self {
        Self { first: self.first.pred_opt().map_or(self.first, |d| d.with_day(1).unwrap_or(d)) }
    }

    /// The month after.
    pub fn next(self) -> Self {
        let (y, m) = if self.first.month() == 12 {
            (self.first.year() + 1, 1)
        } else {
            (self.first.year(), self.first.month() + 1)
        };
        Self::new(y, m).unwrap_or(self)
    }

    /// Its first instant (included).
    pub fn start(self) -> DateTime<Utc> {
        self.first.and_time(chrono::NaiveTime::MIN).and_utc()
    }

    /// The first instant of the month after (excluded).
    pub fn end(self) -> DateTime<Utc> {
        self.next().start()
    }

    /// Its name in words: `November 2026`.
    pub fn label(self) -> String {
        self.first.format("%B %Y").to_string()
    }

    /// The exports of a statement of this month, in the order of [`StatementFile::ALL`]: every
    /// invoice created and every payment detected in the month, in the newest schemas.
    pub fn export_specs(self) -> [ExportSpec; 2] {
        StatementFile::ALL.map(|file| {
            let export_type = file.export_type();
            ExportSpec {
                export_type,
                schema: export_type.newest_schema().to_owned(),
                from: self.start(),
                to: self.end(),
                filters: ExportFilters::default(),
            }
        })
    }
}

impl fmt::Display for StatementMonth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.first.format("%Y-%m"))
    }
}

/// The month whose statement is due at `now` (the scope's time) for `setting`: the month
/// before `now`'s, when statements were asked for before that month ended. (A merchant who
/// asks on the 15th gets the current month's statement on the 1st of the next, not the last
/// month's at once.)
pub fn due_month(setting: &StatementSetting, now: DateTime<Utc>) -> Option<StatementMonth> {
    let month = StatementMonth::containing(now).previous();
    (setting.enabled_at < month.end()).then_some(month)
}

/// One of a statement's two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatementFile {
    /// The `invoices` export of the month.
    Invoices,
    /// The `payments` export of the month.
    Payments,
}

impl StatementFile {
    /// Both files, in the order a statement lists them.
    pub const ALL: [Self; 2] = [Self::Invoices, Self::Payments];

    /// The file's name in its link: `invoices` or `payments`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invoices => "invoices",
            Self::Payments => "payments",
        }
    }

    /// The file's name in words (`Invoices`), as the statement's email names its link.
    pub fn label(self) -> &'static str {
        match self {
            Self::Invoices => "Invoices",
            Self::Payments => "Payments",
        }
    }

    /// Reads a name of [`StatementFile::as_str`].
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == value)
    }

    /// The export type the file is.
    pub fn export_type(self) -> ExportType {
        match self {
            Self::Invoices => ExportType::Invoices,
            Self::Payments => ExportType::Payments,
        }
    }
}

/// Where a statement stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatementStatus {
    /// Its files are being written.
    Exporting,
    /// Both files are ready and the email with their links is queued (the outbox sends it).
    Mailed,
    /// A file could not be written (or was cancelled): no email goes out.
    Failed,
}

impl StatementStatus {
    /// Every status.
    pub const ALL: [Self; 3] = [Self::Exporting, Self::Mailed, Self::Failed];

    /// The status as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exporting => "exporting",
            Self::Mailed => "mailed",
            Self::Failed => "failed",
        }
    }

    /// Reads a status as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// A month's statement of one merchant in one mode (at most one per month).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// `stm_...`.
    pub id: StatementId,
    /// The merchant and mode.
    pub scope: Scope,
    /// The month it covers.
    pub month: StatementMonth,
    /// Where its email goes (the setting's email when it was issued).
    pub email: String,
    /// The capability in its download links (never logged).
    pub token: PublicToken,
    /// The `invoices` export of the month.
    pub invoices_export: ExportId,
    /// The `payments` export of the month.
    pub payments_export: ExportId,
    /// Where it stands.
    pub status: StatementStatus,
    /// Why it failed.
    pub failure: Option<String>,
    /// The email with its links, once queued.
    pub email_id: Option<EmailId>,
    /// When it was issued (the scope's time).
    pub created_at: DateTime<Utc>,
}

impl Statement {
    /// The statement of `scope`'s `month` for `email`, issued at `now` with its two exports
    /// (`exports`: the invoices', then the payments'), waiting for them; its link's token is new.
    pub fn issued(
        crypto: &dyn crate::crypto::Crypto,
        (scope, month): (&Scope, StatementMonth),
        email: &str,
        exports: &[crate::export::model::Export; 2],
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: StatementId::generate(crypto),
            scope: scope.clone(),
            month,
            email: email.to_owned(),
            token: PublicToken::generate(crypto),
            invoices_export: exports[0].id.clone(),
            payments_export: exports[1].id.clone(),
            status: StatementStatus::Exporting,
            failure: None,
            email_id: None,
            created_at: now,
        }
    }

    /// The export behind `file`.
    pub fn export(&self, file: StatementFile) -> &ExportId {
        match file {
            StatementFile::Invoices => &self.invoices_export,
            StatementFile::Payments => &self.payments_export,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::MerchantId;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn months_run_across_years_and_read_back() {
        let dec = StatementMonth::new(2026, 12).unwrap();
        assert_eq!(dec.next(), StatementMonth::new(2027, 1).unwrap());
        assert_eq!(dec.next().previous(), dec);
        assert_eq!(StatementMonth::new(2026, 1).unwrap().previous(), StatementMonth::new(2025, 12).unwrap());
        assert_eq!(dec.start(), at("2026-12-01T00:00:00Z"));
        assert_eq!(dec.end(), at("2027-01-01T00:00:00Z"));
        assert_eq!((dec.to_string(), dec.label()), ("2026-12".to_owned(), "December 2026".to_owned()));
        assert_eq!(StatementMonth::parse("2026-12"), Some(dec));
        for bad in ["2026-13", "2026-1", "26-12", "2026/12", ""] {
            assert_eq!(StatementMonth::parse(bad), None, "{bad}");
        }
        assert_eq!(StatementMonth::containing(at("2024-02-29T23:59:59Z")), StatementMonth::new(2024, 2).unwrap());
        let [invoices, payments] = dec.export_specs();
        assert_eq!((invoices.export_type, payments.export_type), (ExportType::Invoices, ExportType::Payments));
        assert_eq!((invoices.from, invoices.to), (dec.start(), dec.end()));
        assert_eq!(invoices.file_name(), "invoices-20261201-20270101.csv");
    }

    #[test]
    fn the_month_before_is_due_once_statements_were_asked_for_before_it_ended() {
        let scope = Scope::new(MerchantId::from_trusted("mer_1".into()), crate::Mode::Test);
        let setting = |enabled: &str| StatementSetting {
            scope: scope.clone(),
            email: "f@example.com".into(),
            enabled_at: at(enabled),
        };
        let nov = StatementMonth::new(2026, 11).unwrap();
        // Asked for in November: November's statement is due from December 1st.
        assert_eq!(due_month(&setting("2026-11-15T10:00:00Z"), at("2026-12-01T00:00:00Z")), Some(nov));
        assert_eq!(due_month(&setting("2026-11-15T10:00:00Z"), at("2026-12-20T08:00:00Z")), Some(nov));
        // Asked for on December 1st: no November statement; December's on January 1st.
        assert_eq!(due_month(&setting("2026-12-01T00:00:00Z"), at("2026-12-01T09:00:00Z")), None);
        let dec = StatementMonth::new(2026, 12).unwrap();
        assert_eq!(due_month(&setting("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:01Z")), Some(dec));
    }
}
