//! The table that turns raw device models ("ONEPLUS A6000") into display
//! names ("一加 6"). Every instance keeps the whole table in memory, so a
//! page of posts costs no store round trip for device names; an admin's
//! change bumps a counter in the live store that every instance polls, and
//! each reloads the table when it moves.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::jobs::shared_tables::SharedCopy;
use super::Context;
use crate::domain::device_models::{DeviceKey, DeviceModel, DeviceModelRequest, DisplayName};
use crate::domain::lang::Lang;
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::store::{DeviceModelDoc, DocStore, SharedTable};

pub const MAX_IMPORT_ROWS: usize = 10_000;
/// Enough for `MAX_IMPORT_ROWS` rows of typical length.
pub const MAX_IMPORT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Default)]
pub struct DeviceNames {
    table: RwLock<Arc<HashMap<String, DisplayName>>>,
    /// The live store's counter at the last reload; `u64::MAX` before any.
    seen_version: AtomicU64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceModelView {
    pub model: String,
    pub display_name: DisplayName,
    pub brand: String,
    pub updated_at: i64,
    pub updated_by: i64,
}

impl From<DeviceModelDoc> for DeviceModelView {
    fn from(d: DeviceModelDoc) -> Self {
        Self {
            model: d.key,
            display_name: d.display_name,
            brand: d.brand,
            updated_at: d.updated_at,
            updated_by: d.updated_by,
        }
    }
}

impl DeviceNames {
    pub fn new() -> Self {
        Self {
            table: RwLock::default(),
            seen_version: AtomicU64::new(u64::MAX),
        }
    }

    /// Builds a table from rows directly (benchmarks, tests).
    pub fn from_rows(rows: impl IntoIterator<Item = (String, DisplayName)>) -> Self {
        let me = Self::new();
        me.replace(rows.into_iter().collect());
        me
    }

    fn replace(&self, map: HashMap<String, DisplayName>) {
        if let Ok(mut t) = self.table.write() {
            *t = Arc::new(map);
        }
    }

    /// The display name in `lang`, or the raw model when it is not mapped.
    pub fn display(&self, raw: &str, lang: Lang) -> String {
        if raw.is_empty() {
            return String::new();
        }
        let table = match self.table.read() {
            Ok(t) => t.clone(),
            Err(_) => return raw.to_string(),
        };
        match table.get(&DeviceKey::normalize(raw)) {
            Some(name) => match lang {
                Lang::Zh => name.zh.clone(),
                Lang::En => name.en.clone(),
            },
            None => raw.to_string(),
        }
    }
}

#[async_trait::async_trait]
impl SharedCopy for DeviceNames {
    const TABLE: SharedTable = SharedTable::DeviceModels;

    fn seen_version(&self) -> &AtomicU64 {
        &self.seen_version
    }

    async fn reload(&self, docs: &dyn DocStore) -> AppResult<()> {
        let rows = docs.device_models().await?;
        self.replace(rows.into_iter().map(|d| (d.key, d.display_name)).collect());
        Ok(())
    }
}

/// Tells every instance (this one at once) that the table changed.
async fn announce(ctx: &Context) -> AppResult<()> {
    if let Err(e) = ctx.live.bump_table_version(SharedTable::DeviceModels).await {
        tracing::warn!(error = %e, "could not announce a device table change; other instances pick it up on their next successful poll");
    }
    ctx.devices.reload(ctx.docs.as_ref()).await
}

pub async fn list(ctx: &Context) -> AppResult<Vec<DeviceModelView>> {
    Ok(ctx
        .docs
        .device_models()
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

fn to_doc(m: DeviceModel, admin: i64, at: i64) -> DeviceModelDoc {
    DeviceModelDoc {
        key: m.key.as_str().to_string(),
        display_name: m.display_name,
        brand: m.brand,
        updated_at: at,
        updated_by: admin,
    }
}

pub async fn upsert(
    ctx: &Context,
    admin: i64,
    model: &str,
    req: DeviceModelRequest,
) -> AppResult<DeviceModelView> {
    let doc = to_doc(DeviceModel::parse("", model, req)?, admin, now_ms());
    ctx.docs
        .upsert_device_models(std::slice::from_ref(&doc))
        .await?;
    announce(ctx).await?;
    Ok(doc.into())
}

pub async fn delete(ctx: &Context, model: &str) -> AppResult<()> {
    let key = DeviceKey::parse("model", model)?;
    if !ctx.docs.delete_device_model(key.as_str()).await? {
        return Err(AppError::NotFound("device model"));
    }
    announce(ctx).await
}

/// One row of a JSON import.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportRow {
    #[schema(schema_with = crate::domain::device_models::model_schema)]
    model: String,
    #[serde(flatten)]
    #[schema(inline)]
    rest: DeviceModelRequest,
}

/// Which way an import body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    Json,
    Csv,
}

/// Parses a whole import before anything is written: one bad row refuses
/// the import, naming the row, and changes nothing.
pub fn parse_import(body: &[u8], format: ImportFormat) -> AppResult<Vec<DeviceModel>> {
    let models = match format {
        ImportFormat::Json => {
            let rows: Vec<serde_json::Value> = serde_json::from_slice(body)
                .map_err(|e| AppError::invalid("body", format!("expected a JSON array: {e}")))?;
            check_rows(rows.len())?;
            rows.into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let row: ImportRow = serde_json::from_value(v)
                        .map_err(|e| AppError::invalid(format!("[{i}]"), e.to_string()))?;
                    DeviceModel::parse(&format!("[{i}]."), &row.model, row.rest)
                })
                .collect::<AppResult<Vec<_>>>()?
        }
        ImportFormat::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .trim(csv::Trim::All)
                .flexible(false)
                .from_reader(body);
            let headers = reader
                .headers()
                .map_err(|e| AppError::invalid("body", format!("CSV header: {e}")))?
                .clone();
            let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
            let (Some(m), Some(zh), Some(en)) = (col("model"), col("zh"), col("en")) else {
                return Err(AppError::invalid(
                    "body",
                    "CSV needs a header row with model, zh, en (and optionally brand)",
                ));
            };
            let brand = col("brand");
            let mut out = Vec::new();
            for (i, rec) in reader.records().enumerate() {
                let rec = rec.map_err(|e| AppError::invalid(format!("[{i}]"), e.to_string()))?;
                check_rows(i + 1)?;
                let get = |j: usize| rec.get(j).unwrap_or("").to_string();
                let req = DeviceModelRequest {
                    display_name: DisplayName {
                        zh: get(zh),
                        en: get(en),
                    },
                    brand: brand.map(get),
                };
                out.push(DeviceModel::parse(&format!("[{i}]."), &get(m), req)?);
            }
            out
        }
    };
    if models.is_empty() {
        return Err(AppError::invalid("body", "no rows to import"));
    }
    Ok(models)
}

