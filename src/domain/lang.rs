//! The languages the service writes text in for a reader (`?lang=`): a
//! post's time as text, a device's display name.

use crate::error::AppError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    Zh,
    En,
}

/// What `Lang::parse` accepts: the two languages, bare or with the regions
/// phones report. Empty is the default (no text).
pub const LANG_PATTERN: &str = "^(zh|zh-CN|zh-Hans|en|en-US|en-GB)?$";

impl Lang {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        match raw {
            "zh" | "zh-CN" | "zh-Hans" => Ok(Lang::Zh),
            "en" | "en-US" | "en-GB" => Ok(Lang::En),
            _ => Err(AppError::invalid(
                "lang",
                "must be zh or en (or zh-CN, zh-Hans, en-US, en-GB)",
            )),
        }
    }
}
