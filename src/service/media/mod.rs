//! Photos: uploads turned into stored renditions (`processing`).

pub mod processing;