fn check_rows(n: usize) -> AppResult<()> {
    if n > MAX_IMPORT_ROWS {
        return Err(AppError::invalid(
            "body",
            format!("at most {MAX_IMPORT_ROWS} rows per import"),
        ));
    }
    Ok(())
}

/// The rows an import writes: later rows win over earlier rows of the same
/// model, as in a sequence of PUTs.
fn last_row_per_model(models: Vec<DeviceModel>) -> Vec<DeviceModel> {
    let mut by_key: HashMap<String, DeviceModel> = HashMap::new();
    for m in models {
        by_key.insert(m.key.as_str().to_string(), m);
    }
    let mut rows: Vec<DeviceModel> = by_key.into_values().collect();
    rows.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    rows
}

pub async fn import(ctx: &Context, admin: i64, models: Vec<DeviceModel>) -> AppResult<usize> {
    let at = now_ms();
    let docs: Vec<DeviceModelDoc> = last_row_per_model(models)
        .into_iter()
        .map(|m| to_doc(m, admin, at))
        .collect();
    ctx.docs.upsert_device_models(&docs).await?;
    announce(ctx).await?;
    Ok(docs.len())
}

/// A row of the table as an import would write it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelNames {
    pub display_name: DisplayName,
    pub brand: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddedModel {
    pub model: String,
    pub after: ModelNames,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedModel {
    pub model: String,
    pub before: ModelNames,
    pub after: ModelNames,
}

/// What an import would do to the table, without doing it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceModelsPreview {
    /// Models not in the table yet, by model.
    pub added: Vec<AddedModel>,
    /// Models whose names or brand would change, by model.
    pub changed: Vec<ChangedModel>,
    /// Rows the table holds already as they are.
    pub unchanged: usize,
}

/// Compares a parsed import with the table: the same rows `import` would
/// write, so applying right after a preview does what it showed.
pub async fn preview_import(
    ctx: &Context,
    models: Vec<DeviceModel>,
) -> AppResult<DeviceModelsPreview> {
    let table: HashMap<String, DeviceModelDoc> = ctx
        .docs
        .device_models()
        .await?
        .into_iter()
        .map(|d| (d.key.clone(), d))
        .collect();
    let mut preview = DeviceModelsPreview {
        added: Vec::new(),
        changed: Vec::new(),
        unchanged: 0,
    };
    for m in last_row_per_model(models) {
        let model = m.key.as_str().to_string();
        let after = ModelNames {
            display_name: m.display_name,
            brand: m.brand,
        };
        match table.get(&model) {
            None => preview.added.push(AddedModel { model, after }),
            Some(d) if d.display_name == after.display_name && d.brand == after.brand => {
                preview.unchanged += 1
            }
            Some(d) => preview.changed.push(ChangedModel {
                model,
                before: ModelNames {
                    display_name: d.display_name.clone(),
                    brand: d.brand.clone(),
                },
                after,
            }),
        }
    }
    Ok(preview)
}

