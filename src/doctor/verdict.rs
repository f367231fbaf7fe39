//! Verdicts, checks and the report the doctor prints.

use std::fmt;

use serde::Serialize;

use super::budget::LinkBudget;

/// The outcome of one check. Ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// As it should be.
    Ok,
    /// Does not apply to this box (e.g. USB checks on a PCIe box).
    Skip,
    /// Works, but worse than it could (a slow link, a world-writable node).
    Warn,
    /// Broken: the runtime cannot use the part until it is fixed.
    Fail,
}

impl Verdict {
    /// The word printed in the table.
    pub fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Skip => "skip",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.word())
    }
}

/// One check: a one-line verdict and, when it is not ok, what fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable dotted name, e.g. `pcie.nodes`.
    pub id: &'static str,
    pub verdict: Verdict,
    /// One line: what was found.
    pub detail: String,
    /// The command (or step) that fixes a failed or warned check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(id: &'static str, detail: impl Into<String>) -> Self {
        Self::new(id, Verdict::Ok, detail, None::<String>)
    }

    pub fn skip(id: &'static str, detail: impl Into<String>) -> Self {
        Self::new(id, Verdict::Skip, detail, None::<String>)
    }

    pub fn warn(id: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(id, Verdict::Warn, detail, Some(fix))
    }

    pub fn fail(id: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(id, Verdict::Fail, detail, Some(fix))
    }

    /// `Ok` when `fine`, otherwise `Warn` with `fix`.
    pub fn ok_or_warn(
        fine: bool,
        id: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        let (verdict, fix) = match fine {
            true => (Verdict::Ok, None),
            false => (Verdict::Warn, Some(fix)),
        };
        Self::new(id, verdict, detail, fix)
    }

    /// No part on this transport: `Skip` saying `skip_detail` when the other
    /// transport has one, otherwise `Fail` saying `fail_detail`, with `fix`.
    pub fn missing_part(
        other_present: bool,
        id: &'static str,
        skip_detail: &str,
        fail_detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        if other_present {
            Self::skip(id, skip_detail)
        } else {
            Self::fail(id, fail_detail, fix)
        }
    }

    fn new(
        id: &'static str,
        verdict: Verdict,
        detail: impl Into<String>,
        fix: Option<impl Into<String>>,
    ) -> Self {
        Self {
            id,
            verdict,
            detail: detail.into(),
            fix: fix.map(Into::into),
        }
    }
}

/// Every check of one run, and the link budget.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<LinkBudget>,
}

impl Report {
    /// The worst verdict (ok when there are no checks).
    pub fn worst(&self) -> Verdict {
        self.checks
            .iter()
            .map(|c| c.verdict)
            .max()
            .unwrap_or(Verdict::Ok)
    }

    /// Whether any check failed (warnings do not fail a run).
    pub fn failed(&self) -> bool {
        self.worst() == Verdict::Fail
    }

    /// No check failed: the box can drive the part (warnings allowed).
    pub fn passed(&self) -> bool {
        !self.failed()
    }

    /// The check with this id.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}

impl fmt::Display for Report {
    /// One line per check (`verdict  id  detail`), the fix indented below it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
        for c in &self.checks {
            writeln!(f, "{:<4}  {:<width$}  {}", c.verdict, c.id, c.detail)?;
            if let Some(fix) = &c.fix {
                writeln!(f, "{:<4}  {:<width$}  fix: {fix}", "", "")?;
            }
        }
        let count = |v| self.checks.iter().filter(|c| c.verdict == v).count();
        write!(
            f,
            "{} ok, {} warn, {} fail, {} skip",
            count(Verdict::Ok),
            count(Verdict::Warn),
            count(Verdict::Fail),
            count(Verdict::Skip)
        )
    }
}
