//! LeRobot's parquet tables, read with the parquet crate of arrow-rs (its record API, no
//! arrow): only the numeric columns gm needs, each as `f64` (indices stay exact below 2^53).

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::schema::types::Type;

use super::error::LeRobotError;

/// Numeric columns of one table, by name, all of `rows` values.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Columns {
    pub(crate) rows: usize,
    values: HashMap<String, Vec<f64>>,
}

impl Columns {
    /// Column `name` (present: [`read_columns`] checked).
    pub(crate) fn get(&self, name: &str) -> &[f64] {
        self.values.get(name).map_or(&[], Vec::as_slice)
    }

    /// Appends another table's rows (same columns).
    pub(crate) fn extend(&mut self, other: Columns) {
        self.rows += other.rows;
        for (k, v) in other.values {
            self.values.entry(k).or_default().extend(v);
        }
    }
}

/// Reads the `wanted` columns of the parquet file at `path`.
pub(crate) fn read_columns(path: &Path, wanted: &[&str]) -> Result<Columns, LeRobotError> {
    let parquet = |message: String| LeRobotError::Table {
        path: path.to_path_buf(),
        message,
    };
    let file = File::open(path).map_err(|source| LeRobotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(|e| parquet(e.to_string()))?;
    let schema = reader.metadata().file_metadata().schema();
    let fields: Vec<_> = schema
        .get_fields()
        .iter()
        .filter(|f| wanted.contains(&f.name()))
        .cloned()
        .collect();
    if let Some(missing) = wanted
        .iter()
        .find(|w| !fields.iter().any(|f| f.name() == **w))
    {
        return Err(parquet(format!("no column {missing:?}")));
    }
    let projection = Type::group_type_builder(schema.name())
        .with_fields(fields)
        .build()
        .map_err(|e| parquet(e.to_string()))?;
    let rows = reader
        .get_row_iter(Some(projection))
        .map_err(|e| parquet(e.to_string()))?;
    let mut out = Columns::default();
    for (r, row) in rows.enumerate() {
        let row = row.map_err(|e| parquet(format!("row {r}: {e}")))?;
        for (name, field) in row.get_column_iter() {
            let v = number(field).ok_or_else(|| {
                parquet(format!("row {r}: column {name:?} is {field}, not a number"))
            })?;
            out.values.entry(name.clone()).or_default().push(v);
        }
        out.rows += 1;
    }
    Ok(out)
}

fn number(field: &Field) -> Option<f64> {
    Some(match *field {
        Field::Byte(v) => f64::from(v),
        Field::Short(v) => f64::from(v),
        Field::Int(v) => f64::from(v),
        Field::Long(v) => v as f64,
        Field::UByte(v) => f64::from(v),
        Field::UShort(v) => f64::from(v),
        Field::UInt(v) => f64::from(v),
        Field::ULong(v) => v as f64,
        Field::Float(v) => f64::from(v),
        Field::Double(v) => v,
        _ => return None,
    })
}
