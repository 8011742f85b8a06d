//! A small columnar table: how time series and traces leave the core (the Python layer turns
//! each into a pandas DataFrame, the CLI into CSV).

use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Column {
    F64(Vec<f64>),
    U64(Vec<u64>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Named columns of equal length.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// Writes the table as CSV.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let names: Vec<&str> = self.columns.iter().map(|(n, _)| n.as_str()).collect();
        out.push_str(&names.join(","));
        out.push('\n');
        for r in 0..self.rows() {
            for (k, (_, c)) in self.columns.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                match c {
                    Column::F64(v) => out.push_str(&format!("{}", v[r])),
                    Column::U64(v) => out.push_str(&v[r].to_string()),
                    Column::Str(v) => out.push_str(&v[r]),
                }
            }
            out.push('\n');
        }
        out
    }
}