/// What a CSV import may look like, for the OpenAPI document: the header
/// row, then rows with as many fields, each without commas, quotes or line
/// breaks, names and models starting with a visible character, within
/// their lengths. The parser also takes quoted fields and any column order;
/// this is the plain form every spreadsheet writes.
pub fn csv_import_schema() -> utoipa::openapi::Object {
    const FIELD: &str = r#"[^,"\u0000-\u001F\u007F-\u009F]"#;
    const VISIBLE: &str =
        r#"[^,"\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"#;
    let model = format!(
        "{VISIBLE}{FIELD}{{0,{}}}",
        crate::domain::device_models::MAX_MODEL_CHARS - 1
    );
    let name = format!(
        "{VISIBLE}{FIELD}{{0,{}}}",
        crate::domain::device_models::MAX_DISPLAY_NAME_CHARS - 1
    );
    let brand = format!(
        "{FIELD}{{0,{}}}",
        crate::domain::device_models::MAX_DISPLAY_NAME_CHARS
    );
    let pattern = format!(
        "^(model,zh,en(\\r?\\n{model},{name},{name})+|model,zh,en,brand(\\r?\\n{model},{name},{name},{brand})+)(\\r?\\n)?$"
    );
    crate::domain::StringSchema {
        pattern: Some(pattern),
        // The row limit is not in the pattern: a bounded repeat of a
        // group this size is past what regex engines will compile.
        description: Some(format!("at most {MAX_IMPORT_ROWS} rows")),
        ..Default::default()
    }
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_csv_of_the_documented_shape_imports() {
        let schema = serde_json::to_value(csv_import_schema()).unwrap();
        let shape = regex::Regex::new(schema["pattern"].as_str().unwrap()).unwrap();
        let samples = [
            "model,zh,en\nONEPLUS A6000,一加 6,OnePlus 6",
            "model,zh,en\r\nx,y,z\r\n",
            "model,zh,en,brand\nSM-G9910,三星 S21 ,Galaxy S21,\nM2004,红米,Redmi,Xiaomi\n",
            "model,zh,en\nx\u{3000},y ,z",
        ];
        for csv in samples {
            assert!(shape.is_match(csv), "{csv:?}");
            parse_import(csv.as_bytes(), ImportFormat::Csv).unwrap();
        }
        for not_shaped in [
            "model,zh,en",
            "model,zh,en\n,y,z",
            "model,zh,en\n\"a\",y,z",
            "zh,en,model\nx,y,z",
        ] {
            assert!(!shape.is_match(not_shaped), "{not_shaped:?}");
        }
    }

    #[test]
    fn unmapped_models_show_raw_and_mapped_ones_by_language() {
        let names = DeviceNames::from_rows([(
            "oneplus a6000".to_string(),
            DisplayName {
                zh: "一加 6".into(),
                en: "OnePlus 6".into(),
            },
        )]);
        assert_eq!(names.display("ONEPLUS  A6000", Lang::Zh), "一加 6");
        assert_eq!(names.display("oneplus a6000", Lang::En), "OnePlus 6");
        assert_eq!(names.display("Redmi 6", Lang::Zh), "Redmi 6");
        assert_eq!(names.display("", Lang::Zh), "");
    }

    #[test]
    fn csv_and_json_imports_parse_the_same_rows() {
        let csv = "model,zh,en,brand\nONEPLUS A6000,一加 6,OnePlus 6,OnePlus\n\"M2004J19C\",\"红米 9\",\"Redmi 9\",Xiaomi\n";
        let json = r#"[{"model":"ONEPLUS A6000","displayName":{"zh":"一加 6","en":"OnePlus 6"},"brand":"OnePlus"},
                       {"model":"M2004J19C","displayName":{"zh":"红米 9","en":"Redmi 9"},"brand":"Xiaomi"}]"#;
        let a = parse_import(csv.as_bytes(), ImportFormat::Csv).unwrap();
        let b = parse_import(json.as_bytes(), ImportFormat::Json).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[1].key.as_str(), "m2004j19c");
    }

    #[test]
    fn one_bad_row_refuses_the_import_and_names_the_row() {
        let csv = "model,zh,en\nA,甲,A\n,乙,B\n";
        match parse_import(csv.as_bytes(), ImportFormat::Csv) {
            Err(AppError::InvalidInput { field, .. }) => assert_eq!(field, "[1].model"),
            other => panic!("{other:?}"),
        }
        match parse_import(b"model,name\nA,B\n", ImportFormat::Csv) {
            Err(AppError::InvalidInput { field, .. }) => assert_eq!(field, "body"),
            other => panic!("{other:?}"),
        }
        assert!(parse_import(b"{}", ImportFormat::Json).is_err());
        assert!(parse_import(b"[]", ImportFormat::Json).is_err());
    }
}
