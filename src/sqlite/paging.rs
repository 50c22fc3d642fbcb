//! Keyset paging, shared by every listing of the store: a page is the rows after the cursor's
//! position in the listing's order, `LIMIT n + 1` (the extra row tells whether another page
//! follows). A cursor is the ordering key of the page's last row, so it stays valid across
//! writes and a page costs the same wherever it starts, unlike an `OFFSET`.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, Row};

use crate::backend::paging::{cursor_key, cursor_text, malformed_cursor, page_limit};
use crate::error::Result;
use crate::model::{Page, PageRequest};

/// One listing's order.
pub(crate) struct Listing {
    /// Names the listing inside its cursors, so that one listing refuses another's cursor.
    pub name: &'static str,
    /// The ordering key, comma-separated SQL expressions, all ascending; together unique per
    /// row, so that "after the cursor" is exact.
    pub key: &'static str,
    /// How many expressions `key` has.
    pub key_len: usize,
}

impl Listing {
    /// Reads one page: `select` is a `SELECT ... WHERE <condition>` with `?` parameters
    /// bound from `params`; `map` reads an item from a row and `key_of` gives back the item's
    /// ordering key (the values of [`Listing::key`]) for the next cursor.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a limit of 0 or above [`MAX_PAGE_LIMIT`] (field `page.limit`)
    /// or a cursor this listing did not return (field `page.cursor`); otherwise what `map`
    /// returns.
    pub fn read<T>(
        &self,
        conn: &Connection,
        select: &str,
        mut params: Vec<SqlValue>,
        page: &PageRequest,
        mut map: impl FnMut(&Row<'_>) -> Result<T>,
        key_of: impl Fn(&T) -> Vec<SqlValue>,
    ) -> Result<Page<T>> {
        let limit = page_limit(page)?;
        let key = &self.key;
        let sql = match &page.cursor {
            Some(cursor) => {
                params.extend(self.decode(cursor)?);
                let marks = vec!["?"; self.key_len].join(", ");
                format!("{select} AND ({key}) > ({marks}) ORDER BY {key} LIMIT ?")
            }
            None => format!("{select} ORDER BY {key} LIMIT ?"),
        };
        params.push(SqlValue::Integer(i64::from(limit) + 1));
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(params_from_iter(&params))?;
        let mut items = Vec::new();
        while let Some(row) = rows.next()? {
            items.push(map(row)?);
        }
        let next_cursor = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|last| self.encode(key_of(last)))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    fn encode(&self, key: Vec<SqlValue>) -> String {
        cursor_text(
            self.name,
            key.into_iter().map(|value| match value {
                SqlValue::Integer(i) => serde_json::Value::from(i),
                SqlValue::Text(text) => serde_json::Value::from(text),
                // Keys are integers and text only; anything else cannot be a key column here.
                other => serde_json::Value::from(format!("{other:?}")),
            }),
        )
    }

    fn decode(&self, cursor: &str) -> Result<Vec<SqlValue>> {
        cursor_key(self.name, self.key_len, cursor)?
            .into_iter()
            .map(|value| match value {
                serde_json::Value::String(text) => Some(SqlValue::Text(text)),
                other => other.as_i64().map(SqlValue::Integer),
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed_cursor(self.name))
    }
}

/// A text key value.
pub(crate) fn text(value: &str) -> SqlValue {
    SqlValue::Text(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: Listing = Listing {
        name: "things",
        key: "a, b",
        key_len: 2,
    };

    #[test]
    fn cursor_round_trips_and_refuses_others() {
        let cursor = LISTING.encode(vec![SqlValue::Integer(-5), text("wf/1 é\"")]);
        assert_eq!(
            LISTING.decode(&cursor).unwrap(),
            vec![SqlValue::Integer(-5), text("wf/1 é\"")]
        );
        let other = Listing {
            name: "others",
            ..LISTING
        }
        .encode(vec![SqlValue::Integer(1), text("x")]);
        let short = Listing {
            key_len: 1,
            ..LISTING
        }
        .encode(vec![SqlValue::Integer(1)]);
        for bad in [
            "",
            "zz",
            "abc",
            &cursor[..cursor.len() - 2],
            &other,
            &short,
            "5b2274686", // truncated hex of JSON
        ] {
            assert_eq!(LISTING.decode(bad).unwrap_err().code(), "INVALID_INPUT");
        }
    }
}
