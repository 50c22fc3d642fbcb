//! Keyset paging on PostgreSQL, as `src/sqlite/paging.rs` does it: a page is the rows after the
//! cursor's position in the listing's order, `LIMIT n + 1`; a cursor is the ordering key of the
//! page's last row (the listing's name and key values as JSON, hex-encoded).

use postgres::types::{FromSql, ToSql};
use postgres::Row;

use super::session::Sql;

use crate::backend::paging::{cursor_key, cursor_text, malformed_cursor, page_limit};
use crate::error::{Error, Result};
use crate::model::{Page, PageRequest};

/// A bound query parameter.
pub(super) type Param = Box<dyn ToSql + Sync>;

/// The type of one ordering key expression.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Int,
    Text,
}

/// One value of a row's ordering key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Key {
    Int(i64),
    Text(String),
}

impl Key {
    pub(super) fn text(value: &str) -> Self {
        Key::Text(value.to_owned())
    }

    fn into_param(self) -> Param {
        match self {
            Key::Int(value) => Box::new(value),
            Key::Text(value) => Box::new(value),
        }
    }
}

/// One listing's order.
pub(super) struct Listing {
    /// Names the listing inside its cursors, so that one listing refuses another's cursor.
    pub name: &'static str,
    /// The ordering key: comma-separated SQL expressions, all ascending, together unique.
    pub key: &'static str,
    /// The type of each key expression, in order.
    pub kinds: &'static [KeyKind],
}

impl Listing {
    /// Reads one page: `select` is a `SELECT ... WHERE <condition>` whose placeholders
    /// `$1..$n` take `params`; `map` reads an item from a row and `key_of` gives back the
    /// item's ordering key for the next cursor.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad limit (`page.limit`) or a cursor this listing did not
    /// return (`page.cursor`); otherwise what `map` returns.
    pub fn read<T>(
        &self,
        client: &mut impl Sql,
        select: &str,
        mut params: Vec<Param>,
        page: &PageRequest,
        mut map: impl FnMut(&Row) -> Result<T>,
        key_of: impl Fn(&T) -> Vec<Key>,
    ) -> Result<Page<T>> {
        let limit = page_limit(page)?;
        let key = self.key;
        let mut sql = select.to_owned();
        if let Some(cursor) = &page.cursor {
            let first = params.len() + 1;
            params.extend(self.decode(cursor)?.into_iter().map(Key::into_param));
            let marks: Vec<String> = (first..params.len() + 1).map(|i| format!("${i}")).collect();
            sql.push_str(&format!(" AND ({key}) > ({})", marks.join(", ")));
        }
        params.push(Box::new(i64::from(limit) + 1));
        sql.push_str(&format!(" ORDER BY {key} LIMIT ${}", params.len()));
        let rows = client.query(&sql, &refs(&params))?;
        let mut items = rows.iter().map(&mut map).collect::<Result<Vec<T>>>()?;
        let next_cursor = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|last| self.encode(key_of(last)))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    fn encode(&self, key: Vec<Key>) -> String {
        cursor_text(
            self.name,
            key.into_iter().map(|value| match value {
                Key::Int(i) => serde_json::Value::from(i),
                Key::Text(text) => serde_json::Value::from(text),
            }),
        )
    }

    fn decode(&self, cursor: &str) -> Result<Vec<Key>> {
        cursor_key(self.name, self.kinds.len(), cursor)?
            .into_iter()
            .zip(self.kinds)
            .map(|(value, kind)| match (kind, value) {
                (KeyKind::Text, serde_json::Value::String(text)) => Some(Key::Text(text)),
                (KeyKind::Int, other) => other.as_i64().map(Key::Int),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed_cursor(self.name))
    }
}

/// Reads column `index` of `row`; a stored value of another type is `CORRUPT`, never a panic.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, index: usize) -> Result<T> {
    row.try_get(index).map_err(|e| Error::Corrupt {
        message: format!("column {index}: {e}"),
    })
}

/// Borrows boxed parameters for a query.
pub(super) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref()).collect()
}
